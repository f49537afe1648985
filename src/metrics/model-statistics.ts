/**
 * Statistics of one (model, version), accumulated from the scheduler hooks
 * (src/scheduler/scheduler-hooks.ts) and rendered as Triton's statistics
 * JSON (protocol.md §1.9). The Prometheus reporter reads the same numbers, so
 * `/v2/models/<m>/stats` and `/metrics` always agree.
 *
 * Triton's definitions, per request that ran (timestamps from the hooks):
 *   success/fail = end - queue start (Triton's request start is when the core
 *                  got the request, which is our scheduler admission)
 *   queue        = compute start - queue start
 *   compute_input  = compute input end - compute start
 *   compute_infer  = compute infer end - compute input end
 *   compute_output = compute end - compute infer end
 * Every request of a batch is charged the whole execution's compute times;
 * `batch_stats` counts executions per batch size; inference_count is
 * batch-weighted and comes from executions, as Triton's batch statistics do.
 */
import type { ExecuteTimings } from '../core/request';
import type { FailureReason, RequestDoneStats, ResponseKind } from '../scheduler/scheduler-hooks';

export interface Duration {
  count: number;
  ns: number;
}

export type { FailureReason };
export const FAILURE_REASONS: readonly FailureReason[] = ['OTHER', 'BACKEND', 'CANCELED', 'REJECTED'];

export interface BatchStats {
  batchSize: number;
  computeInput: Duration;
  computeInfer: Duration;
  computeOutput: Duration;
}

interface ResponseStats {
  compute_infer: Duration;
  compute_output: Duration;
  success: Duration;
  fail: Duration;
  empty_response: Duration;
  cancel: Duration;
}

const zero = (): Duration => ({ count: 0, ns: 0 });

function add(d: Duration, ns: number): void {
  d.count++;
  // Clock skew between threads must never make a duration negative.
  d.ns += ns > 0 ? ns : 0;
}

/**
 * True for a request the scheduler refused at enqueue (stopping, queue full):
 * it never ran and its end is its queue start (execution-pool.ts `reject`).
 * Triton counts such synchronous rejections neither as failures nor in stats.
 */
export function rejectedAtEnqueue(s: RequestDoneStats): boolean {
  return !s.success && s.computeStartNs === 0 && s.endNs === s.queueStartNs && s.failure === undefined;
}

export class ModelStatistics {
  readonly success = zero();
  readonly fail = zero();
  readonly queue = zero();
  readonly computeInput = zero();
  readonly computeInfer = zero();
  readonly computeOutput = zero();
  /** Response cache lookups (src/scheduler/response-cache.ts); zero without a cache, always in the JSON. */
  readonly cacheHit = zero();
  readonly cacheMiss = zero();
  readonly failures: Record<FailureReason, number> = { OTHER: 0, BACKEND: 0, CANCELED: 0, REJECTED: 0 };
  inferenceCount = 0;
  executionCount = 0;
  /** ms since the epoch of the last request end; 0 = never. */
  lastInferenceMs = 0;
  private readonly batches = new Map<number, BatchStats>();
  /** Per response index of streamed (decoupled) requests. */
  private readonly responses = new Map<number, ResponseStats>();

  /** Hook body for `requestDone`; returns false when the request is not counted. */
  requestDone(s: RequestDoneStats): boolean {
    if (rejectedAtEnqueue(s)) return false;
    this.lastInferenceMs = Math.floor(s.endNs / 1e6);
    if (!s.success) {
      add(this.fail, s.endNs - s.queueStartNs);
      // An execution's error unless the scheduler says otherwise: a request
      // cancelled while queued (CANCELED) or past its queue timeout (REJECTED).
      this.failures[s.failure ?? 'BACKEND']++;
      return true;
    }
    add(this.success, s.endNs - s.queueStartNs);
    // A cache hit never queued for an instance: queue counts it with no wait (queue.count == success.count).
    if (s.cacheHit === true) add(this.queue, 0);
    if (s.computeStartNs === 0) return true;
    add(this.queue, s.computeStartNs - s.queueStartNs);
    add(this.computeInput, s.computeInputEndNs - s.computeStartNs);
    add(this.computeInfer, s.computeInferEndNs - s.computeInputEndNs);
    add(this.computeOutput, s.computeEndNs - s.computeInferEndNs);
    return true;
  }

  /** Hook body for `cacheDone`. */
  cacheDone(hit: boolean, ns: number): void {
    add(hit ? this.cacheHit : this.cacheMiss, ns);
  }

  /**
   * Hook body for `responseDone`. The backend does not time a response's
   * parts, so compute_infer is the time since the previous response and
   * compute_output is counted with no time. As Triton counts them: every
   * response in compute_infer; a data or error response in compute_output
   * too; an empty one (a flags-only FINAL) in empty_response only.
   */
  responseDone(index: number, kind: ResponseKind, ns: number): void {
    let r = this.responses.get(index);
    if (r === undefined) {
      r = { compute_infer: zero(), compute_output: zero(), success: zero(), fail: zero(), empty_response: zero(), cancel: zero() };
      this.responses.set(index, r);
    }
    if (kind === 'cancel') {
      add(r.cancel, ns); // a CANCELLED error response: no compute of its own
      return;
    }
    add(r.compute_infer, ns);
    if (kind === 'empty') {
      add(r.empty_response, ns);
      return;
    }
    add(r.compute_output, 0);
    add(kind === 'success' ? r.success : r.fail, ns);
  }

  /**
   * Hook body for `executionDone`. Not-ready rows of a sequence batch
   * (`padding`) are in the batch size, not in inference_count (Triton counts
   * inferences per request; a not-ready row is none).
   */
  executionDone(batchSize: number, t: ExecuteTimings, padding = 0): void {
    this.inferenceCount += batchSize - padding;
    this.executionCount++;
    let b = this.batches.get(batchSize);
    if (b === undefined) {
      b = { batchSize, computeInput: zero(), computeInfer: zero(), computeOutput: zero() };
      this.batches.set(batchSize, b);
    }
    add(b.computeInput, t.computeInputEndNs - t.computeStartNs);
    add(b.computeInfer, t.computeInferEndNs - t.computeInputEndNs);
    add(b.computeOutput, t.computeEndNs - t.computeInferEndNs);
  }

  /** Per batch size, ascending. */
  batchStats(): BatchStats[] {
    return [...this.batches.values()].sort((a, b) => a.batchSize - b.batchSize);
  }

  private responseStatsJson(d: (x: Duration) => Duration): Record<string, Record<string, Duration>> {
    const out: Record<string, Record<string, Duration>> = {};
    for (const index of [...this.responses.keys()].sort((a, b) => a - b)) {
      const r = this.responses.get(index)!;
      out[String(index)] = {
        compute_infer: d(r.compute_infer),
        compute_output: d(r.compute_output),
        success: d(r.success),
        fail: d(r.fail),
        empty_response: d(r.empty_response),
        cancel: d(r.cancel),
      };
    }
    return out;
  }

  /** One entry of `model_stats` (protocol.md §1.9), as a plain object. */
  toJson(name: string, version: number): ModelStatisticsJson {
    const d = (x: Duration): Duration => ({ count: x.count, ns: Math.round(x.ns) });
    return {
      name,
      version: String(version),
      last_inference: this.lastInferenceMs,
      inference_count: this.inferenceCount,
      execution_count: this.executionCount,
      inference_stats: {
        success: d(this.success),
        fail: d(this.fail),
        queue: d(this.queue),
        compute_input: d(this.computeInput),
        compute_infer: d(this.computeInfer),
        compute_output: d(this.computeOutput),
        cache_hit: d(this.cacheHit),
        cache_miss: d(this.cacheMiss),
      },
      response_stats: this.responseStatsJson(d),
      batch_stats: this.batchStats().map((b) => ({
        batch_size: b.batchSize,
        compute_input: d(b.computeInput),
        compute_infer: d(b.computeInfer),
        compute_output: d(b.computeOutput),
      })),
      memory_usage: [],
    };
  }
}

export interface ModelStatisticsJson {
  name: string;
  version: string;
  last_inference: number;
  inference_count: number;
  execution_count: number;
  inference_stats: {
    success: Duration;
    fail: Duration;
    queue: Duration;
    compute_input: Duration;
    compute_infer: Duration;
    compute_output: Duration;
    cache_hit: Duration;
    cache_miss: Duration;
  };
  response_stats: Record<string, Record<string, Duration>>;
  batch_stats: { batch_size: number; compute_input: Duration; compute_infer: Duration; compute_output: Duration }[];
  memory_usage: { type: string; id: number; byte_size: number }[];
}
