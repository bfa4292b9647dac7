// The blocktune dashboard's entry module: draws the page the URL names from the daemon's
// read-only API (GET /v1/...), one module per page. No framework, no network beyond this daemon
// (the page's Content-Security-Policy allows nothing else); charts are Apache ECharts, served
// from the binary and loaded before this module (index.html).
// Pages: /ui/ (sweeps, winners matrix: home.js), /ui/sweeps/{id} (sweep.js),
// /ui/kernels/{kernel} (kernel.js), /ui/tuned/{kernel}/{dtype}/{hardware}/{bucket} (tuned.js),
// /ui/compare (compare.js); shared helpers in common.js.
// When a page has drawn its data it sets <body data-ready="1"> (the browser test waits on it).

import { h, ready, showError } from './common.js';
import { pageCompare } from './compare.js';
import { pageHome } from './home.js';
import { pageKernel } from './kernel.js';
import { pageSweep } from './sweep.js';
import { pageTuned } from './tuned.js';

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
