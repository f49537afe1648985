// The console's entry: the header, and one view per location hash:
// #/ the model table, #/models/<name> one model, #/server the server.
import { ApiError, get, notice } from './api.js';
import { ModelTable } from './models.js';
import { modelView } from './model.js';
import { serverView } from './server.js';

const view = document.getElementById('view');
let leave; // the current view's cleanup (timers, charts)
let generation = 0;

async function health() {
  const badge = document.getElementById('server-health');
  const ready = await get('/v2/health/ready', 'ok').catch(() => false);
  badge.textContent = ready ? 'ready' : 'not ready';
  badge.className = `badge ${ready ? 'state-READY' : 'state-UNAVAILABLE'}`;
}

async function show() {
  const mine = ++generation;
  leave?.();
  leave = undefined;
  notice('');
  try {
    const status = await get('/v2/nodetron/status');
    if (mine !== generation) return;
    const hash = location.hash.replace(/^#/, '') || '/';
    const model = /^\/models\/(.+)$/.exec(hash);
    if (model !== null) {
      leave = await modelView(view, decodeURIComponent(model[1]), status);
    } else if (hash === '/server') {
      await serverView(view, status);
    } else {
      const table = new ModelTable(view, status);
      await table.refresh();
      // Each index request rescans the repository folders: every 3 s is enough to see states move.
      const timer = setInterval(() => void table.refresh().catch((err) => notice(err.message)), 3000);
      leave = () => clearInterval(timer);
    }
  } catch (err) {
    notice(err instanceof ApiError ? err.message : String(err));
  }
}

async function start() {
  try {
    const meta = await get('/v2');
    document.getElementById('server-name').textContent = `${meta.name} ${meta.version}`;
  } catch (err) {
    notice(err instanceof ApiError ? err.message : String(err));
  }
  void health();
  setInterval(() => void health(), 5000);
  window.addEventListener('hashchange', () => void show());
  await show();
}

void start();
