import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ModelConfig } from '../../src/core/model-config';
import { decideSequenceBatch, directRows, sequenceStrategyOf, type SequenceStrategy } from '../../src/scheduler/sequence-batch-policy';
import { SequenceSlots } from '../../src/scheduler/sequence-slots';

const direct = (slots: number, delay: number, util: number): SequenceStrategy => ({
  kind: 'direct',
  slots,
  maxQueueDelayUs: delay,
  minimumSlotUtilization: util,
});
const oldest = (max: number, preferred: number[], delay: number): SequenceStrategy => ({
  kind: 'oldest',
  slots: 4,
  maxBatchSize: max,
  preferredBatchSizes: preferred,
  maxQueueDelayUs: delay,
  preserveOrdering: false,
});

// heads: enqueue times (µs) of the ready heads, oldest first; now: the fake clock.
const cases: { name: string; strategy: SequenceStrategy; heads: number[]; now: number; expect: ReturnType<typeof decideSequenceBatch> }[] = [
  { name: 'nothing ready: idle', strategy: direct(4, 0, 0), heads: [], now: 0, expect: { kind: 'idle' } },
  { name: 'direct without delay runs every ready head', strategy: direct(4, 0, 1), heads: [0, 5], now: 10, expect: { kind: 'run', count: 2 } },
  {
    name: 'direct: utilisation below the minimum waits for the delay',
    strategy: direct(4, 100, 0.75),
    heads: [10, 20],
    now: 50,
    expect: { kind: 'wait', untilUs: 110 },
  },
  { name: 'direct: delay passed runs what is ready', strategy: direct(4, 100, 0.75), heads: [10, 20], now: 110, expect: { kind: 'run', count: 2 } },
  { name: 'direct: utilisation reached runs at once', strategy: direct(4, 100, 0.75), heads: [10, 20, 30], now: 31, expect: { kind: 'run', count: 3 } },
  { name: 'direct: minimum utilisation 0 never waits', strategy: direct(4, 100, 0), heads: [10], now: 11, expect: { kind: 'run', count: 1 } },
  { name: 'oldest without delay runs the ready heads at once', strategy: oldest(2, [2], 0), heads: [0], now: 1, expect: { kind: 'run', count: 1 } },
  { name: 'oldest caps at max_batch_size', strategy: oldest(2, [2], 0), heads: [0, 1, 2, 3], now: 5, expect: { kind: 'run', count: 2 } },
  {
    name: 'oldest waits for a preferred size within the delay',
    strategy: oldest(4, [3], 100),
    heads: [10, 20],
    now: 30,
    expect: { kind: 'wait', untilUs: 110 },
  },
  { name: 'oldest: preferred size reached runs at once', strategy: oldest(4, [2, 4], 100), heads: [10, 20, 30], now: 31, expect: { kind: 'run', count: 2 } },
  { name: 'oldest: delay passed runs what is ready', strategy: oldest(4, [3], 100), heads: [10, 20], now: 110, expect: { kind: 'run', count: 2 } },
];

for (const c of cases) {
  test(`sequence batch policy: ${c.name}`, () => {
    assert.deepEqual(
      decideSequenceBatch(
        c.strategy,
        c.heads.map((enqueuedUs) => ({ enqueuedUs })),
        c.now,
      ),
      c.expect,
    );
  });
}

test("sequence batch policy: oldest batches only heads of the oldest one's shapes", () => {
  const heads = [
    { enqueuedUs: 0, shapeKey: 'a' },
    { enqueuedUs: 1, shapeKey: 'a' },
    { enqueuedUs: 2, shapeKey: 'b' },
  ];
  assert.deepEqual(decideSequenceBatch(oldest(4, [], 0), heads, 5), { kind: 'run', count: 2 });
});

// keys: the batch key of each slot's head by position (null: nothing queued); rows: slot taken per row, null = not-ready row.
const rowCases: { name: string; keys: (string | null)[]; rows: (number | null)[] }[] = [
  { name: 'no request: no rows', keys: [null, null, null, null], rows: [] },
  { name: 'every slot busy: one row each, in slot order', keys: ['k', 'k', 'k', 'k'], rows: [0, 1, 2, 3] },
  { name: 'idle slots below the highest busy one are padded', keys: ['k', null, 'k', null], rows: [0, null, 2] },
  { name: 'only a high slot busy: the rows below it are all padding', keys: [null, null, 'k', null], rows: [null, null, 2] },
  { name: 'idle slots above the highest busy one add no rows', keys: ['k', null, null, null], rows: [0] },
  { name: 'a head of other shapes than the lowest one waits; its row is padding', keys: ['a', 'b', 'a'], rows: [0, null, 2] },
  { name: 'the highest busy slot counts even when its head waits', keys: [null, 'a', null, 'b'], rows: [null, 1, null, null] },
];

for (const c of rowCases) {
  test(`direct rows: ${c.name}`, () => assert.deepEqual(directRows(c.keys), c.rows));
}

const cfg = (max: number, sb: Record<string, unknown>): ModelConfig => ({ max_batch_size: max, sequence_batching: sb }) as unknown as ModelConfig;
const strategies: { name: string; config: ModelConfig; expect: SequenceStrategy }[] = [
  { name: 'no strategy is direct with max_batch_size slots', config: cfg(4, {}), expect: direct(4, 0, 0) },
  { name: 'direct fields', config: cfg(0, { direct: { max_queue_delay_microseconds: '500', minimum_slot_utilization: 0.5 } }), expect: direct(1, 500, 0.5) },
  {
    name: 'oldest: candidates, preferred sizes sorted and capped, delay as a string (uint64 JSON)',
    config: cfg(2, { oldest: { max_candidate_sequences: 4, preferred_batch_size: [2, 1, 8], max_queue_delay_microseconds: '100', preserve_ordering: true } }),
    expect: { kind: 'oldest', slots: 4, maxBatchSize: 2, preferredBatchSizes: [1, 2], maxQueueDelayUs: 100, preserveOrdering: true },
  },
];
for (const c of strategies) {
  test(`sequence strategy of a config: ${c.name}`, () => assert.deepEqual(sequenceStrategyOf(c.config), c.expect));
}

test('oldest candidates: take(limit) takes the oldest ready heads, one per sequence, sequences keep their instance', () => {
  const slots = new SequenceSlots<string>(1, 4);
  slots.admit('d', { start: true, end: false }, 'd1', 1);
  slots.admit('c', { start: true, end: false }, 'c1', 2);
  slots.admit('d', { start: false, end: false }, 'd2', 3);
  slots.admit('b', { start: true, end: false }, 'b1', 4);
  assert.deepEqual(
    slots.readyHeads(0).map((h) => h.enqueuedUs),
    [1, 2, 4],
  );
  assert.deepEqual(slots.take(0, 5, 2), ['d1', 'c1']);
  assert.deepEqual(slots.take(0, 6, 2), ['d2', 'b1']);
  assert.deepEqual(slots.take(0, 7, 2), []);
  assert.deepEqual(slots.slotOf('d'), [0, 0]);
});
