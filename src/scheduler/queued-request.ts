/**
 * One admitted request as its scheduler and the execution pool see it, from
 * enqueue to its final response: its queue times (batch decisions), its
 * place in dispatch order (ordered-release.ts), what its responses did so
 * far (response_stats), and the marks the schedulers set (a sequence's
 * padding row, a rescheduled request, a failure reason).
 */
import type { ExecuteTimings, InferRequest, InferResponse, Respond } from '../core/request';
import type { QueuedView } from './batch-decision';
import type { OrderSlot } from './ordered-release';
import type { FailureReason } from './scheduler-hooks';

/** One admitted request, from enqueue to its final response. */
export class QueuedRequest implements QueuedView, OrderSlot {
  readonly batchSize: number;
  readonly enqueuedUs: number;
  /** Compute timestamps of the execution that ran it, once it ran. */
  timings: ExecuteTimings | null = null;
  held: InferResponse[] | null = null;
  finalSeen = false;
  inOrder = false;
  /** Final response handed out; nothing more goes to `respond`. */
  done = false;
  /** Responses handed out so far, and when the last one (or the dispatch) was: response_stats. */
  responses = 0;
  lastResponseNs = 0;
  /** A non-final response was seen: the request streams (decoupled model). */
  streaming = false;
  /**
   * A not-ready row of a direct sequence batch (sequence-padding.ts): it
   * runs with the batch, but it is no client's request, so it is not counted
   * in flight nor in the statistics, and nothing waits for its order.
   */
  padding = false;
  /**
   * Back in its scheduler's queue after its model released it with
   * RESCHEDULE (`ExecutionPoolOptions.reschedule`): the pool still counts it
   * in flight, so its next dispatch must not admit it again.
   */
  rescheduled = false;
  /**
   * A cancel reached it while an instance held it (`ExecutionPool.cancelRunning`):
   * should its model reschedule it anyway, it is cancelled as it goes back
   * to its scheduler's queue rather than run again.
   */
  cancelRequested = false;

  /** Why it failed, when not by its execution's error (statistics: scheduler-hooks.ts `failure`). */
  failure: FailureReason | undefined = undefined;
  /**
   * The request as the scheduler got it: what a cancel names (`request` may
   * carry added inputs: the sequence batcher's controls and state).
   */
  origin: InferRequest;

  constructor(
    /** Not readonly: the sequence batcher adds implicit state inputs at dispatch (sequence-state.ts). */
    public request: InferRequest,
    readonly respond: Respond,
    readonly queueStartNs: number,
    readonly shapeKey: string,
  ) {
    this.origin = request;
    this.batchSize = request.batchSize;
    this.enqueuedUs = queueStartNs / 1000;
  }
}
