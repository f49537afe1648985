/**
 * Entry of one HTTP thread: an HTTP/1.1 server (http-server.ts) on its
 * descriptor of the shared port. It
 * answers health, metadata, config and ready from its copy of the server
 * snapshot, and sends inference requests to the main thread over its ring.
 * Responses come back on that ring's partner from main, or straight from the
 * instance thread that ran the request, on a ring of that pair. Instances
 * main places here (hosted-instances.ts) run requests that arrive here
 * without either hop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ServerError } from '../../core/errors';
import { forwardPatternRegExp } from '../../core/forward-pattern';
import { Arena } from '../../dataplane/arena';
import type { MainToFrontend } from '../../dataplane/protocol';
import type { RefusedRequest } from '../../core/request';
import { applyReplyRingNotice } from '../../dataplane/reply-rings';
import { Inbox, RingWriter } from '../../dataplane/ring';
import { nameThisThread } from '../../dataplane/thread-name';
import { lookupModel, readyVersions } from '../../request/model-lookup';
import { modelMetadataJson } from '../model-metadata';
import { emptySnapshot } from '../../request/server-snapshot';
import type { ServerSnapshot } from '../../request/server-snapshot';
import type { HttpThreadData, HttpToMain, MainToHttp } from './http-control';
import { CodecPool } from './codec-pool';
import { ControlForwarder } from './control-forward';
import { InferHandler, sendError } from './infer-handler';
import { GenerateHandler } from './generate-handler';
import { EmbeddingsHandler } from './openai-embeddings';
import { asOpenAIError, OpenAIHandler, sendOpenAIError } from './openai-handler';
import { OpenAIError } from './openai-request';
import { openaiRestricted, restrictedError } from './restricted-api';
import { ConsoleAssets } from './console-assets';
import { corsHeaders, preflight } from './cors';
import { serverOpenApi } from './openapi';
import { modelOpenApi } from './model-openapi';
import { matchRoute, urlPath } from './routes';
import { type Reply, type RequestHead, readBody } from './http-reply';
import { HttpServer } from './http-server';
import { HostedInstances } from './hosted-instances';
import { BearerAuth } from './bearer-auth';

const data = workerData as HttpThreadData;
nameThisThread(`nt:http-${data.index}`);
const port = parentPort!;
let snapshot: ServerSnapshot = emptySnapshot();
const serverMetadata = JSON.stringify({ name: data.serverName, version: data.serverVersion, extensions: data.extensions });
const corsOrigins = data.corsOrigins ?? [];
const consoleAssets = data.consolePath === undefined ? undefined : ConsoleAssets.load(data.consolePath);
// Bearer tokens of each port (bearer-auth.ts); absent: no token asked.
const httpAuth = data.authTokens === undefined ? undefined : new BearerAuth(data.authTokens, '--http-auth-token-file', data.authExemptHealth === true);
const openaiAuth =
  data.openaiAuthTokens === undefined
    ? undefined
    : new BearerAuth(data.openaiAuthTokens, data.openaiAuthFlag ?? '--http-auth-token-file', data.authExemptHealth === true);
const openApi = serverOpenApi({ name: data.serverName, version: data.serverVersion, extensions: data.extensions, restricted: data.restrictedApi ?? [] });
const arena = Arena.attach(data.arena);
const codec = new CodecPool(data.codecOffloadBytes, { index: data.index, arena: data.arena });
const accessLog = data.accessLog === true ? (entry: RefusedRequest): void => post({ t: 'access', entry }) : undefined;
const forwardPattern = data.headerForwardPattern === undefined ? undefined : forwardPatternRegExp('http-header-forward-pattern', data.headerForwardPattern);
const infer = new InferHandler(
  arena,
  RingWriter.attach(data.toMain, { deferBell: true }),
  data.maxInputSize,
  data.maxJsonResponseSize,
  () => snapshot,
  codec,
  accessLog,
  forwardPattern,
);
const generate = new GenerateHandler(arena, infer, data.maxInputSize, data.maxJsonResponseSize, () => snapshot, forwardPattern, accessLog);
const openai = new OpenAIHandler(arena, infer, data.maxInputSize, () => snapshot);
const embeddings = new EmbeddingsHandler(arena, infer, data.maxInputSize, () => snapshot, openai.texts);
const inbox = new Inbox(data.fromMain.bell);
const onResponse = (msg: MainToFrontend): void => infer.onResponse(msg.key, msg.response, msg.version);
inbox.add(data.fromMain, onResponse);
inbox.start();
// Instances main places on this thread (hosted-instances.ts). With --log-access
// every request goes through main, whose route writes its access line.
const hosted = new HostedInstances(arena, inbox);
if (data.accessLog !== true) infer.hosted = hosted;

/** Requests between arrival and their response (or abort), body uploads included. */
let active = 0;
function finished(): void {
  active--;
}
/** When the last request arrived: requests still in flight on the wire get their answer too. */
let lastArrivalMs = 0;
const QUIET_MS = 100;
/**
 * Idle, and no request arrived for QUIET_MS (so none is half-way through the
 * socket): 0. Or `deadline()` passed first: the requests still unanswered,
 * which closing the connections cuts.
 */
async function whenQuiet(deadline: () => number): Promise<number> {
  for (;;) {
    const now = Date.now();
    if (active === 0 && now - lastArrivalMs >= QUIET_MS) return 0;
    if (now >= deadline()) return active;
    await new Promise((r) => setTimeout(r, Math.max(1, Math.min(10, deadline() - now))));
  }
}
/**
 * Set by `close` (server stop, after its grace period): requests arriving
 * from then on are refused, and the connections close once the received
 * ones are answered, at this time (ms) at the latest.
 */
let closeBy: number | undefined;
const warn = (message: string): void => post({ t: 'warn', message: `HTTP thread ${data.index}: ${message}` });
// Both ports' connections count against --http-max-connections, in this thread's slot of the shared count.
const connections = { slots: new Int32Array(data.connections), index: data.index };
const server = new HttpServer((reply, head) => route(reply, head), undefined, data.edge, warn, connections);
/** --openai-port's server: the OpenAI-compatible routes only (openai-port-routes). */
const openaiServer = new HttpServer((reply, head) => routeOpenAI(reply, head), undefined, data.edge, warn, connections);

// An uncaught error closes the listen socket and every connection (their
// clients see a reset), says why, and exits; the main thread starts a
// replacement (http-frontend.ts).
let dying = false;
function die(err: unknown): void {
  if (dying) return;
  dying = true;
  inbox.stop();
  server.close();
  openaiServer.close();
  post({ t: 'fatal', reason: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  setImmediate(() => process.exit(1));
}
process.on('uncaughtException', die);
process.on('unhandledRejection', die);
const crashRoute = data.faults?.includes('http-crash') === true;

function post(msg: HttpToMain): void {
  port.postMessage(msg);
}
const control = new ControlForwarder(post, data.maxInputSize);

port.on('message', (msg: MainToHttp) => {
  switch (msg.t) {
    case 'snapshot':
      snapshot = msg.snapshot;
      openai.warm(snapshot);
      return;
    case 'host_instance':
      hosted.host(msg);
      return;
    case 'control_reply':
      control.onReply(msg);
      return;
    case 'reply_ring_add':
    case 'reply_ring_remove':
      // Responses straight from an instance thread (dataplane/reply-rings.ts).
      applyReplyRingNotice(inbox, msg, onResponse);
      return;
    case 'listen':
      (msg.openai === true ? openaiServer : server).listen(msg.fd).then(
        (bound) => post({ t: 'listening', port: bound }),
        (err: Error) => post({ t: 'listen_failed', message: `could not listen on the HTTP port's descriptor ${msg.fd}: ${err.message}` }),
      );
      return;
    case 'close': {
      // The grace period is over (server-stop.ts): no new connections, new
      // requests refused, the received ones answered; then every connection
      // closes. A second `close` (a forced stop) only brings the time forward.
      const by = Date.now() + msg.graceMs;
      if (closeBy !== undefined) {
        closeBy = Math.min(closeBy, by);
        return;
      }
      closeBy = by;
      server.stopListening();
      openaiServer.stopListening();
      void whenQuiet(() => closeBy!).then(async (cut) => {
        server.close();
        openaiServer.close();
        inbox.stop();
        await Promise.all([codec.close(), hosted.closeAll()]);
        post({ t: 'closed', cut });
      });
      return;
    }
    default:
      return;
  }
});

/** Counts the request as active; false when the thread is closing (the request is then refused). */
function arrive(reply: Reply, head: RequestHead): boolean {
  active++;
  lastArrivalMs = Date.now();
  reply.onFinished = finished;
  // Closing: a request on a connection still open is refused and the
  // connection closed, so its client goes to another replica (its body is
  // read first: closing while the client still sends shows it EPIPE).
  if (closeBy !== undefined) {
    const refuse = (): void => reply.error(503, 'Server exiting', true);
    if (head.contentLength === '' && head.transferEncoding === '') refuse();
    else readBody(reply, head, data.maxInputSize, refuse);
    return false;
  }
  return true;
}

/**
 * A request on --openai-port: the /v1 routes and `/health/ready` (as
 * Triton's OpenAI frontend serves), else 404 in OpenAI's error shape.
 * --http-restricted-api and CORS are the HTTP port's, not this one's.
 */
function routeOpenAI(reply: Reply, head: RequestHead): void {
  if (!arrive(reply, head)) return;
  const r = matchRoute(head.method, head.url);
  const health = urlPath(head.url) === '/health/ready';
  if (openaiAuth?.refused(reply, head, health) === true) return;
  const denied = openaiRestricted(data.openaiRestrictedApi ?? [], r, health, head.header);
  if (denied !== undefined) return sendOpenAIError(reply, new OpenAIError(401, denied, null, 'restricted_api'));
  try {
    if (r.kind === 'openai_models') return openai.models(reply, r.model);
    if (r.kind === 'openai_completions') return openai.handle(reply, head, r.chat ? 'chat' : 'completion');
    if (r.kind === 'openai_embeddings') return embeddings.handle(reply, head);
    if (health && head.method === 'GET') {
      return reply.send(snapshot.ready && !snapshot.exiting ? 200 : 503, { 'Content-Type': 'text/plain' }, '');
    }
    const status = r.kind === 'method_not_allowed' ? 405 : 404;
    sendOpenAIError(
      reply,
      new OpenAIError(
        status,
        status === 405
          ? `${head.method} is not allowed on ${head.url}`
          : `${head.url} is not served on the OpenAI port: it serves GET /v1/models, POST /v1/completions, POST /v1/chat/completions, POST /v1/embeddings and GET /health/ready (the KServe v2 API is on the HTTP port)`,
      ),
    );
  } catch (err) {
    sendOpenAIError(reply, asOpenAIError(err));
  }
}

function route(reply: Reply, head: RequestHead): void {
  if (!arrive(reply, head)) return;
  if (corsOrigins.length > 0) {
    reply.extraHeaders = corsHeaders(corsOrigins, head.header('origin').trim());
    // A preflight is answered before the restricted-API check: browsers never send the key on one.
    const pre = preflight(corsOrigins, head.method, head.url, head.header);
    if (pre !== undefined) {
      reply.extraHeaders = undefined;
      if (pre.error === undefined) reply.send(pre.status, pre.headers, '');
      else reply.send(pre.status, { ...pre.headers, 'Content-Type': 'application/json' }, JSON.stringify({ error: pre.error }));
      return;
    }
  }
  if (consoleAssets?.owns(head.url) === true) {
    const a = consoleAssets.answer(head.method, head.url);
    reply.send(a.status, a.headers, a.body);
    return;
  }
  if (httpAuth?.refused(reply, head, urlPath(head.url).startsWith('/v2/health/')) === true) return;
  // Restricted API before the method check (protocol.md §1.1).
  const denied = restrictedError(data.restrictedApi ?? [], head.url, head.header);
  if (denied !== undefined) return reply.error(403, denied);
  if (crashRoute && head.method === 'POST' && head.url === '/nodetron-test/crash') {
    setImmediate(() => {
      throw new Error('fault injected: POST /nodetron-test/crash (NODETRON_TEST_FAULTS=http-crash)');
    });
    return;
  }
  const r = matchRoute(head.method, head.url);
  try {
    switch (r.kind) {
      case 'health_live':
      case 'health_ready': {
        if (snapshot.exiting) throw new ServerError('UNAVAILABLE', 'Server exiting');
        const ok = r.kind === 'health_live' ? snapshot.live : snapshot.ready;
        reply.send(ok ? 200 : 400, { 'Content-Type': 'text/plain' }, '');
        return;
      }
      case 'server_metadata':
        reply.json(200, serverMetadata);
        return;
      case 'model_metadata': {
        const { view } = lookupModel(snapshot, r.model, r.version, 'loaded');
        const versions = r.version !== undefined ? [String(Number(r.version))] : readyVersions(view);
        reply.json(200, modelMetadataJson(view.config!, versions));
        return;
      }
      case 'model_ready': {
        if (!snapshot.live) throw new ServerError('UNAVAILABLE', 'Server not ready');
        lookupModel(snapshot, r.model, r.version);
        reply.send(200, { 'Content-Type': 'text/plain' }, '');
        return;
      }
      case 'model_config': {
        const { view } = lookupModel(snapshot, r.model, r.version, 'loaded');
        reply.json(200, view.configJson ?? '{}');
        return;
      }
      case 'infer':
        infer.handle(reply, head, r.model, r.version);
        return;
      case 'generate':
        generate.handle(reply, head, r.model, r.version, r.stream);
        return;
      case 'openai_models':
        openai.models(reply, r.model);
        return;
      case 'openai_completions':
        openai.handle(reply, head, r.chat ? 'chat' : 'completion');
        return;
      case 'openai_embeddings':
        embeddings.handle(reply, head);
        return;
      case 'openapi':
        reply.json(200, openApi);
        return;
      case 'model_openapi': {
        const { view } = lookupModel(snapshot, r.model, r.version, 'loaded');
        reply.json(200, modelOpenApi(view.config!, data.serverVersion, data.restrictedApi ?? []));
        return;
      }
      case 'model_stats':
      case 'logging':
      case 'trace':
      case 'model_trace':
      case 'repository_index':
      case 'repository_load':
      case 'repository_unload':
      case 'shm':
      case 'nodetron_metrics':
      case 'nodetron_status':
      case 'nodetron_model_log':
        control.handle(reply, head, r);
        return;
      case 'not_found':
        reply.error(404, 'Not Found');
        return;
      case 'method_not_allowed':
        reply.error(405, 'Method Not Allowed');
        return;
      default:
        throw new ServerError('UNSUPPORTED', `${head.url}: this endpoint is not implemented by nodetron yet`);
    }
  } catch (err) {
    sendError(reply, err);
  }
}
