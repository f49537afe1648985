/**
 * --http-cors-origin: cross-origin access to the KServe routes from a page
 * served elsewhere (Triton has none: server#5971; off unless the flag is
 * given). A request whose Origin is allowed gets Access-Control-Allow-Origin
 * on its answer, whatever the route; a preflight (OPTIONS with
 * Access-Control-Request-Method) on a known route is answered here, before
 * the restricted-API check, since a browser never sends the API key on a
 * preflight. Pure, so it is table-tested.
 */
import { routeMethods, urlPath } from './routes';

/** Response headers a browser's script may read besides the safelisted ones. */
const EXPOSED = 'Inference-Header-Content-Length, Content-Encoding';
/** How long (s) a browser may keep a preflight's answer. */
const MAX_AGE = '600';

/**
 * The CORS headers for an answer to a request from `origin` ('' when the
 * request had no Origin header), or undefined when it gets none: CORS off,
 * no Origin, or an origin not in the list. `*` in the list allows any.
 */
export function corsHeaders(allowed: readonly string[], origin: string): Record<string, string> | undefined {
  if (allowed.length === 0 || origin === '') return undefined;
  if (allowed.includes('*')) return { 'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': EXPOSED };
  if (!allowed.includes(origin)) return undefined;
  return { 'Access-Control-Allow-Origin': origin, Vary: 'Origin', 'Access-Control-Expose-Headers': EXPOSED };
}

export interface PreflightAnswer {
  status: number;
  headers: Record<string, string>;
  /** An error text for a refused preflight; absent on 204. */
  error?: string;
}

/**
 * The answer to `OPTIONS url`, or undefined when it is not a preflight this
 * policy answers (CORS off, no Access-Control-Request-Method, unknown path):
 * the request then goes on as any other (405 or 404). `header(name)` reads
 * a request header by its lower-case name ('' when absent).
 */
export function preflight(allowed: readonly string[], method: string, url: string, header: (name: string) => string): PreflightAnswer | undefined {
  if (allowed.length === 0 || method !== 'OPTIONS') return undefined;
  const wanted = header('access-control-request-method').trim();
  if (wanted === '') return undefined;
  const methods = routeMethods(url);
  if (methods === undefined) return undefined;
  const origin = header('origin').trim();
  const cors = corsHeaders(allowed, origin);
  if (cors === undefined) {
    return {
      status: 403,
      headers: {},
      error: `origin '${origin}' is not allowed to call this server; allowed by --http-cors-origin: ${allowed.join(', ')}`,
    };
  }
  const headers: Record<string, string> = {
    ...cors,
    'Access-Control-Allow-Methods': methods.join(', '),
    'Access-Control-Max-Age': MAX_AGE,
  };
  // Any request header may follow (Content-Type, Inference-Header-Content-Length, a restricted API's key).
  const asked = header('access-control-request-headers').trim();
  if (asked !== '') headers['Access-Control-Allow-Headers'] = asked;
  if (!methods.includes(wanted.toUpperCase())) {
    return { status: 405, headers, error: `${urlPath(url)} answers ${methods.join(', ')}, not ${wanted}` };
  }
  return { status: 204, headers };
}
