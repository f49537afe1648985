/**
 * HTTP routing as Triton does it (protocol.md §1.1): exact path match on the
 * raw path (query ignored), a version must be all digits, wrong method → 405,
 * unknown path → 404. Pure, so it is table-tested.
 */
export type Route =
  | { kind: 'health_live' }
  | { kind: 'health_ready' }
  | { kind: 'server_metadata' }
  | { kind: 'model_metadata'; model: string; version?: string }
  | { kind: 'model_ready'; model: string; version?: string }
  | { kind: 'model_config'; model: string; version?: string }
  | { kind: 'infer'; model: string; version?: string }
  | { kind: 'generate'; model: string; version?: string; stream: boolean }
  /** The OpenAI-compatible frontend (openai-handler.ts). */
  | { kind: 'openai_models'; model?: string }
  | { kind: 'openai_completions'; chat: boolean }
  | { kind: 'openai_embeddings' }
  | { kind: 'model_stats'; model?: string; version?: string }
  | { kind: 'model_trace'; model: string }
  | { kind: 'trace' }
  | { kind: 'logging' }
  | { kind: 'repository_index'; repository?: string }
  | { kind: 'repository_load'; repository?: string; model: string }
  | { kind: 'repository_unload'; repository?: string; model: string }
  /** OpenAPI description of the routes this server serves (openapi.ts), and of one model's inference (model-openapi.ts). */
  | { kind: 'openapi' }
  | { kind: 'model_openapi'; model: string; version?: string }
  /** nodetron's own, for the console: the metrics text on the HTTP port, and the server's status (console-status.ts). */
  | { kind: 'nodetron_metrics' }
  | { kind: 'nodetron_status' }
  /** nodetron's own: a model's last log lines (the console's model page); `after`: only lines after that sequence number. */
  | { kind: 'nodetron_model_log'; model: string; after: number }
  | { kind: 'shm'; flavor: 'system' | 'cuda'; region?: string; action: 'status' | 'register' | 'unregister' }
  | { kind: 'not_found' }
  | { kind: 'method_not_allowed' };

const MODEL_RE = /^\/v2\/models\/([^/]+)(?:\/versions\/([0-9]+))?(?:\/(infer|generate|generate_stream|ready|config|stats|trace\/setting|openapi\.json))?$/;
const MODEL_LOG_RE = /^\/v2\/nodetron\/models\/([^/]+)\/log$/;
const REPO_RE = /^\/v2\/repository(?:\/([^/]+))?\/(index|models\/([^/]+)\/(load|unload))$/;
const SHM_RE = /^\/v2\/(systemsharedmemory|cudasharedmemory)(?:\/region\/([^/]+))?\/(status|register|unregister)$/;

const GET = ['GET'];
const POST = ['POST'];
const GET_POST = ['GET', 'POST'];

/** A request target's path: what comes before its query (`?`), the whole target when it has none. */
export function urlPath(url: string): string {
  const q = url.indexOf('?');
  return q >= 0 ? url.slice(0, q) : url;
}

export function matchRoute(method: string, url: string): Route {
  const m = method.toUpperCase();
  const r = matchPath(urlPath(url));
  if (r === undefined) return { kind: 'not_found' };
  if (r.route.kind === 'nodetron_model_log') r.route.after = afterParam(url);
  return r.methods.includes(m) ? r.route : { kind: 'method_not_allowed' };
}

/** `?after=<seq>` of a model-log request: a non-negative integer, else 0 (everything kept). */
function afterParam(url: string): number {
  const m = /[?&]after=(\d{1,15})(?:&|$)/.exec(url);
  return m === null ? 0 : Number(m[1]);
}

/** The methods a URL's path answers (a CORS preflight's Allow-Methods), or undefined for an unknown path. */
export function routeMethods(url: string): readonly string[] | undefined {
  return matchPath(urlPath(url))?.methods;
}

function matchPath(path: string): { route: Route; methods: string[] } | undefined {
  switch (path) {
    case '/v2':
      return { route: { kind: 'server_metadata' }, methods: GET };
    case '/v2/health/live':
      return { route: { kind: 'health_live' }, methods: GET };
    case '/v2/health/ready':
      return { route: { kind: 'health_ready' }, methods: GET };
    case '/v2/models/stats':
      return { route: { kind: 'model_stats' }, methods: GET };
    case '/v2/logging':
      return { route: { kind: 'logging' }, methods: GET_POST };
    case '/v2/trace/setting':
      return { route: { kind: 'trace' }, methods: GET_POST };
    case '/v2/openapi.json':
      return { route: { kind: 'openapi' }, methods: GET };
    case '/v2/nodetron/metrics':
      return { route: { kind: 'nodetron_metrics' }, methods: GET };
    case '/v2/nodetron/status':
      return { route: { kind: 'nodetron_status' }, methods: GET };
    case '/v1/models':
      return { route: { kind: 'openai_models' }, methods: GET };
    case '/v1/completions':
      return { route: { kind: 'openai_completions', chat: false }, methods: POST };
    case '/v1/chat/completions':
      return { route: { kind: 'openai_completions', chat: true }, methods: POST };
    case '/v1/embeddings':
      return { route: { kind: 'openai_embeddings' }, methods: POST };
    default:
      break;
  }
  const log = MODEL_LOG_RE.exec(path);
  if (log) {
    const model = decode(log[1]);
    return model === undefined ? undefined : { route: { kind: 'nodetron_model_log', model, after: 0 }, methods: GET };
  }
  if (path.startsWith('/v1/models/')) {
    const model = decode(path.slice('/v1/models/'.length));
    return model === undefined || model === '' || model.includes('/') ? undefined : { route: { kind: 'openai_models', model }, methods: GET };
  }
  let mm = MODEL_RE.exec(path);
  if (mm) {
    const model = decode(mm[1]);
    if (model === undefined) return undefined;
    const version = mm[2];
    switch (mm[3]) {
      case undefined:
        return { route: { kind: 'model_metadata', model, version }, methods: GET };
      case 'ready':
        return { route: { kind: 'model_ready', model, version }, methods: GET };
      case 'config':
        return { route: { kind: 'model_config', model, version }, methods: GET };
      case 'stats':
        return { route: { kind: 'model_stats', model, version }, methods: GET };
      case 'infer':
        return { route: { kind: 'infer', model, version }, methods: POST };
      case 'generate':
      case 'generate_stream':
        return { route: { kind: 'generate', model, version, stream: mm[3] === 'generate_stream' }, methods: POST };
      case 'openapi.json':
        return { route: { kind: 'model_openapi', model, version }, methods: GET };
      case 'trace/setting':
        return version === undefined ? { route: { kind: 'model_trace', model }, methods: GET_POST } : undefined;
      default:
        return undefined;
    }
  }
  mm = REPO_RE.exec(path);
  if (mm) {
    const repository = mm[1] === undefined ? undefined : decode(mm[1]);
    if (mm[2] === 'index') return { route: { kind: 'repository_index', repository }, methods: POST };
    const model = decode(mm[3]);
    if (model === undefined) return undefined;
    return { route: { kind: mm[4] === 'load' ? 'repository_load' : 'repository_unload', repository, model }, methods: POST };
  }
  mm = SHM_RE.exec(path);
  if (mm) {
    const action = mm[3] as 'status' | 'register' | 'unregister';
    const region = mm[2] === undefined ? undefined : decode(mm[2]);
    return {
      route: { kind: 'shm', flavor: mm[1] === 'systemsharedmemory' ? 'system' : 'cuda', region, action },
      methods: action === 'status' ? GET : POST,
    };
  }
  return undefined;
}

function decode(s: string): string | undefined {
  try {
    return decodeURIComponent(s);
  } catch {
    return undefined;
  }
}
