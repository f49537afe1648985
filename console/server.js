// The server: name, version, extensions, uptime and options, and the log
// and trace settings, editable where the logging and trace extensions are on.
import { ApiError, get, h, notice, post } from './api.js';

const uptime = (s) => `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min ${s % 60} s`;

/** A settings form: one field per setting the server reported, POSTed back as changed. */
function settingsForm(id, title, path, settings) {
  const fields = Object.entries(settings).map(([k, v]) => {
    const input = typeof v === 'boolean'
      ? h('input', { type: 'checkbox', checked: v, name: k })
      : h('input', { type: typeof v === 'number' ? 'number' : 'text', value: Array.isArray(v) ? v.join(',') : String(v), name: k });
    return { k, v, input };
  });
  const form = h('form', { className: 'card settings', id },
    h('h3', null, title),
    h('dl', { className: 'kv' }, ...fields.flatMap(({ k, input }) => [h('dt', null, k), h('dd', null, input)])),
    h('p', null, h('button', { type: 'submit' }, 'Apply')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const changed = {};
    for (const { k, v, input } of fields) {
      const now = input.type === 'checkbox' ? input.checked
        : typeof v === 'number' ? Number(input.value)
          : Array.isArray(v) ? input.value.split(',').map((s) => s.trim()).filter(Boolean) : input.value;
      if (JSON.stringify(now) !== JSON.stringify(v)) changed[k] = now;
    }
    try {
      const updated = await post(path, changed);
      notice(`${title}: ${JSON.stringify(updated)}`, 'info');
    } catch (err) {
      notice(err instanceof ApiError ? err.message : String(err));
    }
  });
  return form;
}

export async function serverView(root, status) {
  const meta = await get('/v2');
  root.replaceChildren(
    h('h2', null, 'Server'),
    h('dl', { className: 'kv card', id: 'server-info' },
      h('dt', null, 'name'), h('dd', null, meta.name),
      h('dt', null, 'version'), h('dd', null, meta.version),
      h('dt', null, 'extensions'), h('dd', null, meta.extensions.join(', ')),
      h('dt', null, 'started'), h('dd', null, `${status.started} (up ${uptime(status.uptime_s)})`),
      h('dt', null, 'API description'), h('dd', null, h('a', { href: '/v2/openapi.json' }, '/v2/openapi.json'))),
  );
  const forms = h('div', { className: 'grid' });
  root.append(forms);
  for (const [ext, id, title, path] of [['logging', 'log-settings', 'Log settings', '/v2/logging'], ['trace', 'trace-settings', 'Trace settings', '/v2/trace/setting']]) {
    if (!meta.extensions.includes(ext)) continue;
    try {
      forms.append(settingsForm(id, title, path, await get(path)));
    } catch (err) {
      forms.append(h('p', { className: 'unready' }, err instanceof ApiError ? err.message : String(err)));
    }
  }
  root.append(h('h2', null, 'Options'), h('table', { id: 'options' },
    h('tbody', null, ...status.options.map(([k, v]) => h('tr', null, h('td', null, k), h('td', null, v))))));
}
