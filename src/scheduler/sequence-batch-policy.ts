/**
 * When a free instance of a sequence-batching model runs its ready requests,
 * as a pure function of the ready heads (one per slot, oldest first), the
 * strategy and the time:
 *
 * - direct: every ready head runs at once, unless fewer than
 *   minimum_slot_utilization × slots are ready and max_queue_delay_microseconds
 *   is > 0; then it waits until the oldest head has waited the delay. The
 *   execution then has one row per slot up to the highest one with a
 *   request, each sequence at its own slot's row (directRows): an idle slot
 *   below it, or one whose head cannot share the batch (other shapes than
 *   the lowest slot's head), gets a not-ready row (sequence-padding.ts).
 * - oldest: the dynamic batcher's decision (batch-decision.ts) over the ready
 *   heads (each of batch size 1, one per candidate sequence), with the
 *   strategy's preferred sizes and delay, capped at max_batch_size; only
 *   heads of the oldest one's shapes join it.
 */
import type { ModelConfig } from '../core/model-config';
import { decideBatch, type BatchDecision, type QueuedView } from './batch-decision';

export type SequenceStrategy =
  | { kind: 'direct'; slots: number; maxQueueDelayUs: number; minimumSlotUtilization: number }
  | { kind: 'oldest'; slots: number; maxBatchSize: number; preferredBatchSizes: number[]; maxQueueDelayUs: number; preserveOrdering: boolean };

export interface HeadView {
  enqueuedUs: number;
  /** Batch key (batch-decision.ts shapeKeyOf): the oldest strategy batches only equal keys. */
  shapeKey?: string;
}

const IDLE: BatchDecision = { kind: 'idle' };

/** The strategy of a config; slots = slots (direct) or candidate sequences (oldest) per instance. */
export function sequenceStrategyOf(config: ModelConfig): SequenceStrategy {
  const sb = (config.sequence_batching ?? {}) as Record<string, unknown>;
  const maxBatchSize = Math.max(1, config.max_batch_size);
  const oldest = sb.oldest as Record<string, unknown> | undefined | null;
  if (oldest !== undefined && oldest !== null) {
    const preferred = ((oldest.preferred_batch_size as number[] | undefined) ?? []).map(Number).filter((n) => n > 0 && n <= maxBatchSize);
    return {
      kind: 'oldest',
      slots: Math.max(1, Number(oldest.max_candidate_sequences ?? 0) || 1),
      maxBatchSize,
      preferredBatchSizes: [...new Set(preferred)].sort((a, b) => a - b),
      maxQueueDelayUs: Number(oldest.max_queue_delay_microseconds ?? 0) || 0,
      preserveOrdering: oldest.preserve_ordering === true,
    };
  }
  const direct = (sb.direct ?? {}) as Record<string, unknown>;
  return {
    kind: 'direct',
    slots: maxBatchSize,
    maxQueueDelayUs: Number(direct.max_queue_delay_microseconds ?? 0) || 0,
    minimumSlotUtilization: Number(direct.minimum_slot_utilization ?? 0) || 0,
  };
}

/**
 * The rows of a direct execution, as Triton's DirectSequenceBatch forms them:
 * `keys` holds the batch key of each slot's head request by slot position
 * (null: nothing queued there). Rows run from slot 0 up to the highest slot
 * with a request; row k is slot k's head when its key equals that of the
 * lowest slot's head, otherwise null, a not-ready row (the head, if any,
 * waits for a later execution). [] when no slot has a request.
 */
export function directRows(keys: readonly (string | null)[]): (number | null)[] {
  let last = -1;
  let first: string | null = null;
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k];
    if (key === null || key === undefined) continue;
    if (first === null) first = key;
    last = k;
  }
  const rows: (number | null)[] = [];
  for (let k = 0; k <= last; k++) rows.push(keys[k] === first ? k : null);
  return rows;
}

/** heads: the ready heads of one instance, oldest first. 'run' count = how many oldest heads to take. */
export function decideSequenceBatch(strategy: SequenceStrategy, heads: readonly HeadView[], nowUs: number): BatchDecision {
  if (heads.length === 0) return IDLE;
  const oldestUs = heads[0]!.enqueuedUs;
  if (strategy.kind === 'direct') {
    const delay = strategy.maxQueueDelayUs;
    const enough = heads.length >= strategy.minimumSlotUtilization * strategy.slots;
    if (delay === 0 || enough || nowUs - oldestUs >= delay) return { kind: 'run', count: heads.length };
    return { kind: 'wait', untilUs: oldestUs + delay };
  }
  const views: QueuedView[] = heads.map((h) => ({ batchSize: 1, enqueuedUs: h.enqueuedUs, shapeKey: h.shapeKey ?? '' }));
  return decideBatch(
    views,
    {
      maxBatchSize: strategy.maxBatchSize,
      preferredBatchSizes: strategy.preferredBatchSizes,
      maxQueueDelayUs: strategy.maxQueueDelayUs,
    },
    nowUs,
  );
}
