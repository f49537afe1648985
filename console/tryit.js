// The try-it form: one field per input of the model's metadata (shape with
// -1 as 1, data as numbers, BYTES one element per line), a real inference,
// its outputs, and the server-side time split from the statistics.
import { ApiError, get, h, modelPath, post } from './api.js';

const count = (shape) => shape.reduce((a, b) => a * b, 1);

function defaultData(datatype, n) {
  if (datatype === 'BYTES') return Array.from({ length: n }, (_, i) => `text ${i}`).join('\n');
  if (datatype === 'BOOL') return Array.from({ length: n }, (_, i) => (i % 2 === 0 ? 'true' : 'false')).join(' ');
  return Array.from({ length: n }, (_, i) => String(i)).join(' ');
}

/** The data field as the JSON tensor format wants it; throws naming the input when a value does not parse. */
export function parseData(name, datatype, text) {
  if (datatype === 'BYTES') return text === '' ? [] : text.split('\n');
  const words = text.split(/[\s,[\]]+/).filter((w) => w !== '');
  return words.map((w) => {
    if (datatype === 'BOOL') {
      if (w !== 'true' && w !== 'false') throw new Error(`input '${name}': '${w}' is not true or false`);
      return w === 'true';
    }
    const v = Number(w);
    if (Number.isNaN(v)) throw new Error(`input '${name}': '${w}' is not a number`);
    return v;
  });
}

function parseShape(name, text) {
  const dims = text.split(/[\s,[\]]+/).filter((w) => w !== '').map(Number);
  if (dims.some((d) => !Number.isInteger(d) || d < 0)) throw new Error(`input '${name}': shape '${text}' must be whole numbers of 0 or more`);
  return dims;
}

/** The statistics' totals of every version: before and after one inference. */
async function totals(model) {
  const stats = (await get(`${modelPath(model)}/stats`)).model_stats;
  const t = {};
  for (const key of ['queue', 'compute_input', 'compute_infer', 'compute_output', 'success']) {
    t[key] = stats.reduce((a, v) => ({ count: a.count + v.inference_stats[key].count, ns: a.ns + v.inference_stats[key].ns }), { count: 0, ns: 0 });
  }
  return t;
}

export function tryItForm(root, metadata) {
  // Each label is tied to its field (ids by position: a tensor name may hold any character),
  // so a screen reader, or a test finding a field by its label, lands on the input's data.
  const fields = metadata.inputs.map((input, i) => {
    const shape = input.shape.map((d) => (d < 0 ? 1 : d));
    const shapeField = h('input', { type: 'text', value: shape.join(', '), name: `${input.name}.shape`, id: `tryit-shape-${i}` });
    const dataField = h('textarea', { rows: input.datatype === 'BYTES' ? 3 : 2, name: `${input.name}.data`, id: `tryit-data-${i}` }, defaultData(input.datatype, count(shape)));
    return { input, shapeField, dataField, i };
  });
  const result = h('div', { id: 'tryit-result' });
  const form = h('form', { className: 'tryit card', id: 'tryit' },
    ...fields.map(({ input, shapeField, dataField, i }) => h('div', null,
      h('label', { htmlFor: `tryit-data-${i}` }, `${input.name} `, h('span', { className: 'muted' }, `${input.datatype} [${input.shape.join(', ')}]`)),
      h('label', { htmlFor: `tryit-shape-${i}` }, `${input.name} shape `), shapeField, dataField)),
    h('p', null, h('button', { type: 'submit' }, 'Infer')),
    result);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void run(metadata, fields, result);
  });
  root.append(h('h2', null, 'Try it'), form);
}

async function run(metadata, fields, result) {
  let body;
  try {
    body = {
      inputs: fields.map(({ input, shapeField, dataField }) => ({
        name: input.name, datatype: input.datatype,
        shape: parseShape(input.name, shapeField.value), data: parseData(input.name, input.datatype, dataField.value),
      })),
      outputs: metadata.outputs.map((o) => ({ name: o.name, parameters: { binary_data: false } })),
    };
  } catch (err) {
    result.replaceChildren(h('p', { className: 'unready' }, err.message));
    return;
  }
  result.replaceChildren(h('p', { className: 'muted' }, 'inferring…'));
  try {
    const before = await totals(metadata.name);
    const t0 = performance.now();
    const response = await post(`${modelPath(metadata.name)}/infer`, body);
    const roundTripMs = performance.now() - t0;
    const after = await totals(metadata.name);
    result.replaceChildren(outputsTable(response), timeSplit(before, after, roundTripMs));
  } catch (err) {
    result.replaceChildren(h('p', { className: 'unready', id: 'tryit-error' }, err instanceof ApiError ? err.message : String(err)));
  }
}

function outputsTable(response) {
  const show = (data) => {
    const flat = (data ?? []).flat(Infinity);
    return flat.length > 64 ? `${flat.slice(0, 64).join(', ')}, … (${flat.length} values)` : flat.join(', ');
  };
  return h('table', { id: 'tryit-outputs' },
    h('thead', null, h('tr', null, ...['Output', 'Datatype', 'Shape', 'Data'].map((t) => h('th', null, t)))),
    h('tbody', null, ...response.outputs.map((o) => h('tr', { dataset: { output: o.name } },
      h('td', null, o.name), h('td', null, o.datatype), h('td', null, `[${o.shape.join(', ')}]`), h('td', null, show(o.data))))),
    h('caption', { className: 'muted' }, `model ${response.model_name} version ${response.model_version ?? ''}`));
}

function timeSplit(before, after, roundTripMs) {
  const us = (key) => {
    const n = after[key].count - before[key].count;
    return n > 0 ? ((after[key].ns - before[key].ns) / n / 1000).toFixed(0) : '–';
  };
  const requests = after.success.count - before.success.count;
  return h('p', { className: 'chart-note', id: 'tryit-split' },
    `server side (statistics, ${requests} request${requests === 1 ? '' : 's'} in the interval): request ${us('success')} µs = queue ${us('queue')} + compute input ${us('compute_input')} + infer ${us('compute_infer')} + output ${us('compute_output')} µs; round trip in the browser ${roundTripMs.toFixed(1)} ms`);
}
