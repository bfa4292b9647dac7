// /ui/tuned/{kernel}/{dtype}/{hardware}/{bucket}: why a tuned row holds its config: the
// bucket's fastest configs with their samples, the noise band, the override, the sweep.

import { h, api, qs, fmtNs, fmtAge, cfgText, chart, draw, ready, quantile, deviceText } from './common.js';

export async function pageTuned(main, kernel, dtype, hardware, bucket) {
  const x = await api('/v1/tuned/explain' + qs({ kernel, hardware, dtype, bucket, top: 20 }));
  const w = x.winner;
  const kv = (pairs) => h('dl', { class: 'kv' }, pairs.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
  main.replaceChildren(
    h('h1', {}, 'Why ', h('span', { class: 'mono', id: 'tuned-config' }, cfgText(w.config))),
    kv([['kernel', h('a', { href: '/ui/kernels/' + w.kernel }, w.kernel)], ['dtype', w.dtype], ['hardware', w.hardware],
      ...(x.sweep && x.sweep.device ? [['device', deviceText(x.sweep.device)]] : []), ['bucket', w.bucket],
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
