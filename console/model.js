// One model: state per version (with the full reason), instances, its
// effective config as the server prints it, its metadata, live charts and
// the try-it form, and its last log lines, live.
import { ApiError, get, h, modelPath, post } from './api.js';
import { LiveCharts } from './charts.js';
import { modelLog } from './model-log.js';
import { reasonCell, stateBadge } from './models.js';
import { tryItForm } from './tryit.js';

const pretty = (v) => JSON.stringify(v, null, 2);

export async function modelView(root, name, status) {
  root.replaceChildren(h('h2', { id: 'model-name' }, name));
  const index = (await post('/v2/repository/index', {})).filter((e) => e.name === name);
  const health = new Map(status.instances.filter((i) => i.model === name).map((i) => [String(i.version), i.instances]));
  root.append(h('table', { id: 'versions' },
    h('thead', null, h('tr', null, ...['Version', 'State', 'Reason', 'Instances'].map((t) => h('th', null, t)))),
    h('tbody', null, ...index.map((e) => h('tr', null,
      h('td', null, e.version ?? ''), h('td', null, stateBadge(e.state)), h('td', null, reasonCell(e.reason)),
      h('td', null, ...(health.get(e.version) ?? []).map((i) => h('div', { className: i.unready ? 'unready' : '' },
        `${i.name}: ${i.unready ?? 'ready'}${i.restarts > 0 ? ` (restarted ${i.restarts}×)` : ''}`))))))));
  let config;
  let metadata;
  try {
    [config, metadata] = await Promise.all([get(`${modelPath(name)}/config`), get(modelPath(name))]);
  } catch (err) {
    root.append(h('p', { className: 'unready' }, err instanceof ApiError ? err.message : String(err)));
    // A model that is not ready (building its environment, failed) still has its log: the way to see why.
    return modelLog(root, name);
  }
  const charts = new LiveCharts(root, name, status);
  tryItForm(root, metadata);
  root.append(
    h('div', { className: 'grid' },
      h('div', null, h('h2', null, 'Configuration ', h('a', { href: `${modelPath(name)}/config`, className: 'muted' }, 'json')), h('pre', { className: 'block', id: 'model-config' }, pretty(config))),
      h('div', null, h('h2', null, 'Metadata ', h('a', { href: `${modelPath(name)}/openapi.json`, className: 'muted' }, 'openapi.json')), h('pre', { className: 'block', id: 'model-metadata' }, pretty(metadata)))),
  );
  const stopLog = modelLog(root, name);
  return () => {
    charts.dispose();
    stopLog();
  };
}
