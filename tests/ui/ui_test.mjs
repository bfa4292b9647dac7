// The dashboard in a real browser: Debian's Chromium, headless, driven by playwright-core
// (server/ui/package-lock.json). For every page: load it, check what it shows against the API,
// no console errors, no failed requests, an interaction that must change other views, and a
// screenshot. Load times are printed (the test never asserts wall-clock speed).
// Usage: node ui_test.mjs URL SHOT_DIR   (env: SWEEP_DONE, SWEEP_B, SWEEP_RUNNING, SWEEP_BIG; see e2e_ui.sh)
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const require = createRequire(process.env.PLAYWRIGHT_NODE_MODULES + '/');
const { chromium } = require('playwright-core');

const [base, shotDir] = process.argv.slice(2);
const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error('missing env ' + name);
  return v;
};
const sweepDone = env('SWEEP_DONE');
const sweepB = env('SWEEP_B');
const sweepRunning = env('SWEEP_RUNNING');
const sweepBig = env('SWEEP_BIG');
const LOAD_TIMEOUT = 120000;  // a loaded 2-core CI machine
fs.mkdirSync(shotDir, { recursive: true });

let failures = 0;
function check(cond, what) {
  if (cond) {
    console.log('ok   ' + what);
  } else {
    console.log('FAIL ' + what);
    failures++;
  }
}

async function getJson(p) {
  const r = await fetch(base + p);
  if (!r.ok) throw new Error(p + ' -> ' + r.status);
  return r.json();
}

const cfgText = (c) => Object.entries(c).map(([k, v]) => k + '=' + v).join(',');

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  // Root in a container has no user namespace for Chromium's sandbox.
  args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
});
const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
// Any request leaving the daemon is a failure: the UI must work offline.
await context.route((url) => !url.href.startsWith(base) && !url.href.startsWith('data:'), (route) => {
  console.log('FAIL request outside the daemon: ' + route.request().url());
  failures++;
  return route.abort();
});

const times = {};
async function open(name, urlPath) {
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push('console ' + m.type() + ': ' + m.text()); });
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('requestfailed', (r) => problems.push('request failed: ' + r.url() + ' ' + (r.failure() || {}).errorText));
  page.on('response', (r) => { if (r.status() >= 400) problems.push('HTTP ' + r.status() + ' ' + r.url()); });
  const t0 = Date.now();
  await page.goto(base + urlPath, { waitUntil: 'domcontentloaded', timeout: LOAD_TIMEOUT });
  await page.waitForSelector('body[data-ready="1"]', { timeout: LOAD_TIMEOUT });
  // Until every chart has finished rendering (progressive rendering of large series included).
  const drawn = await page.evaluate(() => window.bt.rendered());
  times[name] = { wall: Date.now() - t0, drawn, marks: await page.evaluate(() => window.bt.marks) };
  const error = await page.$('#error');
  check(error === null, name + ': no error shown' + (error ? ' (' + (await error.textContent()) + ')' : ''));
  return { page, problems };
}

async function finish(name, { page, problems }, shot) {
  await page.screenshot({ path: path.join(shotDir, shot), fullPage: true });
  check(problems.length === 0, name + ': no console errors and no failed requests' + (problems.length ? ':\n  ' + problems.join('\n  ') : ''));
  await page.close();
}

const chartData = (page, name, series = 0) =>
  page.evaluate(([n, s]) => JSON.stringify(window.bt.charts[n].getOption().series[s].data), [name, series]);

// ---- /ui/ -----------------------------------------------------------------------------------
{
  const p = await open('home', '/ui/');
  const tuned = (await getJson('/v1/tuned')).entries;
  const want = new Set(tuned.map((e) => [e.kernel, e.hardware, e.dtype, e.bucket, cfgText(e.config)].join('|')));
  const shown = new Set(await p.page.$$eval('td.cell', (tds) => tds.map((td) =>
    [td.dataset.kernel, td.dataset.hardware, td.dataset.dtype, td.dataset.bucket, td.dataset.config].join('|'))));
  check(want.size > 0 && want.size === shown.size && [...want].every((k) => shown.has(k)),
    `home: the winners matrix shows the ${want.size} configs of /v1/tuned (shown ${shown.size})`);
  const winners = (await getJson('/v1/winners')).entries;
  const overridden = winners.filter((w) => w.override !== null).length;
  const badges = await p.page.$$eval('td.cell .badge.override', (b) => b.length);
  check(overridden > 0 && badges === overridden, `home: ${overridden} override mark(s), as /v1/winners says (${badges} shown)`);
  const withSpeedup = winners.filter((w) => w.speedup !== null).length;
  check(withSpeedup > 0, `home: ${withSpeedup} row(s) with a speedup over the default config`);
  const sweeps = (await getJson('/v1/sweeps?limit=1000')).sweeps;
  const rows = await p.page.$$eval('#sweeps-table tr[data-sweep]', (trs) => trs.map((tr) => tr.dataset.sweep));
  check(rows.length === sweeps.length && sweeps.every((s) => rows.includes(String(s.id))),
    `home: the sweeps table lists the ${sweeps.length} sweeps of /v1/sweeps`);
  // Live: the running sweep's progress cell changes without a reload.
  const cell = `#sweeps-table tr[data-sweep="${sweepRunning}"] td:nth-child(7)`;
  const before = await p.page.textContent(cell);
  check(await p.page.textContent(`#sweeps-table tr[data-sweep="${sweepRunning}"] td:nth-child(6)`) === 'running',
    'home: sweep ' + sweepRunning + ' shows as running');
  const changed = await p.page.waitForFunction(([sel, old]) => document.querySelector(sel).textContent !== old,
    [cell, before], { timeout: LOAD_TIMEOUT, polling: 500 }).then(() => true, () => false);
  check(changed, `home: the running sweep's progress updates live (was "${before}", now "${await p.page.textContent(cell)}")`);
  await finish('home', p, 'ui-home.png');
}

// ---- /ui/sweeps/{id}: a finished real sweep ------------------------------------------------------
async function sweepPage(name, id, shot, query = '') {
  const p = await open(name, '/ui/sweeps/' + id + query);
  const best = await getJson('/v1/sweeps/' + id + '/best');
  const buckets = await p.page.$$eval('#bucket-table tr[data-bucket]', (trs) => trs.map((tr) => tr.dataset.bucket));
  check(buckets.length === best.buckets.length && best.buckets.every((b) => buckets.includes(b.bucket)),
    `${name}: the bucket table lists the ${best.buckets.length} bucket(s) of /v1/sweeps/${id}/best`);
  const land = await getJson('/v1/sweeps/' + id + '/landscape' + (query ? '?' + new URLSearchParams(query.slice(1)).toString() : ''));
  const passing = land.points.median_ns.filter((v) => v !== null).length;
  const count = Number(await p.page.getAttribute('#selection', 'data-count'));
  check(count === passing, `${name}: ${passing} passing configs plotted, as the landscape says (${count})`);
  const failedRows = await p.page.$$eval('#failed-table tr', (trs) => trs.length - 1);
  check(land.failed.length === 0 ? failedRows <= 0 : failedRows === Math.min(500, land.failed.length),
    `${name}: failed configs listed with their outcome (${land.failed.length})`);

  // Pick two other parameters: the heatmap changes.
  const params = land.params;
  const heat0 = await chartData(p.page, 'heatmap');
  if (params.length >= 3) {
    await p.page.selectOption('#param-x', params[2]);
    await p.page.selectOption('#param-y', params[1]);
    const heat1 = await chartData(p.page, 'heatmap');
    const xName = await p.page.evaluate(() => window.bt.charts.heatmap.getOption().xAxis[0].name);
    check(heat1 !== heat0 && xName === params[2], `${name}: picking ${params[2]} x ${params[1]} redraws the heatmap`);
    check(new URL(p.page.url()).searchParams.get('x') === params[2], `${name}: the picked parameters are in the URL`);
  }

  // Brush the parallel coordinates with the mouse: drag along the time axis (the last one, at
  // the right edge of the plot area; log scale, slowest at the top) from its top down to the
  // median time, keeping the slower half: the fastest config leaves every other view.
  const slices0 = await chartData(p.page, 'slices');
  const heatB0 = await chartData(p.page, 'heatmap');
  const best0 = await chartData(p.page, 'best');
  await (await p.page.$('#parallel')).scrollIntoViewIfNeeded();
  const box = await (await p.page.$('#parallel')).boundingBox();
  const [tmin, tmax] = await p.page.evaluate(() => {
    const axes = window.bt.charts.parallel.getOption().parallelAxis;
    return [axes[axes.length - 1].min, axes[axes.length - 1].max];
  });
  const times = land.points.median_ns.filter((v) => v !== null).sort((u, v) => u - v);
  const mid = times[Math.floor(times.length / 2)];
  const right = 90, top = 40, bottom = 30;  // the page's parallel grid (sweep.js)
  const x = box.x + box.width - right;
  const axisY = (v) => box.y + top + ((Math.log(tmax) - Math.log(v)) / (Math.log(tmax) - Math.log(tmin))) * (box.height - top - bottom);
  const y0 = box.y + top + 2;
  const y1 = axisY(mid);
  await p.page.mouse.move(x, y0);
  await p.page.mouse.down();
  await p.page.mouse.move(x, (y0 + y1) / 2, { steps: 5 });
  await p.page.mouse.move(x, y1, { steps: 5 });
  await p.page.mouse.up();
  const brushed = await p.page.waitForFunction((all) => Number(document.querySelector('#selection').dataset.count) < all,
    count, { timeout: 20000 }).then(() => true, () => false);
  const after = Number(await p.page.getAttribute('#selection', 'data-count'));
  check(brushed && after > 0, `${name}: brushing the time axis keeps ${after} of ${count} configs`);
  check((await chartData(p.page, 'slices')) !== slices0, `${name}: the brush filters the slice plots`);
  check((await chartData(p.page, 'heatmap')) !== heatB0, `${name}: the brush filters the heatmap`);
  check((await chartData(p.page, 'best', 0)) !== best0, `${name}: the brush filters best-so-far`);
  await finish(name, p, shot);
}

await sweepPage('sweep', sweepDone, 'ui-sweep.png');

// ---- /ui/sweeps/{id}: the running one ------------------------------------------------------------
{
  const p = await open('sweep-running', '/ui/sweeps/' + sweepRunning);
  const status = await p.page.textContent('#sweep-status');
  const s = await getJson('/v1/sweeps/' + sweepRunning);
  check(status.startsWith('running') && s.status === 'running', 'sweep-running: shows running, as the API says');
  const before = await p.page.textContent('#sweep-progress');
  const changed = await p.page.waitForFunction((old) => document.querySelector('#sweep-progress').textContent !== old,
    before, { timeout: LOAD_TIMEOUT, polling: 500 }).then(() => true, () => false);
  check(changed, `sweep-running: progress updates live (was ${before}, now ${await p.page.textContent('#sweep-progress')})`);
  await finish('sweep-running', p, 'ui-sweep-running.png');
}

// ---- /ui/sweeps/{id}: 20,000 measurements --------------------------------------------------------
await sweepPage('sweep-20k', sweepBig, 'ui-sweep-20k.png');

// ---- /ui/kernels/{kernel} ------------------------------------------------------------------------
{
  const p = await open('kernel', '/ui/kernels/matmul');
  const k = await getJson('/v1/kernels/matmul');
  const tuned = (await getJson('/v1/tuned?kernel=matmul')).entries;
  const params = await p.page.$$eval('#params tr', (t) => t.length - 1);
  check(params === k.params.length, `kernel: ${k.params.length} parameters listed`);
  const rows = await p.page.$$eval('#tuned-rows tr[data-config]', (t) => t.map((tr) => tr.dataset.config).sort());
  const want = tuned.map((e) => cfgText(e.config)).sort();
  check(JSON.stringify(rows) === JSON.stringify(want), `kernel: the ${want.length} tuned rows of /v1/tuned?kernel=matmul`);
  await finish('kernel', p, 'ui-kernel.png');
}

// ---- /ui/tuned/...: a row of this database, with an override -------------------------------------
{
  const winners = (await getJson('/v1/winners?kernel=matmul')).entries.filter((w) => w.from_database);
  const w = winners.find((x) => x.override !== null) || winners[0];
  const url = '/ui/tuned/' + [w.kernel, w.dtype, w.hardware, w.bucket].map(encodeURIComponent).join('/');
  const p = await open('tuned', url);
  check((await p.page.textContent('#tuned-config')) === cfgText(w.config), `tuned: shows the row's config ${cfgText(w.config)}`);
  const x = await getJson('/v1/tuned/explain?' + new URLSearchParams({ kernel: w.kernel, hardware: w.hardware, dtype: w.dtype, bucket: w.bucket }));
  const ranked = await p.page.$$eval('#ranked tr', (t) => t.length - 1);
  check(ranked === x.ranked.length && ranked > 0, `tuned: the ${x.ranked.length} measurements behind the choice`);
  const samples = await p.page.evaluate(() => window.bt.charts.samples.getOption().series[1].data.length);
  check(samples === x.ranked.reduce((n, r) => n + r.samples_ns.length, 0) && samples > 0, `tuned: ${samples} samples drawn as a distribution`);
  const override = await p.page.textContent('#override');
  check(w.override ? override.includes(cfgText(w.override.config)) : override.includes('None'), 'tuned: the override, as /v1/winners says');
  await finish('tuned', p, 'ui-tuned.png');
}

// ---- /ui/compare -----------------------------------------------------------------------------------
{
  const p = await open('compare-sweeps', `/ui/compare?a=${sweepDone}&b=${sweepB}`);
  const [a, b] = await Promise.all([getJson(`/v1/sweeps/${sweepDone}/best`), getJson(`/v1/sweeps/${sweepB}/best`)]);
  const want = new Set([...a.buckets, ...b.buckets].map((x) => x.bucket));
  const rows = await p.page.$$eval('#compare-table tr[data-bucket]', (t) => t.map((tr) => tr.dataset.bucket));
  check(rows.length === want.size && rows.every((r) => want.has(r)), `compare-sweeps: ${want.size} bucket(s) side by side`);
  // Picking two hardware profiles in the form reloads the page with them.
  const hws = [...new Set((await getJson('/v1/tuned')).entries.map((e) => e.hardware))].sort();
  await p.page.selectOption('select[name=hw_a]', hws[0]);
  await p.page.selectOption('select[name=hw_b]', hws[1]);
  await p.page.click('form:nth-of-type(2) button', { noWaitAfter: true });
  await p.page.waitForURL(/hw_a=/, { timeout: LOAD_TIMEOUT, waitUntil: 'domcontentloaded' });
  await p.page.waitForSelector('body[data-ready="1"]', { timeout: LOAD_TIMEOUT });
  const hwRows = await p.page.$$eval('#compare-table tr[data-bucket]', (t) => t.length);
  check(hwRows > 0, `compare-hardware: ${hws[0]} vs ${hws[1]}: ${hwRows} bucket(s)`);
  await finish('compare', p, 'ui-compare.png');
}

// ---- an unknown page and the assets' headers -------------------------------------------------------
{
  const r = await fetch(base + '/ui/assets/echarts.min.js');
  check(r.ok && (r.headers.get('content-type') || '').startsWith('application/javascript'), 'echarts.min.js is served from the binary');
  const lic = await fetch(base + '/ui/assets/echarts-LICENSE.txt');
  check(lic.ok && (await lic.text()).includes('Apache License'), "ECharts' licence is served");
  const page = await fetch(base + '/ui/');
  check((page.headers.get('content-security-policy') || '').includes("default-src 'none'"), 'pages carry a Content-Security-Policy');
}

await browser.close();
console.log('load times in ms: page drawn (navigation start to every chart rendered, browser clock) / wall (goto to drawn, test clock); marks');
for (const [k, v] of Object.entries(times)) console.log(`  ${k.padEnd(14)} ${String(v.drawn).padStart(6)} / ${String(v.wall).padStart(6)}  ${JSON.stringify(v.marks)}`);
if (failures) {
  console.log(failures + ' check(s) failed');
  process.exit(1);
}
console.log('all checks passed');
