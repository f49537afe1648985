// The Prometheus text format, as much as the console reads of it: each
// sample's name, labels and value.

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** [{ name, labels, value }] of every sample line. */
export function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (m === null) continue;
    const labels = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/** The sum of `name`'s samples for one model (all its versions) whose labels also match `extra`. */
export function modelSum(samples, name, model, extra = {}) {
  let sum = 0;
  let seen = false;
  for (const s of samples) {
    if (s.name !== name || s.labels.model !== model) continue;
    if (Object.entries(extra).some(([k, v]) => s.labels[k] !== v)) continue;
    sum += s.value;
    seen = true;
  }
  return seen ? sum : undefined;
}

/** The largest of `name`'s samples for one model with these labels (a quantile over versions). */
export function modelMax(samples, name, model, extra = {}) {
  let max;
  for (const s of samples) {
    if (s.name !== name || s.labels.model !== model || Number.isNaN(s.value)) continue;
    if (Object.entries(extra).some(([k, v]) => s.labels[k] !== v)) continue;
    max = max === undefined ? s.value : Math.max(max, s.value);
  }
  return max;
}
