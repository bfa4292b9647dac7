// Page load times of the dashboard in Debian's Chromium, headless: each page loaded N times,
// pages interleaved, in one fresh browser; prints per page the median and range of the time
// from navigation start to every chart rendered (bt.rendered(), the browser's clock) and the
// median of the page's marks (server/ui/common.js's mark(), called by the page modules: data
// fetched, charts set, charts drawn).
// Not a test (nothing asserted): docs/performance.md#dashboard quotes it.
// Usage: PLAYWRIGHT_NODE_MODULES=build/ui/npm/node_modules node tests/ui/load_times.mjs URL N PATH...
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.resolve(process.env.PLAYWRIGHT_NODE_MODULES) + '/');
const { chromium } = require('playwright-core');
const [base, n, ...paths] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
const runs = Object.fromEntries(paths.map((p) => [p, []]));
await page.goto(base + paths[0]);  // warm: the browser's own start-up is not the page's
await page.waitForSelector('body[data-ready="1"]', { timeout: 120000 });
for (let i = 0; i < Number(n); ++i) {
  for (const p of paths) {
    await page.goto(base + p, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('body[data-ready="1"]', { timeout: 120000 });
    const drawn = await page.evaluate(() => window.bt.rendered());
    runs[p].push({ drawn, marks: await page.evaluate(() => window.bt.marks) });
  }
}
await browser.close();
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
for (const [p, rs] of Object.entries(runs)) {
  const d = rs.map((r) => r.drawn);
  const keys = Object.keys(rs[0].marks);
  const marks = keys.map((k) => k + ' ' + median(rs.map((r) => r.marks[k] ?? NaN))).join(', ');
  console.log(`${p}: drawn ${median(d)} ms (median of ${d.length}, ${Math.min(...d)}-${Math.max(...d)}); marks: ${marks}`);
}
