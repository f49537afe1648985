/**
 * Main-thread side of one frontend thread's requests, shared by the HTTP
 * threads (frontend/http/http-frontend.ts) and the gRPC thread
 * (frontend/grpc/grpc-link.ts): each `infer` the thread sent is routed with a
 * Respond that offers the thread's reply port (the direct path,
 * reply-rings.ts) and, for a response that comes back through main, gives
 * its outputs to the thread and sends `response` on the thread's ring
 * (protocol.ts, "Arena ownership"). A `cancel` names one of those requests
 * by its key: it is cancelled where it is (the canceller: the repository's
 * Scheduler.cancel), and still ends with its final response.
 */
import { toErrorInfo } from '../core/errors';
import type { InferRequest, Respond } from '../core/request';
import type { Arena } from './arena';
import type { CancelMessage, FrontendToMain, InferMessage, MainToFrontend } from './protocol';
import type { ReplyRings } from './reply-rings';
import type { RingWriter } from './ring';

/** What main keeps of a frontend thread. */
export interface FrontendThreadLink {
  /** worker.threadId, kept: it reads -1 once the thread has exited. */
  readonly threadId: number;
  /** Its port in the reply-ring table. */
  readonly replyPort: number;
  /** main → thread. */
  readonly out: RingWriter;
  /** False once the thread is gone: nothing more goes to its ring. */
  readonly alive: boolean;
  /** The requests it sent that the scheduler has not finished, by key. */
  readonly inflight: Map<number, InferRequest>;
}

export type FrontendRouter = (request: InferRequest, respond: Respond) => void;
/** Cancels a request the router took (server.ts: the repository's cancel). */
export type FrontendCanceller = (request: InferRequest) => void;

/** One message of a frontend thread's ring: a request to route, or the cancel of one it sent. */
export function routeFromFrontend(
  arena: Arena,
  replies: ReplyRings,
  link: FrontendThreadLink,
  msg: FrontendToMain,
  router: FrontendRouter,
  canceller: FrontendCanceller,
): void {
  if (!link.alive) return; // its inputs are the dead thread's: the sweep frees them
  if (msg.t === 'cancel') cancelFromFrontend(link, msg, canceller);
  else routeInfer(arena, replies, link, msg, router);
}

/**
 * The request is routed in a microtask (routeInfer), so the cancel waits for
 * one too: queued after the routing, it finds the request in its scheduler
 * even when both messages came in one drain of the ring. A key that already
 * finished (its response crossed the cancel) is not in flight: nothing.
 */
function cancelFromFrontend(link: FrontendThreadLink, msg: CancelMessage, canceller: FrontendCanceller): void {
  const request = link.inflight.get(msg.key);
  if (request === undefined) return;
  if (msg.answered === true) request.answered = true;
  queueMicrotask(() => {
    if (link.inflight.get(msg.key) !== request) return;
    try {
      canceller(request);
    } catch (err) {
      process.emitWarning(`cancel of a request of model '${request.model}' threw: ${toErrorInfo(err).message}`);
    }
  });
}

function routeInfer(arena: Arena, replies: ReplyRings, link: FrontendThreadLink, msg: InferMessage, router: FrontendRouter): void {
  const { key, request } = msg;
  link.inflight.set(key, request);
  const respond: Respond = (response) => {
    if (response.final) link.inflight.delete(key);
    if (response.delivered === true) {
      replies.delivered++; // the instance thread sent it to the frontend itself; no outputs here
      return;
    }
    const free = (): void => {
      for (const o of response.outputs) arena.free(o);
    };
    if (!link.alive) return free();
    // The frontend thread frees the outputs: hand them to it before sending.
    // A thread reported dead gets nothing.
    for (const o of response.outputs) {
      if (!arena.give(o, link.threadId)) return free();
    }
    // The route has written the version it chose into the request before any response.
    const reply: MainToFrontend = { t: 'response', key, version: request.version, response };
    link.out.send(reply);
  };
  // An offer: an instance thread that runs it may answer the frontend directly (core/request.ts Respond).
  respond.replyTo = { port: link.replyPort, key };
  // Routed after the microtasks already queued: one drain of the main inbox
  // can hold an instance's `executed` and, right behind it, the next request
  // of a client that already has its direct response; the pool frees that
  // instance in a promise callback, so routing at once would find it busy
  // and start a second instance (at c=1 the two then alternate, each with
  // cold caches, bench/README.md).
  queueMicrotask(() => {
    try {
      router(request, respond);
    } catch (err) {
      respond({ outputs: [], error: toErrorInfo(err), final: true });
    }
  });
}
