/**
 * The gRPC thread's route to the scheduler: an admitted request goes to the
 * main thread as a ring message `infer` (src/dataplane/protocol.ts), and
 * each `response` with its key comes back to the request's respond
 * callback, with the version main chose written into the request first (as
 * the main thread's route does). The outputs arrive given to this thread;
 * the caller (infer-runner.ts) frees them, and the inputs after the final
 * response. A request whose call is cancelled sends `cancel` with its key;
 * it still ends with its final `response`.
 */
import { toErrorInfo } from '../../core/errors';
import type { InferRequest, Respond } from '../../core/request';
import type { Arena } from '../../dataplane/arena';
import type { FrontendToMain, MainToFrontend } from '../../dataplane/protocol';
import type { RingWriter } from '../../dataplane/ring';
import { releaseOutputs } from '../../request/admit-request';

interface Pending {
  request: InferRequest;
  respond: Respond;
}

export class RingRoute {
  private nextKey = 1;
  private readonly pending = new Map<number, Pending>();

  constructor(
    private readonly arena: Arena,
    private readonly toMain: RingWriter,
  ) {}

  /** Requests sent whose final response has not come. */
  get inflight(): number {
    return this.pending.size;
  }

  /** Sends the request; returns its cancel (a no-op once its final response came). */
  route(request: InferRequest, respond: Respond): () => void {
    const key = this.nextKey++;
    this.pending.set(key, { request, respond });
    const msg: FrontendToMain = { t: 'infer', key, request };
    try {
      this.toMain.send(msg);
    } catch (err) {
      // Not sent: answer it here, so the caller frees its inputs.
      this.pending.delete(key);
      respond({ outputs: [], error: toErrorInfo(err), final: true });
    }
    return () => this.cancel(key);
  }

  /** The call of request `key` was cancelled (or its deadline passed): main cancels it where it is. */
  private cancel(key: number): void {
    if (!this.pending.has(key)) return;
    const msg: FrontendToMain = { t: 'cancel', key };
    this.toMain.send(msg);
  }

  /** A ring message from the main thread. */
  onResponse(msg: MainToFrontend): void {
    const p = this.pending.get(msg.key);
    if (p === undefined) {
      releaseOutputs(this.arena, msg.response.outputs);
      return;
    }
    if (msg.response.final) this.pending.delete(msg.key);
    // A `latest` request may have run on a newer version than this thread picked.
    p.request.version = msg.version;
    p.respond(msg.response);
  }
}
