import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decideBatch, shapeKeyOf, type BatchDecision, type BatchPolicy, type QueuedView } from '../../src/scheduler/batch-decision';
import type { InferRequest, TensorRef } from '../../src/core/request';

/** The fake clock: every case is decided at NOW; requests carry their age in µs. */
const NOW = 1_000_000;

/** `sizes` are batch sizes; a string entry 'b:3' is batch size 3 with shape key 'b'. */
function queue(sizes: (number | string)[], ageUs = 0): QueuedView[] {
  return sizes.map((s, i) => {
    const [key, size] = typeof s === 'number' ? ['a', s] : [s.split(':')[0]!, Number(s.split(':')[1])];
    // Later requests are younger by 1 µs each, so the head is the oldest.
    return { batchSize: size, enqueuedUs: NOW - ageUs + i, shapeKey: key };
  });
}

function policy(maxBatchSize: number, preferredBatchSizes: number[], maxQueueDelayUs: number): BatchPolicy {
  return { maxBatchSize, preferredBatchSizes, maxQueueDelayUs };
}

const run = (count: number): BatchDecision => ({ kind: 'run', count });
const waitUntil = (untilUs: number): BatchDecision => ({ kind: 'wait', untilUs });

interface Case {
  name: string;
  q: QueuedView[];
  p: BatchPolicy;
  want: BatchDecision;
}

const D = 1000; // max_queue_delay_microseconds of the waiting cases

const cases: Case[] = [
  // idle
  { name: 'empty queue is idle', q: [], p: policy(8, [4], D), want: { kind: 'idle' } },

  // max queue delay
  { name: 'lone fresh request waits the full delay', q: queue([1]), p: policy(8, [4], D), want: waitUntil(NOW + D) },
  { name: 'wait is measured from the oldest request', q: queue([1, 1], 300), p: policy(8, [4], D), want: waitUntil(NOW - 300 + D) },
  { name: 'one µs before the delay still waits', q: queue([1], D - 1), p: policy(8, [4], D), want: waitUntil(NOW + 1) },
  { name: 'delay reached exactly runs what is there', q: queue([1], D), p: policy(8, [4], D), want: run(1) },
  { name: 'delay exceeded runs everything that fits', q: queue([1, 1, 1], D + 5), p: policy(8, [4], D), want: run(3) },
  { name: 'below every preferred size and fresh: wait', q: queue([5, 2]), p: policy(8, [8], D), want: waitUntil(NOW + D) },

  // preferred batch sizes
  { name: 'preferred size reached runs at once', q: queue([1, 1, 1, 1]), p: policy(8, [4], D), want: run(4) },
  { name: 'largest preferred size reached wins', q: queue([1, 1, 1, 1, 1, 1, 1, 1, 1, 1]), p: policy(8, [2, 4, 8], D), want: run(8) },
  { name: 'cut at the last preferred size seen', q: queue([1, 1, 1, 1, 1]), p: policy(8, [4, 8], D), want: run(4) },
  { name: 'preferred size from mixed batch sizes', q: queue([2, 1, 3, 1]), p: policy(8, [6], D), want: run(3) },
  { name: 'cannot reach a preferred size: cut before passing the largest', q: queue([3, 3]), p: policy(8, [4], D), want: run(1) },
  { name: 'same, but delay exceeded: run all that fits', q: queue([3, 3], D), p: policy(8, [4], D), want: run(2) },
  { name: 'delay exceeded ignores a smaller preferred cut', q: queue([1, 1, 1, 1, 1], D), p: policy(8, [4, 8], D), want: run(5) },

  // max batch size
  { name: 'max batch size caps the batch', q: queue([1, 1, 1, 1, 1, 1, 1, 1, 1, 1], D), p: policy(8, [4, 8], D), want: run(8) },
  { name: 'next request would pass max: send now even without preferred', q: queue([6, 3]), p: policy(8, [], D), want: run(1) },
  { name: 'empty preferred behaves as [max]: full batch runs', q: queue([1, 1, 1, 1, 1]), p: policy(4, [], D), want: run(4) },
  { name: 'empty preferred, below max and fresh: wait', q: queue([1, 1]), p: policy(4, [], D), want: waitUntil(NOW + D) },
  { name: 'non-batching model (max 1): one request at a time', q: queue([1, 1, 1]), p: policy(1, [], D), want: run(1) },
  { name: 'batch size 0 counts as 1', q: queue([0, 0, 0, 0]), p: policy(8, [4], D), want: run(4) },

  // a single big request
  { name: 'single request of max size runs at once', q: queue([8]), p: policy(8, [4], D), want: run(1) },
  { name: 'single request of a preferred size runs at once', q: queue([4, 1]), p: policy(8, [4, 8], D), want: run(1) },
  { name: 'oversized head (never from validation) still runs alone', q: queue([9, 1]), p: policy(8, [4], D), want: run(1) },

  // shape compatibility
  { name: 'different shape right after the head: head runs alone now', q: queue(['a:1', 'b:1']), p: policy(8, [4], D), want: run(1) },
  { name: 'different shape ends the batch', q: queue(['a:1', 'a:1', 'b:1', 'a:1']), p: policy(8, [4], D), want: run(2) },
  { name: 'shape boundary after a preferred size', q: queue(['a:1', 'a:1', 'a:1', 'b:1']), p: policy(8, [2, 4], D), want: run(2) },
  { name: 'shape boundary exactly at a preferred size', q: queue(['a:2', 'a:2', 'b:1']), p: policy(8, [4], D), want: run(2) },
  { name: 'matching shapes after the head batch together', q: queue(['b:1', 'b:1', 'b:1', 'b:1']), p: policy(8, [4], D), want: run(4) },

  // max_queue_delay 0
  { name: 'delay 0 runs a lone request at once', q: queue([1]), p: policy(8, [4], 0), want: run(1) },
  { name: 'delay 0 runs all that fits when no preferred size is hit', q: queue([1, 1, 1]), p: policy(8, [4], 0), want: run(3) },
  { name: 'delay 0 still cuts at a preferred size', q: queue([1, 1, 1]), p: policy(8, [2], 0), want: run(2) },
  { name: 'delay 0 with shape boundary', q: queue(['a:1', 'b:1']), p: policy(8, [4], 0), want: run(1) },
];

for (const c of cases) {
  test(`decideBatch: ${c.name}`, () => {
    assert.deepEqual(decideBatch(c.q, c.p, NOW), c.want);
  });
}

test('decideBatch does not modify the queue', () => {
  const q = queue([1, 2, 3]);
  const copy = structuredClone(q);
  decideBatch(q, policy(8, [4], D), NOW);
  assert.deepEqual(q, copy);
});

function tensor(name: string, shape: number[], datatype: TensorRef['datatype'] = 'FP32'): TensorRef {
  return { name, datatype, shape, offset: 0, gen: 0, byteSize: 0 };
}

function request(inputs: TensorRef[]): InferRequest {
  return { id: '', model: 'm', version: 1, latest: false, batchSize: inputs[0]?.shape[0] ?? 1, inputs, requestedOutputs: null, parameters: {}, arrivalNs: 0 };
}

interface KeyCase {
  name: string;
  a: TensorRef[];
  b: TensorRef[];
  same: boolean;
  ragged?: string[];
}

const keyCases: KeyCase[] = [
  { name: 'batch dim is ignored', a: [tensor('x', [1, 3])], b: [tensor('x', [4, 3])], same: true },
  { name: 'non-batch dims differ', a: [tensor('x', [1, 3])], b: [tensor('x', [1, 5])], same: false },
  { name: 'rank differs', a: [tensor('x', [1, 3])], b: [tensor('x', [1, 3, 1])], same: false },
  { name: 'datatype differs', a: [tensor('x', [1, 3], 'FP32')], b: [tensor('x', [1, 3], 'INT32')], same: false },
  { name: 'input order does not matter', a: [tensor('x', [1, 3]), tensor('y', [1, 2])], b: [tensor('y', [2, 2]), tensor('x', [2, 3])], same: true },
  { name: 'second input differs', a: [tensor('x', [1, 3]), tensor('y', [1, 2])], b: [tensor('x', [1, 3]), tensor('y', [1, 7])], same: false },
  { name: 'missing optional input differs', a: [tensor('x', [1, 3]), tensor('y', [1, 2])], b: [tensor('x', [1, 3])], same: false },
  { name: 'ragged input is excluded', a: [tensor('x', [1, 3]), tensor('r', [1, 9])], b: [tensor('x', [1, 3]), tensor('r', [1, 2])], same: true, ragged: ['r'] },
];

for (const c of keyCases) {
  test(`shapeKeyOf: ${c.name}`, () => {
    const ragged = c.ragged === undefined ? undefined : new Set(c.ragged);
    const ka = shapeKeyOf(request(c.a), ragged);
    const kb = shapeKeyOf(request(c.b), ragged);
    assert.equal(ka === kb, c.same, `${ka} vs ${kb}`);
  });
}

test('shapeKeyOf does not reorder the request inputs', () => {
  const r = request([tensor('y', [1, 2]), tensor('x', [1, 3])]);
  shapeKeyOf(r);
  assert.deepEqual(
    r.inputs.map((t) => t.name),
    ['y', 'x'],
  );
});
