// The model table: every model and version the repository index lists, its
// state and reason (the server's text, whole when expanded), backend,
// instance groups and instance health; load / unload / reload in explicit mode.
import { ApiError, get, h, modelPath, notice, post } from './api.js';

/** A reason as the index gives it: its first line, the whole text when opened. */
export function reasonCell(reason) {
  if (!reason) return '';
  const first = reason.split('\n')[0];
  return h('details', { className: 'reason' }, h('summary', null, first.length > 120 ? `${first.slice(0, 120)}…` : first), h('pre', null, reason));
}

export const stateBadge = (state) => h('span', { className: `badge state-${state ?? 'none'}` }, state ?? 'not loaded');

function groupsText(config) {
  const groups = config?.instance_group ?? [];
  if (groups.length === 0) return config ? '—' : '';
  return groups.map((g) => `${g.count} × ${g.kind}${g.name ? ` (${g.name})` : ''}`).join(', ');
}

function healthText(instances) {
  if (!instances || instances.length === 0) return '';
  const down = instances.filter((i) => i.unready);
  const restarts = instances.reduce((n, i) => n + i.restarts, 0);
  const parts = [`${instances.length - down.length}/${instances.length} ready`];
  if (restarts > 0) parts.push(`${restarts} restart${restarts === 1 ? '' : 's'}`);
  return h('span', { className: down.length > 0 ? 'unready' : '', title: down.map((i) => `${i.name}: ${i.unready}`).join('\n') }, parts.join(', '));
}

async function control(action, name) {
  notice(`${action} '${name}'…`, 'info');
  try {
    await post(`/v2/repository/models/${encodeURIComponent(name)}/${action}`, {}, 'ok');
    notice(`${action} '${name}': done`, 'info');
  } catch (err) {
    notice(err instanceof ApiError ? err.message : String(err));
  }
}

export class ModelTable {
  constructor(root, status) {
    this.status = status;
    this.configs = new Map();
    this.body = h('tbody');
    const explicit = status.model_control_mode === 'explicit';
    root.replaceChildren(
      h('h2', null, 'Models ', h('span', { className: 'muted' }, `(model control mode: ${status.model_control_mode})`)),
      h('table', { id: 'models' },
        h('thead', null, h('tr', null, ...['Model', 'Version', 'State', 'Reason', 'Backend', 'Instance groups', 'Instances', explicit ? 'Control' : ''].map((t) => h('th', null, t)))),
        this.body),
    );
    this.explicit = explicit;
  }

  async refresh() {
    const [index, status] = await Promise.all([post('/v2/repository/index', {}), get('/v2/nodetron/status')]);
    const health = new Map(status.instances.map((i) => [`${i.model}/${i.version}`, i.instances]));
    const names = [...new Set(index.map((e) => e.name))];
    await Promise.all(names.map(async (name) => {
      const ready = index.some((e) => e.name === name && e.state === 'READY');
      if (!ready) this.configs.delete(name);
      if (!ready || this.configs.has(name)) return;
      try {
        this.configs.set(name, await get(`${modelPath(name)}/config`));
      } catch { /* not loaded right now: its row says why */ }
    }));
    const rows = index.map((e) => {
      const config = this.configs.get(e.name);
      const link = h('a', { href: `#/models/${encodeURIComponent(e.name)}` }, e.name);
      const cells = [
        link, e.version ?? '', stateBadge(e.state), reasonCell(e.reason),
        config ? (config.backend || config.platform || '') : '', groupsText(config),
        healthText(health.get(`${e.name}/${e.version}`)),
      ];
      if (this.explicit) {
        const loaded = e.state === 'READY';
        cells.push(h('span', null,
          h('button', { onclick: () => this.act('load', e.name), dataset: { action: 'load', model: e.name } }, loaded ? 'Reload' : 'Load'), ' ',
          h('button', { onclick: () => this.act('unload', e.name), disabled: !loaded, dataset: { action: 'unload', model: e.name } }, 'Unload')));
      }
      return h('tr', { dataset: { model: e.name, version: e.version ?? '', state: e.state ?? '' } }, ...cells.map((c) => h('td', null, c)));
    });
    // Reasons the user opened stay open across refreshes.
    const open = new Set([...this.body.querySelectorAll('tr')].filter((r) => r.querySelector('details[open]')).map((r) => `${r.dataset.model}/${r.dataset.version}`));
    for (const r of rows) if (open.has(`${r.dataset.model}/${r.dataset.version}`)) r.querySelector('details')?.setAttribute('open', '');
    this.body.replaceChildren(...rows);
  }

  async act(action, name) {
    await control(action, name);
    this.configs.delete(name);
    await this.refresh();
  }
}
