/**
 * Where statistics and metrics plug into the schedulers. Both schedulers call
 * these on the hot path, so the argument objects are reused between calls:
 * read what you need during the call and copy it if you keep it.
 */
import type { ExecuteTimings } from '../core/request';
import type { InferRequest } from '../core/request';

/** Timestamps of one request (wall-clock ns, clock.ts). */
export interface RequestDoneStats {
  /** True when the final response carries no error. */
  success: boolean;
  /** When the scheduler admitted (or rejected) the request. */
  queueStartNs: number;
  /** Compute timestamps of the execution that ran it; all 0 when it never ran (rejected, or the instance failed). */
  computeStartNs: number;
  computeInputEndNs: number;
  computeInferEndNs: number;
  computeEndNs: number;
  /** When the final response was handed to the requester. */
  endNs: number;
  /** True for a request answered from the response cache (never ran; response-cache.ts). */
  cacheHit?: boolean;
  /**
   * Why a failed request failed, as Triton's nv_inference_request_failure
   * `reason` label says it: absent means BACKEND (the execution's error).
   * CANCELED: cancelled while it waited in the queue; REJECTED: its queue
   * timeout passed.
   */
  failure?: FailureReason;
}

/** Triton's FailureReason (core infer_stats.h), the label of nv_inference_request_failure. */
export type FailureReason = 'REJECTED' | 'CANCELED' | 'BACKEND' | 'OTHER';

export interface SchedulerHooks {
  /** Once per request, right after its final response (also for requests rejected at enqueue). */
  requestDone?(req: InferRequest, s: RequestDoneStats): void;
  /**
   * Once per execution that an instance completed (not for one whose
   * execute() rejected). batchSize counts every row the model ran, the
   * `padding` not-ready rows of a direct sequence batch among them (as
   * Triton's backends report the batch); requestCount counts only requests.
   */
  executionDone?(batchSize: number, requestCount: number, timings: ExecuteTimings, padding: number): void;
  /**
   * Once per request of a model with the response cache: a hit (lookup time),
   * or a miss (lookup plus insert time), before or after its requestDone.
   */
  cacheDone?(req: InferRequest, hit: boolean, durationNs: number): void;
  /**
   * One response of a request to a decoupled model (each of them, the
   * final one too, even when it is the only one), or of a request that
   * streams: its index, what it was, the time since the previous
   * response (or since dispatch for the first), and the time since the
   * scheduler admitted the request (for the first: time to first response).
   */
  responseDone?(req: InferRequest, index: number, kind: ResponseKind, sincePreviousNs: number, sinceQueueStartNs: number): void;
}

/**
 * What a streamed response was, for Triton's `response_stats`: `cancel` is a
 * response whose error is CANCELLED (the model answered a cancelled request).
 */
export type ResponseKind = 'success' | 'fail' | 'empty' | 'cancel';
