// What every page of the dashboard shares (server/ui/*.js import it): window.bt (the charts, the
// page's state, its poll timers and its load-time marks, which the browser test reads), building
// elements, fetching from the read-only API, formatting times, configs and ages, the chart
// wrapper that records when a chart has finished drawing, polling while a sweep runs, and the
// data-ready flag the browser test waits on.

export const bt = (window.bt = { charts: {}, state: {}, timers: [], marks: {} });
// Milliseconds since navigation at named points of drawing a page (the browser test prints them).
export const mark = (name) => { bt.marks[name] = Math.round(performance.now()); };
const POLL_MS = 2000;

// The device an external kernel's runner announced (docs/accelerators.md), in one line: model,
// arch, memory, driver, runtime, framework; '' for none.
export function deviceText(d) {
  if (!d) return '';
  const gib = d.memory_bytes ? (d.memory_bytes / 2 ** 30).toFixed(0) + ' GiB' : '';
  return [d.model + ' (' + d.kind + ', ' + d.arch + ')', gib, d.driver && 'driver ' + d.driver, d.runtime, d.platform]
    .filter((x) => x).join('; ');
}

export function h(tag, attrs, ...children) {
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

export async function api(path) {
  const r = await fetch(path, { headers: { Accept: 'application/json' } });
  const body = await r.json();
  if (!r.ok) throw new Error((body.error && body.error.message) || r.status + ' ' + path);
  return body;
}

export function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') p.set(k, v);
  const s = p.toString();
  return s ? '?' + s : '';
}

export function fmtNs(ns) {
  if (ns === null || ns === undefined) return '–';
  // Four significant digits at most, no trailing zeros: 19.53 ms, 100 ms, 6.66 µs.
  const fmt = (v, unit) => Number(v.toPrecision(4)) + ' ' + unit;
  if (ns >= 1e9) return fmt(ns / 1e9, 's');
  if (ns >= 1e6) return fmt(ns / 1e6, 'ms');
  if (ns >= 1e3) return fmt(ns / 1e3, 'µs');
  return fmt(ns, 'ns');
}

export function fmtAge(s) {
  if (s === null || s === undefined) return '–';
  if (s < 90) return Math.round(s) + ' s';
  if (s < 5400) return Math.round(s / 60) + ' min';
  if (s < 172800) return Math.round(s / 3600) + ' h';
  return Math.round(s / 86400) + ' d';
}

export function fmtEta(s) {
  return s === null || s === undefined ? '–' : fmtAge(s);
}

// "block_m=96,block_n=512": the canonical spelling the CLI and the tables use.
export function cfgText(c) {
  return c ? Object.entries(c).map(([k, v]) => k + '=' + v).join(',') : '–';
}

export function progressBar(done, total) {
  const pct = total > 0 ? Math.min(100, (100 * done) / total) : 0;
  return h('span', { class: 'bar', title: done + ' / ' + total }, h('span', { style: 'width:' + pct.toFixed(1) + '%' }));
}

export function tuneUrl(e) {
  return '/ui/tuned/' + [e.kernel, e.dtype, e.hardware, e.bucket].map(encodeURIComponent).join('/');
}

export function chart(el, name) {
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
export function draw(c, opt, notMerge) {
  c.done = false;
  c.setOption(opt, notMerge);
}

// Resolves once every chart has finished rendering its last option (progressive rendering
// of large series included): what "the page has drawn" means for the load-time figures.
bt.rendered = () => new Promise((resolve) => {
  const check = () => (Object.values(bt.charts).every((c) => c.done) ? resolve(Math.round(performance.now())) : setTimeout(check, 10));
  check();
});

export function ready() {
  mark('ready');
  document.body.dataset.ready = '1';
}

export function live(on) {
  document.getElementById('live').textContent = on ? '● live (polling every 2 s)' : '';
}

export function poll(fn) {
  const t = setTimeout(async () => {
    try {
      await fn();
    } catch (e) {
      showError(e);
    }
  }, POLL_MS);
  bt.timers.push(t);
}

export function showError(e) {
  const main = document.getElementById('main');
  main.prepend(h('p', { class: 'bad', id: 'error' }, String(e.message || e)));
}

export function quantile(sorted, q) {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

// Every sweep, oldest first (at most 20 pages of 1000).
export async function allSweeps() {
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
