/**
 * The server-wide bound on client inference requests (--max-queued-requests,
 * nodetron's own): the requests the frontends have handed to the schedulers
 * and that have not had their final response yet, waiting in a queue or
 * running, over every model. One more than the bound is answered at once with
 * RESOURCE_EXHAUSTED (HTTP 429, gRPC RESOURCE_EXHAUSTED) and a retry hint
 * (core/errors.ts RETRY_AFTER_SECONDS), instead of waiting behind the others;
 * Triton's per-model `max_queue_size` (priority-queue.ts) still answers its
 * own "Exceeds maximum queue size" (429 too, naming max_queue_size) below this bound.
 *
 * It wraps the route the frontends enter (server.ts), so requests made inside
 * the server (ensemble steps, BLS) are not counted twice and are never
 * refused half-way through their parent. The count follows each request's
 * final response, which on the direct path (execution-pool.ts directReplies)
 * reaches main as the `delivered` notice: the reply offer is passed on.
 */
import { RETRY_AFTER_SECONDS, requestIdPrefix } from '../core/errors';
import type { InferRequest, Respond } from '../core/request';

export type Route = (request: InferRequest, respond: Respond) => void;

/** The decision, pure: may one more request enter while `held` are in? A limit of 0 means no bound. */
export function admitsAnother(held: number, limit: number): boolean {
  return limit <= 0 || held < limit;
}

/** Triton's queue-full text, then what is full and what to do. */
export function queueFullMessage(requestId: string, held: number, limit: number): string {
  return (
    `${requestIdPrefix(requestId)}Exceeds maximum queue size: the server holds ${held} inference requests, ` +
    `the most --max-queued-requests=${limit} allows; retry after ${RETRY_AFTER_SECONDS} s, ` +
    'or raise --max-queued-requests'
  );
}

export class QueueBound {
  private count = 0;

  constructor(readonly limit: number) {}

  /** Client requests in the server now (admitted, not finally answered). */
  held(): number {
    return this.count;
  }

  /** The route the frontends enter: `inner` unless the server is full. With no bound, `inner` itself. */
  route(inner: Route): Route {
    if (this.limit <= 0) return inner;
    return (request, respond) => {
      if (!admitsAnother(this.count, this.limit)) {
        respond({ outputs: [], error: { code: 'RESOURCE_EXHAUSTED', message: queueFullMessage(request.id, this.count, this.limit) }, final: true });
        return;
      }
      this.count++;
      let counted = true;
      const uncount = (): void => {
        if (!counted) return;
        counted = false;
        this.count--;
      };
      const counting: Respond = (response) => {
        if (response.final) uncount();
        respond(response);
      };
      if (respond.replyTo !== undefined) counting.replyTo = respond.replyTo;
      try {
        inner(request, counting);
      } catch (err) {
        uncount(); // the caller answers a throwing route itself (frontend-requests.ts)
        throw err;
      }
    };
  }
}
