// /ui/kernels/{kernel}: a kernel's parameters, dimensions and buckets, and its tuned rows.

import { h, api, qs, fmtNs, cfgText, tuneUrl, ready } from './common.js';

export async function pageKernel(main, name) {
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
