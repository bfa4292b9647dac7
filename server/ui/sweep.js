// /ui/sweeps/{id}: one sweep's head and buckets, and for the chosen bucket its landscape: best
// so far, a heatmap over two parameters, parallel coordinates with brushing, slices, the
// decision round and the failed configs; polled while the sweep runs.

import { bt, mark, h, api, qs, fmtNs, fmtEta, cfgText, progressBar, chart, draw, ready, live, poll, deviceText } from './common.js';

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

export async function pageSweep(main, id) {
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
      ...(s.device ? [h('dt', {}, 'device'), h('dd', { id: 'sweep-device' }, deviceText(s.device))] : []),
      h('dt', {}, 'strategy'), h('dd', {}, s.strategy + (s.budget ? ', budget ' + s.budget : '')),
      h('dt', {}, 'status'), h('dd', { id: 'sweep-status', class: s.stalled ? 'bad' : '' }, s.status +
        (s.error ? ': ' + s.error : '') +
        (s.stalled ? ' (stalled since ' + s.stalled.since + ': ' + s.stalled.reason + ': ' + s.stalled.error + ')' : '')),
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
