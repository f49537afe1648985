/**
 * The Scheduler interface: every request of a model version enters here, from
 * any frontend, and only the scheduler decides batches and which instance runs
 * them (DESIGN.md "The scheduler is central"). One implementation per config
 * scheduling block, chosen by create-scheduler.ts.
 */
import type { InferRequest, Respond } from '../core/request';

export interface Scheduler {
  /**
   * Admit a request. `respond` is called exactly once per response; the last
   * call has `final: true`. Errors (queue full, stopped, execution failure)
   * arrive as a response with `error` set, never as a throw.
   */
  enqueue(request: InferRequest, respond: Respond): void;
  /**
   * `request` (as given to enqueue) was cancelled: its client went away or
   * cancelled it, or its BLS caller did. Still queued: it leaves the queue
   * and is answered CANCELLED (Triton counts it a failure, reason CANCELED).
   * Already running: its instance is told (a Python model sees
   * `is_cancelled()`) and it ends as the model decides. Finished or unknown:
   * nothing. Never throws.
   */
  cancel(request: InferRequest): void;
  /** Requests admitted and not yet finally responded to. */
  inflightCount(): number;
  /** Stop admitting (later enqueues get UNAVAILABLE), resolve when in-flight work is done. Idempotent. */
  stop(): Promise<void>;
  /**
   * This build now takes its version's requests (true), or no longer does
   * (a reload swapped another in, an unload began). Only what runs requests
   * outside enqueue cares: instances on frontend threads run inline only
   * while it serves (ExecutionPool.serve). Absent: nothing to do.
   */
  serve?(on: boolean): void;
}
