/**
 * The main thread's data-plane link to one gRPC thread: its ring pair,
 * the requests it sent that the scheduler has not finished, and what
 * happens to them when the thread dies. `infer` in → the scheduler's route
 * (`cancel` in → the canceller, for a request the client cancelled);
 * each response → its outputs given to the gRPC thread (Arena.give, the
 * rules in src/dataplane/protocol.ts) → ring message `response`, unless the
 * instance thread sent it there itself (the direct path: the link offers the
 * thread's reply port with every request and gets a `delivered` note).
 */
import type { InferRequest, Respond } from '../../core/request';
import type { Arena } from '../../dataplane/arena';
import type { MainPort } from '../../dataplane/main-port';
import type { FrontendToMain } from '../../dataplane/protocol';
import type { ReplyRingNotice } from '../../dataplane/reply-rings';
import { routeFromFrontend, type FrontendCanceller, type FrontendThreadLink } from '../../dataplane/frontend-requests';
import { RingWriter, createRing } from '../../dataplane/ring';
import type { RingHandle } from '../../dataplane/ring';

/** Where a request goes: the scheduler of its model version (server.ts `route`). */
export type GrpcRouter = (request: InferRequest, respond: Respond) => void;

/** Its fields are what `routeFromFrontend` reads (FrontendThreadLink). */
export class GrpcLink implements FrontendThreadLink {
  readonly toMain: RingHandle;
  readonly fromMain: RingHandle;
  readonly out: RingWriter;
  /** The thread's worker.threadId, kept: it reads -1 once the thread has exited. */
  threadId = -1;
  /** False once the thread is gone: nothing more is written to its ring. */
  alive = true;
  /** The requests the thread sent that the scheduler has not finished, by key. */
  readonly inflight = new Map<number, InferRequest>();

  constructor(
    private readonly port: MainPort,
    private readonly arena: Arena,
    private readonly router: GrpcRouter,
    private readonly canceller: FrontendCanceller,
  ) {
    this.toMain = createRing(port.bell);
    this.fromMain = createRing(port.bells.create());
    this.out = RingWriter.attach(this.fromMain);
  }

  /** Its port in the reply-ring table: instance threads answer it directly there (dataplane/reply-rings.ts). */
  replyPort = 0;

  /** The thread started: read its ring; instance threads get rings to it (announced to it by `post`). */
  attach(threadId: number, post: (notice: ReplyRingNotice) => void): void {
    this.threadId = threadId;
    this.replyPort = this.port.replies.addFrontend(threadId, this.fromMain.bell, post);
    this.port.inbox.add(this.toMain, (msg: FrontendToMain) => this.onRequest(msg));
  }

  /**
   * The thread exited (died, or stopped). Requests it sent and the scheduler
   * has not seen are dropped; nothing more goes to its ring; the arena
   * sweeps every block it owned (the inputs it admitted, the outputs given
   * to it, in its rings or not); outputs of its requests still in the
   * scheduler are freed as they finish (onRequest's respond). Idempotent.
   */
  gone(): void {
    if (!this.alive) return;
    this.alive = false;
    this.port.inbox.drain(); // what it sent before exiting: dropped (onRequest)
    this.port.inbox.remove(this.toMain);
    this.out.close();
    this.port.replies.removeFrontend(this.replyPort);
    this.port.bells.retire(this.fromMain.bell); // its wake-up counters stay in the server's totals
    if (this.threadId >= 0) this.arena.threadDied(this.threadId);
  }

  private onRequest(msg: FrontendToMain): void {
    routeFromFrontend(this.arena, this.port.replies, this, msg, this.router, this.canceller);
  }
}
