/**
 * The dynamic batcher's decision as a pure function: given the queue, the
 * batching policy and the time, run the first N requests now, wait until a
 * time, or do nothing. It follows the algorithm of Triton's dynamic batcher
 * (DynamicBatchScheduler::GetDynamicBatch), reimplemented here:
 *
 * 1. Scan from the head. The head always starts the batch. A later request
 *    joins while its shape key equals the head's and the total batch size
 *    stays <= max batch size; the first one that cannot join ends the scan
 *    ("send now": the batch cannot grow any more).
 * 2. While scanning, remember the best cut: the last point where the total
 *    equals a preferred size, or, if none was seen before the total would pass
 *    the largest preferred size, the point just before it passes.
 * 3. If a best cut exists and the oldest request has not yet waited the full
 *    delay, run up to the best cut (a preferred batch goes at once).
 * 4. Otherwise run everything scanned when the batch cannot grow (send now,
 *    or it reached the largest preferred size), when the delay is 0, or when
 *    the oldest request has waited >= the delay.
 * 5. Otherwise wait until the oldest request has waited the delay.
 */
import type { InferRequest } from '../core/request';
import type { ModelConfig } from '../core/model-config';

export interface QueuedView {
  /** Batch size of the request (values < 1 count as 1, as for non-batching models). */
  batchSize: number;
  /** When it entered the queue, µs on the clock of clock.ts. */
  enqueuedUs: number;
  /** Requests batch together only when their keys are equal (see shapeKeyOf). */
  shapeKey: string;
}

export interface BatchPolicy {
  /** >= 1; a request larger than this alone is rejected by validation before the queue. */
  maxBatchSize: number;
  /** Ascending, each <= maxBatchSize; empty means [maxBatchSize]. */
  preferredBatchSizes: readonly number[];
  /** 0 = never wait. */
  maxQueueDelayUs: number;
}

export type BatchDecision = { kind: 'run'; count: number } | { kind: 'wait'; untilUs: number } | { kind: 'idle' };

const IDLE: BatchDecision = { kind: 'idle' };

export function decideBatch(queue: readonly QueuedView[], policy: BatchPolicy, nowUs: number): BatchDecision {
  const n = queue.length;
  if (n === 0) return IDLE;
  const { maxBatchSize, preferredBatchSizes: preferred, maxQueueDelayUs: delay } = policy;
  const maxPreferred = preferred.length > 0 ? preferred[preferred.length - 1]! : maxBatchSize;
  const head = queue[0]!;
  const headKey = head.shapeKey;

  let total = 0; // batch size of the requests taken so far
  let count = 0; // requests taken so far
  let bestCount = 0; // requests up to the best cut; 0 = none
  let sendNow = false;
  for (let i = 0; i < n; i++) {
    const q = queue[i]!;
    const size = q.batchSize > 1 ? q.batchSize : 1;
    if (count > 0) {
      // Past the largest preferred size with no preferred size seen: the cut
      // before this request is the best this prefix can do.
      if (total + size > maxPreferred && bestCount === 0) bestCount = count;
      if (total + size > maxBatchSize || q.shapeKey !== headKey) {
        sendNow = true;
        break;
      }
    }
    total += size;
    count++;
    if (preferred.includes(total)) bestCount = count;
  }

  const waitedUs = nowUs - head.enqueuedUs;
  const delayExceeded = delay !== 0 && waitedUs >= delay;
  if (bestCount !== 0 && !delayExceeded) return { kind: 'run', count: bestCount };
  if (sendNow || total >= maxPreferred || delay === 0 || delayExceeded) return { kind: 'run', count };
  return { kind: 'wait', untilUs: head.enqueuedUs + delay };
}

/**
 * The batching key of a request: name, datatype and non-batch dims of every
 * input, in input-name order, skipping inputs that allow ragged batches. The
 * leading dim of each input is taken to be the batch dim (batching models).
 * Including the names keeps requests with and without an optional input apart.
 */
export function shapeKeyOf(request: InferRequest, raggedInputs?: ReadonlySet<string>): string {
  const inputs = request.inputs;
  let ordered = inputs;
  for (let i = 1; i < inputs.length; i++) {
    if (inputs[i - 1]!.name > inputs[i]!.name) {
      ordered = inputs.slice().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      break;
    }
  }
  let key = '';
  for (const t of ordered) {
    if (raggedInputs !== undefined && raggedInputs.has(t.name)) continue;
    key += t.name + ':' + t.datatype + ':' + t.shape.slice(1).join(',') + ';';
  }
  return key;
}

/**
 * Compiled once: which inputs the batch key must look at. Requests of a model
 * whose inputs all have fixed dims (and are required and not shape tensors)
 * always batch together after validation, so they need no key at all.
 * Returns the ragged inputs to skip, or null for "no key needed".
 */
export function batchKeyPlan(config: ModelConfig): ReadonlySet<string> | null {
  if (config.max_batch_size <= 0) return null; // one request per batch anyway
  const ragged = new Set<string>();
  let needsKey = false;
  for (const input of config.input) {
    if (input.allow_ragged_batch) {
      ragged.add(input.name);
      continue;
    }
    if (input.optional || input.is_shape_tensor || input.dims.some((d) => d < 0)) needsKey = true;
  }
  return needsKey ? ragged : null;
}
