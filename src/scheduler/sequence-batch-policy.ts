/**
 * When a free instance of a sequence-batching model runs its ready requests,
 * as a pure function of the ready heads (one per slot, oldest first), the
 * strategy and the time:
 *
 * - direct: every ready head runs at once, unless fewer than
 *   minimum_slot_utilization × slots are ready and max_queue_delay_microseconds
 *   is > 0; then it waits until the oldest head has waited the delay.
 * - oldest: the dynamic batcher's decision (batch-decision.ts) over the ready
 *   heads (each of batch size 1, one per candidate sequence), with the
 *   strategy's preferred sizes and delay, capped at max_batch_size.
 */
import type { ModelConfig } from '../core/model-config';
import { decideBatch, type BatchDecision, type QueuedView } from './batch-decision';

export type SequenceStrategy =
  | { kind: 'direct'; slots: number; maxQueueDelayUs: number; minimumSlotUtilization: number }
  | { kind: 'oldest'; slots: number; maxBatchSize: number; preferredBatchSizes: number[]; maxQueueDelayUs: number; preserveOrdering: boolean };

export interface HeadView {
  enqueuedUs: number;
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
  const views: QueuedView[] = heads.map((h) => ({ batchSize: 1, enqueuedUs: h.enqueuedUs, shapeKey: '' }));
  return decideBatch(views, {
    maxBatchSize: strategy.maxBatchSize,
    preferredBatchSizes: strategy.preferredBatchSizes,
    maxQueueDelayUs: strategy.maxQueueDelayUs,
  }, nowUs);
}
