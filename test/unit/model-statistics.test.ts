import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ModelStatistics, rejectedAtEnqueue } from '../../src/metrics/model-statistics';
import type { RequestDoneStats } from '../../src/scheduler/scheduler-hooks';

/** A request that ran: queued at q, compute at c..c+30 (10 input, 15 infer, 5 output), ended at e. */
const ran = (q: number, c: number, e: number, success = true): RequestDoneStats => ({
  success,
  queueStartNs: q,
  computeStartNs: c,
  computeInputEndNs: c + 10,
  computeInferEndNs: c + 25,
  computeEndNs: c + 30,
  endNs: e,
});
const rejected = (t: number): RequestDoneStats => ({
  success: false,
  queueStartNs: t,
  computeStartNs: 0,
  computeInputEndNs: 0,
  computeInferEndNs: 0,
  computeEndNs: 0,
  endNs: t,
});
const failedInInstance = (q: number, e: number): RequestDoneStats => ({ ...rejected(q), endNs: e });
const timings = (c: number) => ({ computeStartNs: c, computeInputEndNs: c + 10, computeInferEndNs: c + 25, computeEndNs: c + 30 });

type Event = ['request', RequestDoneStats] | ['execution', number] | ['execution', number, number];

const CASES: { name: string; events: Event[]; expect: Record<string, unknown> }[] = [
  {
    name: 'nothing yet',
    events: [],
    expect: { success: [0, 0], fail: [0, 0], queue: [0, 0], inference: 0, execution: 0, batches: [], last: 0, backendFailures: 0 },
  },
  {
    name: 'two requests in one batch of 2',
    events: [
      ['execution', 2],
      ['request', ran(100, 200, 2_000_400)],
      ['request', ran(150, 200, 2_000_500)],
    ],
    expect: {
      success: [2, 2_000_300 + 2_000_350],
      fail: [0, 0],
      queue: [2, 150],
      computeInput: [2, 20],
      computeInfer: [2, 30],
      computeOutput: [2, 10],
      inference: 2,
      execution: 1,
      batches: [[2, 1, 10, 15, 5]],
      last: 2,
      backendFailures: 0,
    },
  },
  {
    name: 'a rejection at enqueue is counted nowhere',
    events: [['request', rejected(5_000_000)]],
    expect: { success: [0, 0], fail: [0, 0], queue: [0, 0], inference: 0, execution: 0, batches: [], last: 0, backendFailures: 0 },
  },
  {
    name: 'an instance failure is a BACKEND failure with its duration',
    events: [['request', failedInInstance(1_000, 3_000_000)]],
    expect: { success: [0, 0], fail: [1, 2_999_000], queue: [0, 0], inference: 0, execution: 0, batches: [], last: 3, backendFailures: 1 },
  },
  {
    name: 'batch stats per size, ascending; inference count batch-weighted',
    events: [
      ['execution', 4],
      ['execution', 1],
      ['execution', 4],
    ],
    expect: {
      success: [0, 0],
      fail: [0, 0],
      queue: [0, 0],
      inference: 9,
      execution: 3,
      batches: [
        [1, 1, 10, 15, 5],
        [4, 2, 20, 30, 10],
      ],
      last: 0,
      backendFailures: 0,
    },
  },
  {
    name: 'not-ready rows of a sequence batch: in the batch size, not in the inference count',
    events: [
      ['execution', 3, 1],
      ['execution', 1, 0],
    ],
    expect: {
      success: [0, 0],
      fail: [0, 0],
      queue: [0, 0],
      inference: 3,
      execution: 2,
      batches: [
        [1, 1, 10, 15, 5],
        [3, 1, 10, 15, 5],
      ],
      last: 0,
      backendFailures: 0,
    },
  },
  {
    name: 'negative cross-thread skew counts as zero',
    events: [['request', ran(500, 400, 1_000_000)]],
    expect: { success: [1, 999_500], fail: [0, 0], queue: [1, 0], inference: 0, execution: 0, batches: [], last: 1, backendFailures: 0 },
  },
];

for (const c of CASES) {
  test(`statistics: ${c.name}`, () => {
    const s = new ModelStatistics();
    for (const e of c.events) {
      if (e[0] === 'request') s.requestDone(e[1]);
      else s.executionDone(e[1], timings(0), e[2]);
    }
    const j = s.toJson('m', 3);
    const pair = (d: { count: number; ns: number }): number[] => [d.count, d.ns];
    assert.equal(j.name, 'm');
    assert.equal(j.version, '3');
    assert.deepEqual(pair(j.inference_stats.success), c.expect.success);
    assert.deepEqual(pair(j.inference_stats.fail), c.expect.fail);
    assert.deepEqual(pair(j.inference_stats.queue), c.expect.queue);
    if (c.expect.computeInput) assert.deepEqual(pair(j.inference_stats.compute_input), c.expect.computeInput);
    if (c.expect.computeInfer) assert.deepEqual(pair(j.inference_stats.compute_infer), c.expect.computeInfer);
    if (c.expect.computeOutput) assert.deepEqual(pair(j.inference_stats.compute_output), c.expect.computeOutput);
    assert.equal(j.inference_count, c.expect.inference);
    assert.equal(j.execution_count, c.expect.execution);
    assert.equal(j.last_inference, c.expect.last);
    assert.equal(s.failures.BACKEND, c.expect.backendFailures);
    assert.deepEqual(
      j.batch_stats.map((b) => [b.batch_size, b.compute_infer.count, b.compute_input.ns, b.compute_infer.ns, b.compute_output.ns]),
      c.expect.batches,
    );
    assert.deepEqual(j.inference_stats.cache_hit, { count: 0, ns: 0 });
    assert.deepEqual(j.response_stats, {});
    assert.deepEqual(j.memory_usage, []);
  });
}

test('rejectedAtEnqueue tells a refusal from a failure after admission', () => {
  assert.equal(rejectedAtEnqueue(rejected(7)), true);
  assert.equal(rejectedAtEnqueue(failedInInstance(7, 9)), false);
  assert.equal(rejectedAtEnqueue(ran(1, 2, 3)), false);
  assert.equal(rejectedAtEnqueue({ ...rejected(7), failure: 'CANCELED' }), false, 'cancelled in the queue in the same ns is still counted');
});

test('failures by reason: BACKEND unless the scheduler names CANCELED (queue) or REJECTED (queue timeout); each a `fail`', () => {
  const cases: { failure: RequestDoneStats['failure']; counted: 'BACKEND' | 'CANCELED' | 'REJECTED' }[] = [
    { failure: undefined, counted: 'BACKEND' },
    { failure: 'CANCELED', counted: 'CANCELED' },
    { failure: 'REJECTED', counted: 'REJECTED' },
  ];
  for (const c of cases) {
    const s = new ModelStatistics();
    assert.equal(s.requestDone({ ...failedInInstance(1_000, 4_000), failure: c.failure }), true);
    assert.deepEqual(s.failures, { OTHER: 0, BACKEND: 0, CANCELED: 0, REJECTED: 0, [c.counted]: 1 }, String(c.failure));
    assert.deepEqual(s.toJson('m', 1).inference_stats.fail, { count: 1, ns: 3_000 });
  }
});

test('response_stats: per response index, sorted; every response in compute_infer, data and errors in compute_output, empty ones only in empty_response (as Triton)', () => {
  const s = new ModelStatistics();
  const events: [number, 'success' | 'fail' | 'empty' | 'cancel', number][] = [
    [0, 'success', 100],
    [1, 'success', 50],
    [2, 'empty', 5],
    [0, 'success', 300],
    [1, 'fail', 7],
    [10, 'success', 1],
    [2, 'cancel', 9],
  ];
  for (const [i, kind, ns] of events) s.responseDone(i, kind, ns);
  const rs = s.toJson('m', 1).response_stats;
  assert.deepEqual(Object.keys(rs), ['0', '1', '2', '10']);
  assert.deepEqual(rs['0'].success, { count: 2, ns: 400 });
  assert.deepEqual(rs['0'].compute_infer, { count: 2, ns: 400 });
  assert.deepEqual(rs['0'].compute_output, { count: 2, ns: 0 });
  assert.deepEqual(rs['1'].fail, { count: 1, ns: 7 });
  assert.deepEqual(rs['1'].success, { count: 1, ns: 50 });
  assert.deepEqual(rs['1'].compute_infer, { count: 2, ns: 57 });
  assert.deepEqual(rs['1'].compute_output, { count: 2, ns: 0 });
  assert.deepEqual(rs['2'].empty_response, { count: 1, ns: 5 });
  assert.deepEqual(rs['2'].compute_infer, { count: 1, ns: 5 });
  assert.deepEqual(rs['2'].compute_output, { count: 0, ns: 0 });
  assert.deepEqual(rs['2'].success, { count: 0, ns: 0 });
  assert.deepEqual(rs['2'].fail, { count: 0, ns: 0 });
  assert.deepEqual(new ModelStatistics().toJson('m', 1).response_stats, {});
});

test('response_stats: a CANCELLED error response counts as a cancel only (no compute, not a fail)', () => {
  const s = new ModelStatistics();
  s.responseDone(0, 'success', 10);
  s.responseDone(1, 'cancel', 9);
  const rs = s.toJson('m', 1).response_stats;
  assert.deepEqual(rs['1'].cancel, { count: 1, ns: 9 });
  assert.deepEqual(rs['1'].fail, { count: 0, ns: 0 });
  assert.deepEqual(rs['1'].compute_infer, { count: 0, ns: 0 });
  assert.deepEqual(rs['0'].cancel, { count: 0, ns: 0 });
});
