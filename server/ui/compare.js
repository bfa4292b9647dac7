// /ui/compare: two sweeps, or two hardware profiles, best config per bucket side by side.

import { h, api, fmtNs, cfgText, chart, draw, ready, allSweeps } from './common.js';

export async function pageCompare(main) {
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
