/**
 * Main-thread side of one frontend thread's requests, shared by the HTTP
 * threads (frontend/http/http-frontend.ts) and the gRPC thread
 * (frontend/grpc/grpc-link.ts): each `infer` the thread sent is routed with a
 * Respond that offers the thread's reply port (the direct path,
 * reply-rings.ts) and, for a response that comes back through main, gives
 * its outputs to the thread and sends `response` on the thread's ring
 * (protocol.ts, "Arena ownership").
 */
import { toErrorInfo } from '../core/errors';
import type { InferRequest, Respond } from '../core/request';
import type { Arena } from './arena';
import type { FrontendToMain, MainToFrontend } from './protocol';
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
  /** Keys of the requests it sent that the scheduler has not finished. */
  readonly inflight: Set<number>;
}

export type FrontendRouter = (request: InferRequest, respond: Respond) => void;

export function routeFromFrontend(
  arena: Arena, replies: ReplyRings, link: FrontendThreadLink, msg: FrontendToMain, router: FrontendRouter,
): void {
  if (!link.alive) return; // its inputs are the dead thread's: the sweep frees them
  const { key, request } = msg;
  link.inflight.add(key);
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
