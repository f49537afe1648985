/**
 * Entry of the gRPC thread (`nt:grpc`): owns the grpc-js server and its
 * port. Health, metadata, config and ready are answered from its copy of
 * the server snapshot; inferences are decoded, validated and admitted into
 * the arena here and go to the main thread's scheduler over the thread's
 * ring (ring-route.ts), and their responses are encoded here; the control
 * rpcs are forwarded to the main thread (control-forward.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { toErrorInfo } from '../../core/errors';
import { forwardPatternRegExp } from '../../core/forward-pattern';
import type { RefusedRequest } from '../../core/request';
import { Arena } from '../../dataplane/arena';
import type { MainToFrontend } from '../../dataplane/protocol';
import { applyReplyRingNotice } from '../../dataplane/reply-rings';
import { Inbox, RingWriter } from '../../dataplane/ring';
import { nameThisThread } from '../../dataplane/thread-name';
import { emptySnapshot } from '../../request/server-snapshot';
import type { ServerSnapshot } from '../../request/server-snapshot';
import { ControlForwarder } from './control-forward';
import { GrpcServer } from './grpc-server';
import type { GrpcThreadData, GrpcToMain, MainToGrpc } from './grpc-thread-protocol';
import { RingRoute } from './ring-route';

const data = workerData as GrpcThreadData;
nameThisThread('nt:grpc');
const port = parentPort!;
let snapshot: ServerSnapshot = emptySnapshot();
const arena = Arena.attach(data.arena);
const ring = new RingRoute(arena, RingWriter.attach(data.toMain, { deferBell: true }));
const inbox = new Inbox(data.fromMain.bell);
const onResponse = (msg: MainToFrontend): void => ring.onResponse(msg);
inbox.add(data.fromMain, onResponse);
inbox.start();

function post(msg: GrpcToMain): void {
  port.postMessage(msg);
}
const control = new ControlForwarder(post);
const server = new GrpcServer(
  {
    options: data.options,
    snapshot: () => snapshot,
    route: (request, respond) => ring.route(request, respond),
    arena,
    serverName: data.serverName,
    serverVersion: data.serverVersion,
    extensions: data.extensions,
    warn: (message: string) => post({ t: 'warn', message: `GRPC thread: ${message}` }),
    ...(data.accessLog === true ? { access: (entry: RefusedRequest) => post({ t: 'access', entry }) } : {}),
    ...(data.options.grpcHeaderForwardPattern !== undefined
      ? { forward: forwardPatternRegExp('grpc-header-forward-pattern', data.options.grpcHeaderForwardPattern) }
      : {}),
  },
  control.handlers(data.forwarded),
  data.faults?.includes('grpc-crash') === true,
);

// An uncaught error closes the port and every connection (their clients
// see UNAVAILABLE), says why, and exits; the main thread sweeps the arena
// blocks this thread owned and starts a replacement (grpc-frontend.ts).
let dying = false;
function die(err: unknown): void {
  if (dying) return;
  dying = true;
  inbox.stop();
  try {
    server.forceShutdown();
  } finally {
    post({ t: 'fatal', reason: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    setImmediate(() => process.exit(1));
  }
}
process.on('uncaughtException', die);
process.on('unhandledRejection', die);

let stopRequested = false;
port.on('message', (msg: MainToGrpc) => {
  switch (msg.t) {
    case 'snapshot':
      snapshot = msg.snapshot;
      return;
    case 'control_answer':
      control.onAnswer(msg);
      return;
    case 'reply_ring_add':
    case 'reply_ring_remove':
      // Responses straight from an instance thread (dataplane/reply-rings.ts).
      applyReplyRingNotice(inbox, msg, onResponse);
      return;
    case 'listen':
      server.bind(msg.address, msg.port).then(
        (bound) => post({ t: 'listening', port: bound }),
        (err: unknown) => post({ t: 'listen_failed', message: toErrorInfo(err).message }),
      );
      return;
    case 'stop':
      // Calls in flight finish (their responses still come over the ring)
      // unless the timeout forces them; a second `stop` brings the force forward.
      if (stopRequested) {
        void server.stop(msg.timeoutMs);
        return;
      }
      stopRequested = true;
      void server.stop(msg.timeoutMs).then((forced) => {
        const cut = forced ? ring.inflight : 0;
        inbox.stop();
        post({ t: 'stopped', cut });
      });
      return;
    default:
      return;
  }
});
