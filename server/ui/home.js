// /ui/ : every sweep with its progress (polled while one runs), and the winners matrix of
// each kernel: the config lookups serve per bucket and hardware profile, with its speedup.

import { h, api, fmtNs, fmtAge, fmtEta, cfgText, progressBar, tuneUrl, ready, live, poll, allSweeps } from './common.js';

export async function pageHome(main) {
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
        h('td', { class: d.status === 'failed' || d.stalled ? 'bad' : '' },
          d.status + (d.stalled ? ' (stalled: ' + d.stalled.reason + ': ' + d.stalled.error + ')' : '')),
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
