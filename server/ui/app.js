// The blocktune dashboard: one script that draws the page the URL names from the daemon's
// read-only API (GET /v1/...). No framework, no network beyond this daemon (the page's
// Content-Security-Policy allows nothing else); charts are Apache ECharts, served from the binary.
// Pages: /ui/ (sweeps, winners matrix), /ui/sweeps/{id}, /ui/kernels/{kernel},
// /ui/tuned/{kernel}/{dtype}/{hardware}/{bucket}, /ui/compare.
// When a page has drawn its data it sets <body data-ready="1"> (the browser test waits on it).
'use strict';

const bt = (window.bt = { charts: {}, state: {}, timers: [], marks: {} });
// Milliseconds since navigation at named points of drawing a page (the browser test prints them).
const mark = (name) => { bt.marks[name] = Math.round(performance.now()); };
const POLL_MS = 2000;

// ---- helpers -------------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k.startsWith('data')) el.setAttribute(k.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase()), v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

async function api(path) {
  const r = await fetch(path, { headers: { Accept: 'application/json' } });
  const body = await r.json();
  if (!r.ok) throw new Error((body.error && body.error.message) || r.status + ' ' + path);
  return body;
}

function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') p.set(k, v);
  const s = p.toString();
  return s ? '?' + s : '';
}

function fmtNs(ns) {
  if (ns === null || ns === undefined) return '–';
  // Four significant digits at most, no trailing zeros: 19.53 ms, 100 ms, 6.66 µs.
  const fmt = (v, unit) => Number(v.toPrecision(4)) + ' ' + unit;
  if (ns >= 1e9) return fmt(ns / 1e9, 's');
  if (ns >= 1e6) return fmt(ns / 1e6, 'ms');
  if (ns >= 1e3) return fmt(ns / 1e3, 'µs');
  return fmt(ns, 'ns');
}

function fmtAge(s) {
  if (s === null || s === undefined) return '–';
  if (s < 90) return Math.round(s) + ' s';
  if (s < 5400) return Math.round(s / 60) + ' min';
  if (s < 172800) return Math.round(s / 3600) + ' h';
  return Math.round(s / 86400) + ' d';
}

function fmtEta(s) {
  return s === null || s === undefined ? '–' : fmtAge(s);
}

// "block_m=96,block_n=512": the canonical spelling the CLI and the tables use.
function cfgText(c) {
  return c ? Object.entries(c).map(([k, v]) => k + '=' + v).join(',') : '–';
}

function progressBar(done, total) {
  const pct = total > 0 ? Math.min(100, (100 * done) / total) : 0;
  return h('span', { class: 'bar', title: done + ' / ' + total }, h('span', { style: 'width:' + pct.toFixed(1) + '%' }));
}

function tuneUrl(e) {
  return '/ui/tuned/' + [e.kernel, e.dtype, e.hardware, e.bucket].map(encodeURIComponent).join('/');
}

function chart(el, name) {
  const c = echarts.init(el, null, { renderer: 'canvas' });
  c.done = true;
  c.on('finished', () => {
    if (!c.done) mark('drawn ' + name);
    c.done = true;
  });
  bt.charts[name] = c;
  return c;
}

// setOption, remembering that the chart has not finished rendering it yet (see bt.rendered).
function draw(c, opt, notMerge) {
  c.done = false;
  c.setOption(opt, notMerge);
}

// Resolves once every chart has finished rendering its last option (progressive rendering
// of large series included): what "the page has drawn" means for the load-time figures.
bt.rendered = () => new Promise((resolve) => {
  const check = () => (Object.values(bt.charts).every((c) => c.done) ? resolve(Math.round(performance.now())) : setTimeout(check, 10));
  check();
});

function ready() {
  mark('ready');
  document.body.dataset.ready = '1';
}

function live(on) {
  document.getElementById('live').textContent = on ? '● live (polling every 2 s)' : '';
}

function poll(fn) {
  const t = setTimeout(async () => {
    try {
      await fn();
    } catch (e) {
      showError(e);
    }
  }, POLL_MS);
  bt.timers.push(t);
}

function showError(e) {
  const main = document.getElementById('main');
  main.prepend(h('p', { class: 'bad', id: 'error' }, String(e.message || e)));
}

function median(a) {
  const s = [...a].sort((x, y) => x - y);
  const n = s.length;
  return n ? (n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2) : NaN;
}

function quantile(sorted, q) {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

// ---- /ui/ : sweeps and the winners matrix --------------------------------------------------

async function allSweeps() {
  let after = 0;
  const out = [];
  for (let page = 0; page < 20; ++page) {
    const r = await api('/v1/sweeps' + qs({ after_id: after, limit: 1000 }));
    out.push(...r.sweeps);
    if (r.next_after_id === null) break;
    after = r.next_after_id;
  }
  return out;
}

async function pageHome(main) {
  main.replaceChildren(
    h('h1', {}, 'Sweeps'),
    h('div', { id: 'sweeps' }, h('p', { class: 'muted' }, 'loading…')),
    h('h1', {}, 'Winners'),
    h('p', { class: 'muted' },
      'Each cell: the config lookups serve for a bucket (row) on a hardware profile (column), its speedup over the ',
      "kernel's default config in the same sweep, samples, age; marks: ",
      h('span', { class: 'badge stale' }, 'stale'), ' (older bucketing, or measured over 90 days ago), ',
      h('span', { class: 'badge override' }, 'override'), ' (a pinned config wins over it), ',
      h('span', { class: 'badge checked' }, 'checked-in'), " (the table's row, measured elsewhere)."),
    h('div', { id: 'winners' }, h('p', { class: 'muted' }, 'loading…')),
  );
  const drawSweeps = async () => {
    const sweeps = (await allSweeps()).reverse();  // newest first
    const detailed = await Promise.all(sweeps.slice(0, 50).map((s) => api('/v1/sweeps/' + s.id)));
    const rows = sweeps.map((s, i) => {
      const d = detailed[i] || s;
      const by = (d.progress && d.progress.by_outcome) || {};
      return h('tr', { dataSweep: s.id, dataStatus: d.status },
        h('td', {}, h('a', { href: '/ui/sweeps/' + s.id }, '#' + s.id)),
        h('td', {}, s.kernel), h('td', {}, s.dtype), h('td', {}, s.strategy), h('td', { class: 'mono' }, s.hardware),
        h('td', { class: d.status === 'failed' ? 'bad' : '' }, d.status),
        h('td', {}, progressBar(d.progress.done, d.progress.total), ' ', d.progress.done + ' / ' + d.progress.total),
        h('td', { class: 'num' }, d.status === 'running' ? fmtEta(d.eta_seconds) : '–'),
        h('td', { class: 'mono' }, Object.entries(by).map(([k, v]) => k + ' ' + v).join(', ') || '–'),
        h('td', { class: 'num', dataEfficiency: '' }, d.breakdown ? d.breakdown.efficiency.toFixed(2) : '–'),
        h('td', { class: 'mono' }, s.created_at));
    });
    document.getElementById('sweeps').replaceChildren(
      sweeps.length === 0
        ? h('p', { class: 'muted' }, 'No sweeps yet: blocktune sweep KERNEL --shape ...')
        : h('table', { id: 'sweeps-table' },
          h('tr', {}, ['sweep', 'kernel', 'dtype', 'strategy', 'hardware', 'status', 'progress', 'ETA', 'outcomes', 'efficiency', 'created']
            .map((t) => h('th', {}, t))),
          rows));
    const running = sweeps.some((s) => s.status === 'running' || s.status === 'queued');
    live(running);
    return running;
  };
  const drawWinners = async () => {
    const { entries } = await api('/v1/winners');
    const el = document.getElementById('winners');
    const kernels = [...new Set(entries.map((e) => e.kernel))].sort();
    const parts = [];
    for (const k of kernels) {
      const rows = entries.filter((e) => e.kernel === k);
      const hws = [...new Set(rows.map((e) => e.hardware))].sort();
      const keys = [...new Set(rows.map((e) => e.dtype + '\u0000' + e.bucket))].sort();
      const byCell = new Map(rows.map((e) => [e.dtype + '\u0000' + e.bucket + '\u0000' + e.hardware, e]));
      parts.push(h('h2', {}, h('a', { href: '/ui/kernels/' + k }, k), ' ', h('span', { class: 'muted' }, rows.length + ' rows')));
      parts.push(h('div', { class: 'scroll' }, h('table', { class: 'winners', dataKernel: k },
        h('tr', {}, h('th', {}, 'dtype'), h('th', {}, 'bucket'), hws.map((hw) => h('th', { class: 'mono' }, hw))),
        keys.map((key) => {
          const [dtype, bucket] = key.split('\u0000');
          return h('tr', {}, h('td', {}, dtype), h('td', { class: 'mono' }, bucket), hws.map((hw) => {
            const e = byCell.get(key + '\u0000' + hw);
            if (!e) return h('td', { class: 'muted' }, '·');
            return h('td', {
              class: 'cell', dataKernel: e.kernel, dataHardware: e.hardware, dataDtype: e.dtype, dataBucket: e.bucket,
              dataConfig: cfgText(e.config),
            },
            h('a', { class: 'cfg', href: tuneUrl(e) }, cfgText(e.config)), h('br'),
            e.speedup !== null ? h('b', { title: 'default ' + fmtNs(e.default_median_ns) }, '×' + e.speedup.toFixed(2)) : h('span', { class: 'muted', title: 'default config not measured in this sweep' }, '×?'),
            ' ', fmtNs(e.median_ns), ' · ', e.samples + ' samples · ', fmtAge(e.age_seconds),
            e.stale ? h('span', { class: 'badge stale', title: e.stale_reason }, 'stale') : null,
            e.override ? h('span', { class: 'badge override', title: cfgText(e.override.config) + ': ' + e.override.reason }, 'override') : null,
            e.from_database ? null : h('span', { class: 'badge checked' }, 'checked-in'));
          }));
        }))));
    }
    el.replaceChildren(...(parts.length ? parts : [h('p', { class: 'muted' }, 'No tuned rows.')]));
  };
  const tick = async () => {
    const running = await drawSweeps();
    if (running) poll(tick);
  };
  await Promise.all([tick(), drawWinners()]);
  ready();
}

// ---- /ui/sweeps/{id} ------------------------------------------------------------------------

// "efficiency 0.82: 30.1 s timed of 36.7 s wall; calibrate 2.0 s, ..." from the Breakdown
// schema: every *_s phase except the totals, largest first.
function breakdownText(b) {
  if (!b) return '–';
  const totals = new Set(['wall_s', 'timed_s', 'decision_round_s']);
  const phases = Object.entries(b).filter(([k, v]) => k.endsWith('_s') && !totals.has(k) && v > 0)
    .sort((x, y) => y[1] - x[1]).map(([k, v]) => k.slice(0, -2) + ' ' + v.toFixed(1) + ' s');
  return 'efficiency ' + b.efficiency.toFixed(2) + ': ' + b.timed_s.toFixed(1) + ' s timed of ' + b.wall_s.toFixed(1) +
    ' s wall' + (phases.length ? '; ' + phases.join(', ') : '') + '; decision rounds ' + b.decision_round_s.toFixed(1) + ' s';
}

function sortedDistinct(values) {
  return [...new Set(values.filter((v) => v !== null))].sort((a, b) => a - b);
}

async function pageSweep(main, id) {
  const url = new URL(location.href);
  const st = (bt.state = { id, bucket: url.searchParams.get('bucket') || '', x: url.searchParams.get('x') || '',
    y: url.searchParams.get('y') || '', brush: {}, land: null });
  main.replaceChildren(
    h('h1', {}, 'Sweep #' + id),
    h('div', { id: 'sweep-head' }),
    h('h2', {}, 'Buckets'),
    h('div', { id: 'buckets' }),
    h('div', { class: 'controls' },
      h('label', {}, 'bucket ', h('select', { id: 'bucket' })),
      h('label', {}, 'heatmap x ', h('select', { id: 'param-x' })),
      h('label', {}, 'y ', h('select', { id: 'param-y' })),
      h('span', { id: 'selection', class: 'muted' })),
    h('div', { class: 'grid' },
      h('div', { class: 'panel' }, h('b', {}, 'Best so far'), h('div', { id: 'best-evals', class: 'chart' })),
      h('div', { class: 'panel' }, h('b', {}, 'Landscape '), h('span', { class: 'muted', id: 'heat-title' }),
        h('div', { id: 'heatmap', class: 'chart' }))),
    h('div', { class: 'panel' }, h('b', {}, 'Parallel coordinates '),
      h('span', { class: 'muted' }, '(drag along an axis to brush; the other views show only the brushed configs) '),
      h('span', { class: 'muted', id: 'parallel-note' }),
      h('div', { id: 'parallel', class: 'chart tall' })),
    h('div', { class: 'panel' }, h('b', {}, 'Slices: time against each parameter '), h('span', { class: 'muted', id: 'slices-note' }),
      h('div', { id: 'slices', class: 'chart' })),
    h('div', { class: 'grid' },
      h('div', { class: 'panel' }, h('b', {}, 'Decision round'), h('div', { id: 'decision' })),
      h('div', { class: 'panel' }, h('b', {}, 'Failed configs'), h('div', { id: 'failed', class: 'scroll' }))),
  );
  const charts = {
    best: chart(document.getElementById('best-evals'), 'best'),
    heat: chart(document.getElementById('heatmap'), 'heatmap'),
    par: chart(document.getElementById('parallel'), 'parallel'),
    slices: chart(document.getElementById('slices'), 'slices'),
  };
  charts.par.on('axisareaselected', (ev) => {
    // The intervals the user brushed on one axis (ids are "axis<dim>"); none: that axis is unbrushed.
    const dim = Number(String(ev.parallelAxisId).replace(/^axis/, ''));
    if (ev.intervals && ev.intervals.length) st.brush[dim] = ev.intervals.map((iv) => [iv[0], iv[1]]);
    else delete st.brush[dim];
    drawFiltered();
  });
  document.getElementById('bucket').addEventListener('change', (ev) => {
    st.bucket = ev.target.value;
    st.brush = {};
    syncUrl();
    loadBucket(true);
  });
  for (const axis of ['x', 'y']) {
    document.getElementById('param-' + axis).addEventListener('change', (ev) => {
      st[axis] = ev.target.value;
      syncUrl();
      drawFiltered();
    });
  }
  function syncUrl() {
    const u = new URL(location.href);
    for (const k of ['bucket', 'x', 'y']) {
      if (st[k]) u.searchParams.set(k, st[k]);
      else u.searchParams.delete(k);
    }
    history.replaceState(null, '', u);
  }

  async function drawHead() {
    const [s, best] = await Promise.all([api('/v1/sweeps/' + id), api('/v1/sweeps/' + id + '/best')]);
    st.sweep = s;
    const env = s.environment;
    document.getElementById('sweep-head').replaceChildren(h('dl', { class: 'kv' },
      h('dt', {}, 'kernel'), h('dd', {}, h('a', { href: '/ui/kernels/' + s.kernel }, s.kernel), ' ', s.dtype, ', ', s.threads + ' thread(s)'),
      h('dt', {}, 'hardware'), h('dd', {}, s.hardware),
      h('dt', {}, 'strategy'), h('dd', {}, s.strategy + (s.budget ? ', budget ' + s.budget : '')),
      h('dt', {}, 'status'), h('dd', { id: 'sweep-status' }, s.status + (s.error ? ': ' + s.error : '')),
      h('dt', {}, 'progress'), h('dd', {}, progressBar(s.progress.done, s.progress.total), ' ',
        h('span', { id: 'sweep-progress' }, s.progress.done + ' / ' + s.progress.total),
        ', buckets ' + s.progress.tasks_done + ' / ' + s.progress.tasks_total + ', ETA ' + fmtEta(s.eta_seconds)),
      h('dt', {}, 'outcomes'), h('dd', {}, Object.entries(s.progress.by_outcome).map(([k, v]) => k + ' ' + v).join(', ') || '–'),
      h('dt', {}, 'environment'), h('dd', {}, 'load ' + (env.load_average || '–') + '; CPUs ' + (env.affinity || '–') +
        '; governor ' + (env.governor || '–') + '; ' + env.compiler + ' ' + env.build_flags + '; blocktune ' + env.tool_version),
      h('dt', {}, 'time'), h('dd', { id: 'sweep-breakdown' }, breakdownText(s.breakdown)),
      h('dt', {}, 'created'), h('dd', {}, s.created_at + (s.finished_at ? ', finished ' + s.finished_at : ''))));
    document.getElementById('buckets').replaceChildren(h('table', { id: 'bucket-table' },
      h('tr', {}, ['bucket', 'status', 'measured', 'passed', 'best config', 'best', 'default', 'speedup', 'chosen']
        .map((t) => h('th', {}, t))),
      best.buckets.map((b) => h('tr', { dataBucket: b.bucket },
        h('td', { class: 'mono' }, b.bucket), h('td', {}, b.status),
        h('td', { class: 'num' }, b.measured + ' / ' + b.planned), h('td', { class: 'num' }, b.ok),
        h('td', { class: 'mono' }, cfgText(b.best_config)), h('td', { class: 'num' }, fmtNs(b.best_median_ns)),
        h('td', { class: 'num' }, fmtNs(b.default_median_ns)),
        h('td', { class: 'num' }, b.default_median_ns && b.best_median_ns ? '×' + (b.default_median_ns / b.best_median_ns).toFixed(2) : '–'),
        h('td', { class: 'mono' }, cfgText(b.chosen))))));
    return s.status === 'running' || s.status === 'queued';
  }

  async function loadBucket(fresh) {
    const land = await (prefetched || api('/v1/sweeps/' + id + '/landscape' + qs({ bucket: st.bucket })));
    prefetched = null;
    mark('landscape');
    const grew = !st.land || st.land.points.id.length !== land.points.id.length || land.bucket !== st.land.bucket;
    st.land = land;
    st.bucket = land.bucket;
    const sel = document.getElementById('bucket');
    if (fresh || sel.options.length !== land.buckets.length) {
      sel.replaceChildren(...land.buckets.map((b) => h('option', { value: b.bucket }, b.bucket + ' (' + b.status + ')')));
    }
    sel.value = land.bucket;
    const params = land.params.filter((p) => sortedDistinct(land.points.columns[p]).length > 0);
    if (!params.includes(st.x)) st.x = params[0] || '';
    if (!params.includes(st.y) || st.y === st.x) st.y = params.find((p) => p !== st.x) || st.x;
    for (const axis of ['x', 'y']) {
      const s = document.getElementById('param-' + axis);
      if (fresh || s.options.length !== params.length) s.replaceChildren(...params.map((p) => h('option', { value: p }, p)));
      s.value = st[axis];
    }
    if (grew || fresh) {
      drawParallel();
      mark('parallel');
      drawFiltered();
      mark('filtered');
    }
    drawDecision();
    drawFailed();
  }

  // The passing points as rows: [param values..., median_ns, index into points].
  function okRows() {
    const p = st.land.points;
    const rows = [];
    for (let i = 0; i < p.id.length; ++i) {
      if (p.median_ns[i] === null) continue;
      rows.push([...st.land.params.map((name) => p.columns[name][i]), p.median_ns[i], i]);
    }
    return rows;
  }

  // At most `cap` rows to draw: every k-th (in measurement order) plus the fastest 100, so a
  // 20,000-config bucket draws in a fraction of the time and still shows its shape and its best.
  // Brushing and every count use all the rows; only the drawing is thinned.
  const DRAW_CAP = 4000;
  function thin(rows, cap, np) {
    if (rows.length <= cap) return rows;
    const step = Math.ceil(rows.length / cap);
    const fastest = new Set([...rows].sort((a, b) => a[np] - b[np]).slice(0, 100));
    return rows.filter((r, i) => i % step === 0 || fastest.has(r));
  }

  function inBrush(row) {
    for (const [dim, ivs] of Object.entries(st.brush)) {
      const v = row[Number(dim)];
      if (!ivs.some(([lo, hi]) => v >= Math.min(lo, hi) && v <= Math.max(lo, hi))) return false;
    }
    return true;
  }

  function drawParallel() {
    const land = st.land;
    const rows = okRows();
    const drawn = thin(rows, DRAW_CAP, land.params.length);
    document.getElementById('parallel-note').textContent = drawn.length < rows.length
      ? '(drawn: ' + drawn.length + ' of ' + rows.length + ' configs, every ' + Math.ceil(rows.length / DRAW_CAP) + 'th and the fastest 100; the brush selects among all)' : '';
    const dims = land.params.map((p, i) => ({ id: 'axis' + i, dim: i, name: p, type: 'log', logBase: 2, nameLocation: 'end',
      min: Math.max(1, Math.min(...rows.map((r) => r[i]))), max: Math.max(1, ...rows.map((r) => r[i])) }));
    const times = rows.map((r) => r[land.params.length]);
    dims.push({ id: 'axis' + land.params.length, dim: land.params.length, name: 'median time', type: 'log', nameLocation: 'end',
      min: times.length ? Math.min(...times) / 1.05 : 1, max: times.length ? Math.max(...times) * 1.05 : 10,
      axisLabel: { formatter: (v) => fmtNs(v) } });
    draw(charts.par, {
      animation: false,
      parallel: { left: 60, right: 90, top: 40, bottom: 30, parallelAxisDefault: { nameTextStyle: { fontSize: 12 } } },
      parallelAxis: dims,
      visualMap: { show: false, dimension: land.params.length, type: 'continuous', inRange: { color: ['#1a9850', '#fee08b', '#d73027'] },
        min: rows.length ? Math.min(...rows.map((r) => r[land.params.length])) : 0,
        max: rows.length ? Math.max(...rows.map((r) => r[land.params.length])) : 1 },
      series: [{ type: 'parallel', lineStyle: { width: 1, opacity: drawn.length > 2000 ? 0.2 : 0.45 }, data: drawn,
        inactiveOpacity: 0.02, activeOpacity: 1, progressive: 2000, smooth: false }],
    }, true);
  }

  function drawFiltered() {
    const land = st.land;
    const all = okRows();
    const rows = all.filter(inBrush);
    const np = land.params.length;
    const brushed = Object.keys(st.brush).length > 0;
    document.getElementById('selection').textContent = brushed
      ? rows.length + ' of ' + all.length + ' passing configs brushed'
      : all.length + ' passing configs (of ' + land.points.id.length + ' measured)';
    document.getElementById('selection').dataset.count = String(rows.length);

    // Best so far, against evaluations and against time: every measurement in order, the brushed ones.
    const p = land.points;
    // A step line: only the points where the best improves, and the last evaluation.
    let best = Infinity;
    const byEval = [];
    const byTime = [];
    const keep = new Set(rows.map((r) => r[np + 1]));
    for (let i = 0; i < p.id.length; ++i) {
      const improves = p.median_ns[i] !== null && keep.has(i) && p.median_ns[i] < best;
      if (improves) best = p.median_ns[i];
      if (best < Infinity && (improves || i === p.id.length - 1)) {
        byEval.push([i + 1, best]);
        byTime.push([p.t_s[i], best]);
      }
    }
    draw(charts.best, {
      animation: false,
      tooltip: { trigger: 'axis' },
      legend: { data: ['vs evaluations', 'vs seconds'], top: 0 },
      grid: [{ left: 70, right: '55%', top: 30, bottom: 40 }, { left: '55%', right: 20, top: 30, bottom: 40 }],
      xAxis: [{ gridIndex: 0, type: 'value', name: 'evaluations', nameLocation: 'middle', nameGap: 25, min: 1 },
        { gridIndex: 1, type: 'value', name: 'seconds', nameLocation: 'middle', nameGap: 25, min: 0 }],
      yAxis: [{ gridIndex: 0, type: 'log', name: 'best ns', axisLabel: { formatter: (v) => fmtNs(v) } },
        { gridIndex: 1, type: 'log', axisLabel: { formatter: (v) => fmtNs(v) } }],
      series: [{ name: 'vs evaluations', type: 'line', step: 'end', showSymbol: false, data: byEval, xAxisIndex: 0, yAxisIndex: 0 },
        { name: 'vs seconds', type: 'line', step: 'end', showSymbol: false, data: byTime, xAxisIndex: 1, yAxisIndex: 1 }],
    }, true);

    // The landscape: best time over the other parameters for each (x, y), coloured by rank.
    const xi = land.params.indexOf(st.x);
    const yi = land.params.indexOf(st.y);
    const xs = sortedDistinct(all.map((r) => r[xi]));
    const ys = sortedDistinct(all.map((r) => r[yi]));
    const cellBest = new Map();
    for (const r of rows) {
      const key = r[xi] + ',' + r[yi];
      if (!cellBest.has(key) || r[np] < cellBest.get(key)) cellBest.set(key, r[np]);
    }
    const ranked = [...cellBest.entries()].sort((a, b) => a[1] - b[1]);
    const heat = ranked.map(([key, ns], rank) => {
      const [x, y] = key.split(',').map(Number);
      return [xs.indexOf(x), ys.indexOf(y), rank + 1, ns];
    });
    document.getElementById('heat-title').textContent = '(' + st.y + ' against ' + st.x +
      ': best over the other parameters, coloured by rank; axes are the candidate values, log-spaced)';
    draw(charts.heat, {
      animation: false,
      tooltip: { formatter: (q) => st.x + '=' + xs[q.data[0]] + ', ' + st.y + '=' + ys[q.data[1]] + ': ' + fmtNs(q.data[3]) + ' (rank ' + q.data[2] + ')' },
      grid: { left: 70, right: 90, top: 10, bottom: 50 },
      xAxis: { type: 'category', data: xs.map(String), name: st.x, nameLocation: 'middle', nameGap: 30 },
      yAxis: { type: 'category', data: ys.map(String), name: st.y },
      visualMap: { type: 'continuous', dimension: 2, min: 1, max: Math.max(2, heat.length), calculable: false, right: 0, top: 'middle',
        text: ['rank ' + Math.max(2, heat.length), 'rank 1'], inRange: { color: ['#1a9850', '#fee08b', '#d73027'] } },
      series: [{ name: 'landscape', type: 'heatmap', data: heat, label: { show: heat.length <= 80, formatter: (q) => q.data[2] } }],
    }, true);

    // Slices: every brushed config's time against each parameter (log-log).
    const grids = [];
    const xAxes = [];
    const yAxes = [];
    const series = [];
    const w = 100 / Math.max(1, np);
    const sample = thin(rows, DRAW_CAP, np);
    document.getElementById('slices-note').textContent = sample.length < rows.length
      ? '(drawn: ' + sample.length + ' of ' + rows.length + ' configs, every ' + Math.ceil(rows.length / DRAW_CAP) + 'th and the fastest 100)' : '';
    land.params.forEach((name, i) => {
      grids.push({ left: (i * w + 6) + '%', width: (w - 8) + '%', top: 20, bottom: 45 });
      xAxes.push({ gridIndex: i, type: 'log', logBase: 2, name, nameLocation: 'middle', nameGap: 25, scale: true });
      yAxes.push({ gridIndex: i, type: 'log', scale: true, axisLabel: { formatter: (v) => fmtNs(v), show: i === 0 } });
      series.push({ name, type: 'scatter', xAxisIndex: i, yAxisIndex: i, symbolSize: 4, large: sample.length > 2000,
        itemStyle: { opacity: 0.5 }, data: sample.map((r) => [r[i], r[np]]) });
    });
    draw(charts.slices, { animation: false, grid: grids, xAxis: xAxes, yAxis: yAxes, series }, true);
  }

  function drawDecision() {
    const d = st.land.decision;
    const el = document.getElementById('decision');
    if (!d) {
      el.replaceChildren(h('p', { class: 'muted' }, 'No decision round yet (it runs when the bucket\'s search is done).'));
      return;
    }
    el.replaceChildren(
      h('p', {}, h('b', {}, d.decision), d.noise_band > 0 ? ' (noise band ' + (100 * d.noise_band).toFixed(1) + '%)' : '',
        d.incumbent ? ', incumbent ' + cfgText(d.incumbent) : ', no incumbent'),
      h('p', { class: 'muted' }, 'The best configs of the search and the default, re-timed with their repetitions interleaved:'),
      h('table', { id: 'decision-table' }, h('tr', {}, ['config', 'outcome', 'median', 'cv', 'iterations', ''].map((t) => h('th', {}, t))),
        d.candidates.map((c) => h('tr', {}, h('td', { class: 'mono' }, cfgText(c.config)), h('td', {}, c.outcome),
          h('td', { class: 'num' }, fmtNs(c.median_ns)), h('td', { class: 'num' }, (100 * c.cv).toFixed(1) + '%'),
          h('td', { class: 'num' }, c.iterations), h('td', { class: 'ok' }, cfgText(c.config) === cfgText(d.chosen) ? 'chosen' : '')))));
  }

  function drawFailed() {
    const f = st.land.failed;
    const el = document.getElementById('failed');
    if (!f.length) {
      el.replaceChildren(h('p', { class: 'muted' }, 'None: every config tried in this bucket passed.'));
      return;
    }
    const shown = f.slice(0, 500);
    el.replaceChildren(h('p', { class: 'muted' }, f.length + ' configs did not pass' + (f.length > shown.length ? ' (first 500 shown)' : '')),
      h('table', { id: 'failed-table' }, h('tr', {}, ['config', 'outcome', 'detail'].map((t) => h('th', {}, t))),
        shown.map((m) => h('tr', {}, h('td', { class: 'mono' }, cfgText(m.config)), h('td', { class: 'bad' }, m.outcome),
          h('td', { class: 'mono' }, m.detail)))));
  }

  const tick = async () => {
    const running = await drawHead();
    await loadBucket(false);
    live(running);
    if (running) poll(tick);
  };
  // The landscape is fetched while the head is drawn: the largest answer is not queued behind it.
  let prefetched = api('/v1/sweeps/' + id + '/landscape' + qs({ bucket: st.bucket }));
  const running = await drawHead();
  mark('head');
  await loadBucket(true);
  live(running);
  if (running) poll(tick);
  window.addEventListener('resize', () => Object.values(charts).forEach((c) => c.resize()));
  ready();
}

// ---- /ui/kernels/{kernel} --------------------------------------------------------------------

async function pageKernel(main, name) {
  const [k, list, w] = await Promise.all([api('/v1/kernels/' + encodeURIComponent(name)), api('/v1/kernels'),
    api('/v1/winners' + qs({ kernel: name }))]);
  main.replaceChildren(
    h('h1', {}, 'Kernel ', k.name),
    h('p', {}, k.description),
    h('p', {}, 'Other kernels: ', list.kernels.map((o) => [h('a', { href: '/ui/kernels/' + o.name }, o.name), ' '])),
    h('h2', {}, 'Parameters'),
    h('table', { id: 'params' }, h('tr', {}, ['parameter', 'candidates', 'default', 'constraint'].map((t) => h('th', {}, t))),
      k.params.map((p) => h('tr', {}, h('td', { class: 'mono' }, p.name), h('td', { class: 'mono' }, p.candidates.join(', ')),
        h('td', { class: 'num' }, k.default_config[p.name]), h('td', {}, p.doc)))),
    h('p', { class: 'muted' }, 'Config space: ' + k.config_space_size + ' configs per bucket before validation; dtypes ' + k.dtypes.join(', ') + '.'),
    h('h2', {}, 'Dimensions and buckets (bucket version ' + k.bucket_version + ')'),
    h('table', { id: 'dims' }, h('tr', {}, ['dimension', 'max', 'rounding', 'bucket range', 'meaning'].map((t) => h('th', {}, t))),
      k.dims.map((d) => {
        const b = k.buckets.find((x) => x.dim === d.name) || {};
        return h('tr', {}, h('td', { class: 'mono' }, d.name), h('td', { class: 'num' }, d.max), h('td', {}, b.rounding || '–'),
          h('td', { class: 'mono' }, b.min !== undefined ? b.min + ' … ' + b.max : '–'), h('td', {}, d.doc));
      })),
    h('h2', {}, 'Tuned rows (' + w.entries.length + ')'),
    h('table', { id: 'tuned-rows' }, h('tr', {}, ['hardware', 'dtype', 'bucket', 'config', 'median', 'speedup', 'samples', 'provenance', 'measured']
      .map((t) => h('th', {}, t))),
    w.entries.map((e) => h('tr', { dataConfig: cfgText(e.config) },
      h('td', { class: 'mono' }, e.hardware), h('td', {}, e.dtype), h('td', { class: 'mono' }, e.bucket),
      h('td', { class: 'mono' }, h('a', { href: tuneUrl(e) }, cfgText(e.config))),
      h('td', { class: 'num' }, fmtNs(e.median_ns)), h('td', { class: 'num' }, e.speedup !== null ? '×' + e.speedup.toFixed(2) : '–'),
      h('td', { class: 'num' }, e.samples),
      h('td', {}, e.from_database ? h('a', { href: '/ui/sweeps/' + e.sweep_id + qs({ bucket: e.bucket }) }, 'sweep #' + e.sweep_id) : 'checked-in table (sweep #' + e.sweep_id + ' elsewhere)',
        ', measurement #' + e.measurement_id,
        e.stale ? h('span', { class: 'badge stale', title: e.stale_reason }, 'stale') : null,
        e.override ? h('span', { class: 'badge override' }, 'override') : null),
      h('td', { class: 'mono' }, e.measured_at)))),
  );
  ready();
}

// ---- /ui/tuned/{kernel}/{dtype}/{hardware}/{bucket} ---------------------------------------------

async function pageTuned(main, kernel, dtype, hardware, bucket) {
  const x = await api('/v1/tuned/explain' + qs({ kernel, hardware, dtype, bucket, top: 20 }));
  const w = x.winner;
  const kv = (pairs) => h('dl', { class: 'kv' }, pairs.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
  main.replaceChildren(
    h('h1', {}, 'Why ', h('span', { class: 'mono', id: 'tuned-config' }, cfgText(w.config))),
    kv([['kernel', h('a', { href: '/ui/kernels/' + w.kernel }, w.kernel)], ['dtype', w.dtype], ['hardware', w.hardware], ['bucket', w.bucket],
      ['median', fmtNs(w.median_ns) + ' over ' + w.samples + ' samples'],
      ['speedup over default', w.speedup !== null ? '×' + w.speedup.toFixed(2) + ' (default ' + cfgText(x.default_config) + ': ' + fmtNs(w.default_median_ns) + ')' : 'default config not measured in this sweep'],
      ['measured', w.measured_at + ' (' + fmtAge(w.age_seconds) + ' ago)' + (w.stale ? ', stale: ' + w.stale_reason : '')],
      ['provenance', w.from_database ? h('a', { href: '/ui/sweeps/' + w.sweep_id + qs({ bucket: w.bucket }) }, 'sweep #' + w.sweep_id)
        : "the checked-in table's row (sweep #" + w.sweep_id + ' of another database); its measurements are not here']]),
    h('h2', {}, 'Override'),
    w.override ? h('p', { id: 'override' }, h('span', { class: 'badge override' }, 'override'), ' lookups answer ', h('b', { class: 'mono' }, cfgText(w.override.config)),
      ' instead: "' + w.override.reason + '" (key ' + w.override.hardware + ', created ' + w.override.created_at +
      (w.override.expires_at ? ', expires ' + w.override.expires_at : ', never expires') + ')')
      : h('p', { class: 'muted', id: 'override' }, 'None pinned.'),
    h('h2', {}, 'The decision'),
    x.decision ? h('p', {}, h('b', {}, x.decision.decision), '. A config whose median is within the noise band of the ',
      "tuned one's (two standard errors of the difference of the medians, from both configs' samples, at least 2%) is not told ",
      'apart from it; an incumbent or the default is only replaced by a config faster by more than that.')
      : h('p', { class: 'muted' }, 'No decision round recorded.'),
    h('div', { class: 'grid' },
      h('div', { class: 'panel' }, h('b', {}, 'Fastest configs of the bucket (' + x.ok + ' of ' + x.measured + ' passed)'),
        h('div', { id: 'ranked-chart', class: 'chart tall' })),
      h('div', { class: 'panel' }, h('b', {}, 'Samples as a distribution'), h('div', { id: 'samples-chart', class: 'chart tall' }))),
    h('h2', {}, 'Measurements behind the choice'),
    h('table', { id: 'ranked' }, h('tr', {}, ['rank', 'config', 'median', 'cv', 'samples', 'noise band', ''].map((t) => h('th', {}, t))),
      x.ranked.map((r) => h('tr', { class: r.is_winner ? 'ok' : '' }, h('td', { class: 'num' }, r.rank), h('td', { class: 'mono' }, cfgText(r.config)),
        h('td', { class: 'num' }, fmtNs(r.median_ns)), h('td', { class: 'num' }, (100 * r.cv).toFixed(1) + '%'),
        h('td', { class: 'num' }, r.samples_ns.length), h('td', { class: 'num' }, r.is_winner ? '' : (100 * r.noise_band).toFixed(1) + '%'),
        h('td', {}, [r.is_winner ? 'tuned' : '', r.is_default ? 'default' : '', r.within_noise && !r.is_winner ? 'within noise' : ''].filter(Boolean).join(', '))))),
    h('h2', {}, 'Environment of the sweep'),
    x.sweep ? kv([['sweep', h('a', { href: '/ui/sweeps/' + x.sweep.id }, '#' + x.sweep.id)], ['strategy', x.sweep.strategy], ['threads', String(x.sweep.threads)],
      ['load average', x.sweep.environment.load_average], ['CPUs', x.sweep.environment.affinity], ['governor', x.sweep.environment.governor || '–'],
      ['compiler', x.sweep.environment.compiler], ['build flags', x.sweep.environment.build_flags], ['blocktune', x.sweep.environment.tool_version]])
      : h('p', { class: 'muted' }, 'The sweep is not in this database.'),
  );
  if (x.ranked.length) {
    const names = x.ranked.map((r) => '#' + r.rank + ' ' + cfgText(r.config));
    // The band of the runner-up (or the decision round's): slower than this line is told apart.
    const winnerRow = x.ranked.find((r) => r.is_winner);
    const runnerUp = x.ranked.find((r) => !r.is_winner);
    const bandRel = x.noise_band !== null ? x.noise_band : runnerUp ? runnerUp.noise_band : null;
    const band = winnerRow && bandRel !== null ? winnerRow.median_ns * (1 + bandRel) : null;
    draw(chart(document.getElementById('ranked-chart'), 'ranked'), {
      animation: false,
      grid: { left: 10, right: 30, top: 10, bottom: 30, containLabel: true },
      xAxis: { type: 'value', scale: true, axisLabel: { formatter: (v) => fmtNs(v) } },
      yAxis: { type: 'category', data: names, inverse: true, axisLabel: { fontSize: 11 } },
      series: [{ type: 'bar', data: x.ranked.map((r) => ({ value: r.median_ns,
        itemStyle: { color: r.is_winner ? '#15803d' : r.within_noise ? '#86efac' : r.is_default ? '#f59e0b' : '#94a3b8' } })),
      markLine: band ? { symbol: 'none', label: { formatter: 'noise band' }, data: [{ xAxis: band }] } : undefined }],
    });
    const boxes = x.ranked.map((r) => {
      const s = [...r.samples_ns].sort((a, b) => a - b);
      return s.length ? [s[0], quantile(s, 0.25), quantile(s, 0.5), quantile(s, 0.75), s[s.length - 1]] : [];
    });
    const points = [];
    x.ranked.forEach((r, i) => r.samples_ns.forEach((v) => points.push([v, i])));
    draw(chart(document.getElementById('samples-chart'), 'samples'), {
      animation: false,
      grid: { left: 10, right: 30, top: 10, bottom: 30, containLabel: true },
      xAxis: { type: 'value', scale: true, axisLabel: { formatter: (v) => fmtNs(v) } },
      yAxis: { type: 'category', data: names, inverse: true, axisLabel: { fontSize: 11 } },
      series: [{ type: 'boxplot', layout: 'horizontal', data: boxes.map((b) => b) },
        { type: 'scatter', data: points, symbolSize: 5, itemStyle: { color: '#2f6fdb', opacity: 0.6 } }],
    });
  } else {
    document.getElementById('ranked-chart').replaceChildren(h('p', { class: 'muted' }, 'No measurements in this database.'));
    document.getElementById('samples-chart').replaceChildren(h('p', { class: 'muted' }, 'No samples in this database.'));
  }
  ready();
}

// ---- /ui/compare -----------------------------------------------------------------------------

async function pageCompare(main) {
  const url = new URL(location.href);
  const a = url.searchParams.get('a');
  const b = url.searchParams.get('b');
  const ha = url.searchParams.get('hw_a');
  const hb = url.searchParams.get('hw_b');
  const [sweeps, winners] = await Promise.all([allSweeps(), api('/v1/winners')]);
  const hws = [...new Set(winners.entries.map((e) => e.hardware))].sort();
  const sel = (name, options, value) => h('select', { name }, h('option', { value: '' }, '–'),
    options.map(([v, t]) => h('option', { value: v, selected: String(v) === value }, t)));
  const sweepOpts = sweeps.map((s) => [s.id, '#' + s.id + ' ' + s.kernel + ' ' + s.dtype + ' ' + s.strategy + ' (' + s.status + ')']);
  main.replaceChildren(
    h('h1', {}, 'Compare'),
    h('form', { class: 'controls', method: 'get', action: '/ui/compare' },
      h('b', {}, 'two sweeps'), sel('a', sweepOpts, a), sel('b', sweepOpts, b), h('button', { type: 'submit' }, 'compare')),
    h('form', { class: 'controls', method: 'get', action: '/ui/compare' },
      h('b', {}, 'two hardware profiles'), sel('hw_a', hws.map((x) => [x, x]), ha), sel('hw_b', hws.map((x) => [x, x]), hb),
      h('button', { type: 'submit' }, 'compare')),
    h('div', { id: 'compare' }),
  );
  const out = document.getElementById('compare');
  let rows = [];
  let labels = [];
  if (a && b) {
    const [A, B] = await Promise.all([api('/v1/sweeps/' + Number(a) + '/best'), api('/v1/sweeps/' + Number(b) + '/best')]);
    labels = ['sweep #' + A.sweep_id + ' (' + A.kernel + ', ' + A.hardware + ')', 'sweep #' + B.sweep_id + ' (' + B.kernel + ', ' + B.hardware + ')'];
    const keys = [...new Set([...A.buckets, ...B.buckets].map((x) => x.bucket))];
    rows = keys.map((k) => {
      const x = A.buckets.find((y) => y.bucket === k);
      const y = B.buckets.find((z) => z.bucket === k);
      return { bucket: k, a: x && { config: x.best_config, ns: x.best_median_ns }, b: y && { config: y.best_config, ns: y.best_median_ns } };
    });
  } else if (ha && hb) {
    labels = [ha, hb];
    const pick = (hw) => winners.entries.filter((e) => e.hardware === hw);
    const A = pick(ha);
    const B = pick(hb);
    const keys = [...new Set([...A, ...B].map((e) => e.kernel + ' ' + e.dtype + ' ' + e.bucket))].sort();
    rows = keys.map((k) => {
      const x = A.find((e) => e.kernel + ' ' + e.dtype + ' ' + e.bucket === k);
      const y = B.find((e) => e.kernel + ' ' + e.dtype + ' ' + e.bucket === k);
      return { bucket: k, a: x && { config: x.config, ns: x.median_ns }, b: y && { config: y.config, ns: y.median_ns } };
    });
  } else {
    out.replaceChildren(h('p', { class: 'muted' }, 'Pick two sweeps, or two hardware profiles, to see their best configs per bucket side by side.'));
    ready();
    return;
  }
  out.replaceChildren(
    h('table', { id: 'compare-table' }, h('tr', {}, h('th', {}, 'bucket'), h('th', {}, labels[0]), h('th', {}, 'time'), h('th', {}, labels[1]), h('th', {}, 'time'), h('th', {}, 'B / A')),
      rows.map((r) => h('tr', { dataBucket: r.bucket }, h('td', { class: 'mono' }, r.bucket),
        h('td', { class: 'mono' }, r.a ? cfgText(r.a.config) : '–'), h('td', { class: 'num' }, r.a ? fmtNs(r.a.ns) : '–'),
        h('td', { class: 'mono' }, r.b ? cfgText(r.b.config) : '–'), h('td', { class: 'num' }, r.b ? fmtNs(r.b.ns) : '–'),
        h('td', { class: 'num' }, r.a && r.b && r.a.ns && r.b.ns ? (r.b.ns / r.a.ns).toFixed(2) : '–')))),
    h('div', { class: 'panel' }, h('div', { id: 'compare-chart', class: 'chart tall' })));
  draw(chart(document.getElementById('compare-chart'), 'compare'), {
    animation: false,
    tooltip: { trigger: 'axis' },
    legend: { data: labels, top: 0 },
    grid: { left: 70, right: 20, top: 40, bottom: 120 },
    xAxis: { type: 'category', data: rows.map((r) => r.bucket), axisLabel: { rotate: 30, fontSize: 10 } },
    yAxis: { type: 'log', name: 'best time', axisLabel: { formatter: (v) => fmtNs(v) } },
    series: [{ name: labels[0], type: 'bar', data: rows.map((r) => (r.a && r.a.ns) || null) },
      { name: labels[1], type: 'bar', data: rows.map((r) => (r.b && r.b.ns) || null) }],
  });
  ready();
}

// ---- router ----------------------------------------------------------------------------------

async function route() {
  const main = document.getElementById('main');
  const parts = location.pathname.replace(/^\/ui\/?/, '').split('/').filter((s) => s !== '').map(decodeURIComponent);
  try {
    if (parts.length === 0) return await pageHome(main);
    if (parts[0] === 'sweeps' && parts.length === 2 && /^\d+$/.test(parts[1])) return await pageSweep(main, Number(parts[1]));
    if (parts[0] === 'kernels' && parts.length === 2) return await pageKernel(main, parts[1]);
    if (parts[0] === 'tuned' && parts.length === 5) return await pageTuned(main, parts[1], parts[2], parts[3], parts[4]);
    if (parts[0] === 'compare' && parts.length === 1) return await pageCompare(main);
    main.replaceChildren(h('h1', {}, 'Not found'), h('p', {}, 'No page at ' + location.pathname + '. ', h('a', { href: '/ui/' }, 'Home')));
    ready();
  } catch (e) {
    showError(e);
    ready();
  }
}

document.addEventListener('DOMContentLoaded', route);
