// A model's last 200 log lines (its loads, its instances, what its Python
// stubs print and log), live: asks the server every second for the lines
// after the last one shown (GET /v2/nodetron/models/<name>/log?after=<seq>).
import { ApiError, get, h } from './api.js';

const KEEP = 200;
const EVERY_MS = 1000;

export function modelLog(root, name) {
  const pre = h('pre', { className: 'block log', id: 'model-log' });
  const note = h('span', { className: 'muted' }, '');
  root.append(h('h2', null, 'Log ', note), pre);
  let after = 0;
  let timer;
  let stopped = false;
  const poll = async () => {
    try {
      const { lines } = await get(`/v2/nodetron/models/${encodeURIComponent(name)}/log${after > 0 ? `?after=${after}` : ''}`);
      if (lines.length > 0) {
        const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        after = lines[lines.length - 1].seq;
        const kept = (pre.textContent === '' ? [] : pre.textContent.split('\n')).concat(lines.map((l) => l.text)).slice(-KEEP);
        pre.textContent = kept.join('\n');
        if (atEnd) pre.scrollTop = pre.scrollHeight;
      }
      note.textContent = pre.textContent === '' ? 'nothing logged about this model yet' : `last ${KEEP} lines, live`;
    } catch (err) {
      note.textContent = err instanceof ApiError ? err.message : String(err);
    }
    if (!stopped) timer = setTimeout(poll, EVERY_MS);
  };
  void poll();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
