// The console's one way to the server: the same routes any client calls.
// Error texts are the server's own (its `error` field), shown as they come:
// the console words no state reason or error of its own.
// A 403 "This API is restricted, expecting header '<key>'" (--http-restricted-api)
// asks for that header's value once and sends it with every later request; a
// 401 with WWW-Authenticate: Bearer (--http-auth-token-file) asks for the
// token and sends it as "Authorization: Bearer <token>".

const STORE = 'nodetron-console-keys';
const keys = new Map(JSON.parse(sessionStorage.getItem(STORE) ?? '[]'));
let asking; // one question at a time: { header, promise }

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** The server's error text of a failed response. */
async function errorText(res) {
  const text = await res.text();
  try {
    const body = JSON.parse(text);
    if (typeof body.error === 'string') return body.error;
  } catch { /* not JSON */ }
  return text !== '' ? text : `HTTP ${res.status}`;
}

function askKey(header, message, value = (v) => v, what = `value of ${header}`) {
  if (asking?.header === header) return asking.promise;
  const box = document.getElementById('key-form');
  const form = box.querySelector('form');
  const input = document.getElementById('key-value');
  document.getElementById('key-text').textContent = `${message}: ${what}`;
  box.hidden = false;
  input.value = '';
  input.focus();
  const promise = new Promise((resolve) => {
    form.onsubmit = (ev) => {
      ev.preventDefault();
      keys.set(header, value(input.value.trim()));
      sessionStorage.setItem(STORE, JSON.stringify([...keys]));
      box.hidden = true;
      asking = undefined;
      resolve();
    };
  });
  asking = { header, promise };
  return promise;
}

/**
 * `method path` with a JSON body (or none). Resolves with the parsed JSON,
 * the text (`as: 'text'`), or true (`as: 'ok'`: an empty 200); rejects with
 * ApiError carrying the server's text.
 */
export async function api(method, path, body, as = 'json') {
  for (;;) {
    const headers = Object.fromEntries(keys);
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (res.ok) {
      if (as === 'ok') return true;
      return as === 'text' ? res.text() : res.json();
    }
    const message = await errorText(res);
    const restricted = res.status === 403 ? /expecting header '([^']+)'/.exec(message) : null;
    if (restricted !== null) {
      await askKey(restricted[1], message);
      continue;
    }
    if (res.status === 401 && /^Bearer/i.test(res.headers.get('WWW-Authenticate') ?? '')) {
      await askKey('Authorization', message, (v) => `Bearer ${v}`, 'the token');
      continue;
    }
    throw new ApiError(res.status, message);
  }
}

export const get = (path, as) => api('GET', path, undefined, as);
export const post = (path, body, as) => api('POST', path, body, as);

/** A model's URL prefix, name escaped. */
export const modelPath = (name, version) =>
  `/v2/models/${encodeURIComponent(name)}${version === undefined || version === '' ? '' : `/versions/${encodeURIComponent(version)}`}`;

/** Show the server's text of a failure (or a note) above the page. */
export function notice(message, kind = 'error') {
  const el = document.getElementById('notice');
  el.textContent = message;
  el.className = kind === 'error' ? '' : 'info';
  el.hidden = message === '';
}

/** A tiny element builder: h('td', { className: 'x' }, 'text', child). */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el[k] = v;
    }
  }
  for (const c of children.flat()) if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}
