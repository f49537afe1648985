/**
 * SequenceBatchScheduler.cancel over fake instances: a cancelled request
 * still queued ends its sequence as Triton's sequence batcher does: it and
 * the later queued requests of the sequence are answered CANCELLED (counted
 * CANCELED), the earlier ones still run, the id needs a new START, and the
 * freed slot goes to the backlog; a backlogged sequence leaves whole; the
 * control tensors and the implicit state are freed; a cancel that reaches a
 * running request ends its sequence too (the later queued ones CANCELLED,
 * the running one answered by its model). With iterative_sequence,
 * a request its model rescheduled that is cancelled while it waits for its
 * next step is answered once, by the pool that still holds it in flight
 * (in its dispatch order place), so every pool drains and stop() ends.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Arena } from '../../src/dataplane/arena';
import type { InferRequest, InferResponse, ParamValue } from '../../src/core/request';
import { SequenceBatchScheduler } from '../../src/scheduler/sequence-batch-scheduler';
import type { RequestDoneStats } from '../../src/scheduler/scheduler-hooks';
import { FakeInstance, Recorder, config, echo, request, settle, until } from './scheduler-test-kit';

function seqConfig(withState = false): ReturnType<typeof config> {
  const c = config(0);
  c.sequence_batching = {
    max_sequence_idle_microseconds: 5_000_000,
    control_input: [{ name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', int32_false_true: [0, 1] }] }],
    ...(withState ? { state: [{ input_name: 'S_IN', output_name: 'S_OUT', data_type: 'TYPE_FP32', dims: [1] }] } : {}),
  };
  return c;
}

function seqRequest(id: string, params: Record<string, ParamValue>): InferRequest {
  const r = request(id);
  r.parameters = params;
  return r;
}

interface Done {
  id: string;
  success: boolean;
  failure: RequestDoneStats['failure'];
}

test('a queued request that is cancelled ends its sequence: it and the later ones CANCELLED, the earlier ones run, the slot goes to the backlog', async () => {
  const arena = Arena.create();
  const inst = new FakeInstance('m_0');
  const done: Done[] = [];
  const s = new SequenceBatchScheduler(seqConfig(), [inst], arena, {
    requestDone: (req, st) => done.push({ id: req.id, success: st.success, failure: st.failure }),
  });
  const rec = new Recorder();
  const before = arena.usedBytes();
  const a = [
    seqRequest('a1', { sequence_id: 7, sequence_start: true }),
    seqRequest('a2', { sequence_id: 7 }),
    seqRequest('a3', { sequence_id: 7 }),
    seqRequest('a4', { sequence_id: 7, sequence_end: true }),
  ];
  for (const r of a) s.enqueue(r, rec.respond(r.id));
  const b1 = seqRequest('b1', { sequence_id: 8, sequence_start: true, sequence_end: true });
  s.enqueue(b1, rec.respond('b1'));
  assert.deepEqual(inst.batches(), [['a1']], 'one slot: sequence 8 waits in the backlog');
  assert.equal(s.inflightCount(), 5);

  s.cancel(a[2]!);
  assert.equal(rec.only('a3').error?.code, 'CANCELLED');
  assert.equal(
    rec.only('a3').error?.message,
    "[request id: a3] request for model 'm' version 3 was cancelled before it ran (its client cancelled it or went away)",
  );
  assert.equal(rec.only('a4').error?.code, 'CANCELLED');
  assert.equal(
    rec.only('a4').error?.message,
    "[request id: a4] request for model 'm' version 3 was cancelled before it ran: request 'a3' of its sequence 7 was cancelled, which ends the sequence (send a new START to begin again)",
  );
  assert.deepEqual(done, [
    { id: 'a3', success: false, failure: 'CANCELED' },
    { id: 'a4', success: false, failure: 'CANCELED' },
  ]);
  assert.equal(s.inflightCount(), 3);
  s.cancel(a[2]!); // again: nothing more
  assert.equal(rec.responses.get('a3')!.length, 1);

  // The sequence is over: a request of it without START is refused.
  s.enqueue(seqRequest('a5', { sequence_id: 7 }), rec.respond('a5'));
  assert.equal(rec.only('a5').error?.code, 'INVALID_ARG');

  inst.current().finish();
  await settle();
  assert.deepEqual(inst.batches(), [['a1'], ['a2']], 'the request queued before the cancelled one still runs');
  inst.current().finish();
  await settle();
  assert.deepEqual(inst.batches(), [['a1'], ['a2'], ['b1']], 'then the slot goes to the backlogged sequence');
  inst.current().finish();
  await s.stop();
  assert.equal(arena.usedBytes(), before, 'the control tensors of every request are freed, the cancelled ones too');
});

test('a cancelled request of a backlogged sequence takes all of it; cancelling a running request only tells its instance', async () => {
  const arena = Arena.create();
  const inst = new FakeInstance('m_0');
  const s = new SequenceBatchScheduler(seqConfig(), [inst], arena);
  const rec = new Recorder();
  const a1 = seqRequest('a1', { sequence_id: 1, sequence_start: true });
  const b = [seqRequest('b1', { sequence_id: 2, sequence_start: true }), seqRequest('b2', { sequence_id: 2, sequence_end: true })];
  s.enqueue(a1, rec.respond('a1'));
  for (const r of b) s.enqueue(r, rec.respond(r.id));
  s.cancel(b[1]!);
  assert.equal(rec.only('b1').error?.code, 'CANCELLED', 'nothing of a backlogged sequence has run: all of it leaves');
  assert.match(rec.only('b1').error!.message, /request 'b2' of its sequence 2 was cancelled/);
  assert.equal(rec.only('b2').error?.code, 'CANCELLED');
  s.cancel(a1);
  assert.deepEqual(
    inst.cancelled.map((r) => r.id),
    ['a1'],
    'the running request reaches its instance',
  );
  inst.current().finish();
  await s.stop();
  assert.equal(rec.only('a1').error, undefined, 'and ends with its own response');
  assert.equal(inst.executions.length, 1);
});

test('a cancel that reaches a running request ends its sequence too: the later queued requests CANCELLED, the running one ends with its own response', async () => {
  const arena = Arena.create();
  const inst = new FakeInstance('m_0');
  const done: Done[] = [];
  const s = new SequenceBatchScheduler(seqConfig(), [inst], arena, {
    requestDone: (req, st) => done.push({ id: req.id, success: st.success, failure: st.failure }),
  });
  const rec = new Recorder();
  const before = arena.usedBytes();
  const a = [
    seqRequest('a1', { sequence_id: 7, sequence_start: true }),
    seqRequest('a2', { sequence_id: 7 }),
    seqRequest('a3', { sequence_id: 7, sequence_end: true }),
  ];
  for (const r of a) s.enqueue(r, rec.respond(r.id));
  const b1 = seqRequest('b1', { sequence_id: 8, sequence_start: true, sequence_end: true });
  s.enqueue(b1, rec.respond('b1'));
  assert.deepEqual(inst.batches(), [['a1']]);

  s.cancel(a[0]!);
  assert.deepEqual(
    inst.cancelled.map((r) => r.id),
    ['a1'],
    'the running request reaches its instance',
  );
  for (const id of ['a2', 'a3']) {
    assert.equal(rec.only(id).error?.code, 'CANCELLED', id);
    assert.equal(
      rec.only(id).error?.message,
      `[request id: ${id}] request for model 'm' version 3 was cancelled before it ran: request 'a1' of its sequence 7 was cancelled, which ends the sequence (send a new START to begin again)`,
    );
  }
  assert.deepEqual(done, [
    { id: 'a2', success: false, failure: 'CANCELED' },
    { id: 'a3', success: false, failure: 'CANCELED' },
  ]);
  s.enqueue(seqRequest('a4', { sequence_id: 7 }), rec.respond('a4'));
  assert.equal(rec.only('a4').error?.code, 'INVALID_ARG', 'the sequence is over: a request of it without START is refused');

  inst.current().finish();
  await settle();
  assert.equal(rec.only('a1').error, undefined, 'the running request ends with its own response');
  assert.deepEqual(inst.batches(), [['a1'], ['b1']], 'the slot went to the backlogged sequence');
  inst.current().finish();
  await s.stop();
  assert.equal(arena.usedBytes(), before, 'the control tensors of every request are freed');
});

test('implicit state: a cancel that ends a sequence frees its state with the last request of it that runs', async () => {
  const arena = Arena.create();
  const inst = new FakeInstance('m_0');
  const s = new SequenceBatchScheduler(seqConfig(true), [inst], arena);
  const rec = new Recorder();
  const before = arena.usedBytes();
  const a = [seqRequest('a1', { sequence_id: 5, sequence_start: true }), seqRequest('a2', { sequence_id: 5 }), seqRequest('a3', { sequence_id: 5 })];
  for (const r of a) s.enqueue(r, rec.respond(r.id));
  s.cancel(a[1]!);
  assert.equal(rec.only('a2').error?.code, 'CANCELLED');
  assert.equal(rec.only('a3').error?.code, 'CANCELLED');
  const withState = (rs: InferRequest[]): InferResponse[] =>
    rs.map(() => {
      const { offset, gen } = arena.alloc(4);
      return { outputs: [{ name: 'S_OUT', datatype: 'FP32', shape: [1], offset, gen, byteSize: 4 }], final: true };
    });
  inst.current().finish(withState);
  await s.stop();
  assert.equal(rec.only('a1').error, undefined);
  assert.equal(arena.usedBytes(), before, 'the state and the control tensors are all freed');
});

test("implicit state: an execution that fails outright (its promise rejects) forgets its requests' state, as an error response does", async () => {
  const arena = Arena.create();
  const inst = new FakeInstance('m_0');
  const s = new SequenceBatchScheduler(seqConfig(true), [inst], arena);
  const rec = new Recorder();
  const before = arena.usedBytes();
  const withState = (rs: InferRequest[]): InferResponse[] =>
    rs.map(() => {
      const { offset, gen } = arena.alloc(4);
      return { outputs: [{ name: 'S_OUT', datatype: 'FP32', shape: [1], offset, gen, byteSize: 4 }], final: true };
    });
  s.enqueue(seqRequest('a1', { sequence_id: 9, sequence_start: true }), rec.respond('a1'));
  inst.current().finish(withState);
  await settle();
  s.enqueue(seqRequest('a2', { sequence_id: 9 }), rec.respond('a2'));
  inst.current().fail(new Error('the instance broke'));
  await settle();
  assert.equal(rec.only('a2').error?.code, 'INTERNAL');
  assert.equal(arena.usedBytes(), before, "the sequence's state is freed with the failed request, not held until the scheduler stops");
  await s.stop();
});

interface RescheduleCancelCase {
  name: string;
  instances: number;
  maxBatchSize: number;
  /** sequence_batching besides iterative_sequence: a strategy whose delay keeps a lone rescheduled request waiting in its slot. */
  batching: Record<string, unknown>;
  /** Enqueued first, in order; each instance then runs one execution. */
  requests: [string, Record<string, ParamValue>][];
  /** The instance whose execution releases `rescheduled` with RESCHEDULE (and answers the others). */
  on: number;
  rescheduled: string;
  /** Enqueued once it waits again: behind it in its sequence. */
  behind?: [string, Record<string, ParamValue>];
  /** The final answers, in the order they go out. */
  order: [string, 'ok' | 'CANCELLED'][];
}

/** Direct with two slots per instance: one ready head of two waits the (long) delay. */
const DIRECT_WAITS = { direct: { max_queue_delay_microseconds: 5_000_000, minimum_slot_utilization: 1 } };

const rescheduleCancels: RescheduleCancelCase[] = [
  {
    name: 'two instances, direct: rescheduled on the second instance, not the first pool',
    instances: 2,
    maxBatchSize: 2,
    batching: DIRECT_WAITS,
    // a and c share instance 0, b and d instance 1 (a new sequence takes the lowest free slot on the least busy instance).
    requests: [
      ['a', {}],
      ['b', {}],
      ['c', {}],
      ['d', {}],
    ],
    on: 1,
    rescheduled: 'b',
    order: [
      ['d', 'ok'],
      ['b', 'CANCELLED'],
      ['a', 'ok'],
      ['c', 'ok'],
    ],
  },
  {
    name: 'one instance, direct',
    instances: 1,
    maxBatchSize: 2,
    batching: DIRECT_WAITS,
    requests: [
      ['a', {}],
      ['b', {}],
    ],
    on: 0,
    rescheduled: 'a',
    order: [
      ['b', 'ok'],
      ['a', 'CANCELLED'],
    ],
  },
  {
    name: 'oldest with preserve_ordering: the answer held behind it goes out after it',
    instances: 1,
    maxBatchSize: 2,
    batching: { oldest: { max_candidate_sequences: 2, preferred_batch_size: [2], max_queue_delay_microseconds: 5_000_000, preserve_ordering: true } },
    requests: [
      ['p', {}],
      ['q', {}],
    ],
    on: 0,
    rescheduled: 'p',
    order: [
      ['p', 'CANCELLED'],
      ['q', 'ok'],
    ],
  },
  {
    name: 'a client sequence id with a request queued behind the rescheduled one: both leave, the later one never admitted twice',
    instances: 2,
    maxBatchSize: 2,
    batching: DIRECT_WAITS,
    requests: [
      ['x', { sequence_id: 90, sequence_start: true }],
      ['y', {}],
      ['z', {}],
      ['w', {}],
    ],
    on: 0,
    rescheduled: 'x',
    behind: ['x2', { sequence_id: 90 }],
    order: [
      ['z', 'ok'],
      ['x', 'CANCELLED'],
      ['x2', 'CANCELLED'],
      ['y', 'ok'],
      ['w', 'ok'],
    ],
  },
];

for (const c of rescheduleCancels) {
  test(`iterative_sequence: a rescheduled request cancelled while it waits for its next step is answered once and every pool drains: ${c.name}`, async () => {
    const arena = Arena.create();
    const insts = Array.from({ length: c.instances }, (_, i) => new FakeInstance(`m_${i}`));
    const cfg = config(c.maxBatchSize);
    cfg.sequence_batching = { max_sequence_idle_microseconds: 5_000_000, iterative_sequence: true, ...c.batching };
    const done: Done[] = [];
    const s = new SequenceBatchScheduler(cfg, insts, arena, {
      requestDone: (req, st) => done.push({ id: req.id, success: st.success, failure: st.failure }),
    });
    const rec = new Recorder();
    const before = arena.usedBytes();
    const given = new Map<string, InferRequest>();
    const enqueue = ([id, params]: [string, Record<string, ParamValue>]): void => {
      const r = seqRequest(id, params);
      given.set(id, r);
      s.enqueue(r, rec.respond(id));
    };
    c.requests.forEach(enqueue);
    assert.ok(
      insts.every((i) => i.running === 1),
      'every instance runs an execution',
    );
    const ran = insts[c.on]!;
    ran.current().finish((rs) => rs.map((r) => (r.id === c.rescheduled ? { outputs: [], final: true, rescheduled: true as const } : echo(r))));
    await settle();
    assert.equal(ran.executions.length, 1, "the rescheduled request waits in its slot (the strategy's delay)");
    if (c.behind !== undefined) enqueue(c.behind);

    s.cancel(given.get(c.rescheduled)!);
    for (let guard = 0; insts.some((i) => i.running > 0); guard++) {
      assert.ok(guard < 10, 'the executions end');
      for (const i of insts) if (i.running > 0) i.current().finish();
      await settle();
    }
    let stopped = false;
    void s.stop().then(() => (stopped = true));
    await until(() => stopped).catch(() => assert.fail(`stop() never ended: ${s.inflightCount()} request(s) counted in flight`));

    assert.deepEqual(
      rec.finalOrder,
      c.order.map(([id]) => id),
      'every request answered once, in this order',
    );
    for (const [id, want] of c.order) {
      const r = rec.only(id);
      if (want === 'ok') assert.equal(r.error, undefined, `${id} succeeded`);
      else assert.equal(r.error?.code, 'CANCELLED', `${id} cancelled`);
    }
    assert.equal(
      rec.only(c.rescheduled).error?.message,
      `[request id: ${c.rescheduled}] request for model 'm' version 3 was cancelled after its model rescheduled it, before its next step ran (its client cancelled it or went away)`,
    );
    if (c.behind !== undefined) assert.match(rec.only(c.behind[0]).error!.message, new RegExp(`request '${c.rescheduled}' of its sequence 90 was cancelled`));
    assert.deepEqual(done.map((d) => d.id).sort(), c.order.map(([id]) => id).sort(), 'each request counted once');
    for (const d of done) {
      const cancelled = c.order.find(([id]) => id === d.id)![1] === 'CANCELLED';
      assert.deepEqual(
        { success: d.success, failure: d.failure },
        cancelled ? { success: false, failure: 'CANCELED' } : { success: true, failure: undefined },
        d.id,
      );
    }
    assert.equal(s.inflightCount(), 0);
    assert.ok(
      insts.every((i) => i.executions.length === 1),
      'the cancelled request never ran again',
    );
    assert.equal(arena.usedBytes(), before, 'its rewritten control tensors are freed too');
  });
}

/** An iterative_sequence scheduler on two fake instances, recording answers and requestDone; `before`: the arena's used bytes at the start. */
function iterativeOnTwo() {
  const arena = Arena.create();
  const insts = [new FakeInstance('m_0'), new FakeInstance('m_1')];
  const cfg = config(1);
  cfg.sequence_batching = { max_sequence_idle_microseconds: 5_000_000, iterative_sequence: true };
  const done: Done[] = [];
  const s = new SequenceBatchScheduler(cfg, insts, arena, {
    requestDone: (req, st) => done.push({ id: req.id, success: st.success, failure: st.failure }),
  });
  return { arena, insts, done, s, rec: new Recorder(), before: arena.usedBytes() };
}

test('iterative_sequence: a cancel that ends a sequence while its request runs (a later request of it cancelled) lets that request run on elsewhere, counted by the pool that runs it', async () => {
  const { arena, insts, done, s, rec, before } = iterativeOnTwo();
  const x2 = seqRequest('x2', { sequence_id: 5 });
  s.enqueue(seqRequest('x', { sequence_id: 5, sequence_start: true }), rec.respond('x'));
  s.enqueue(x2, rec.respond('x2'));
  s.cancel(x2);
  assert.equal(rec.only('x2').error?.code, 'CANCELLED');
  // The cancel ended sequence 5 and freed its slot on m_0: y takes it and waits there for x's execution.
  s.enqueue(seqRequest('y', {}), rec.respond('y'));
  insts[0]!.current().finish((rs) => rs.map(() => ({ outputs: [], final: true, rescheduled: true as const })));
  await settle();
  assert.deepEqual(
    insts.map((i) => i.batches()),
    [[['x'], ['y']], [['x']]],
    'y runs where x was; x runs its next step on m_1',
  );
  for (const i of insts) i.current().finish();
  let stopped = false;
  void s.stop().then(() => (stopped = true));
  await until(() => stopped).catch(() => assert.fail(`stop() never ended: ${s.inflightCount()} request(s) counted in flight`));
  assert.equal(rec.only('x').error, undefined);
  assert.equal(rec.only('y').error, undefined);
  assert.deepEqual(done.map((d) => d.id).sort(), ['x', 'x2', 'y']);
  assert.equal(s.inflightCount(), 0);
  assert.equal(arena.usedBytes(), before);
});

test('iterative_sequence: a request cancelled while it runs that its model reschedules anyway is cancelled as it comes back, with the later ones of its sequence, never run again', async () => {
  const { arena, insts, done, s, rec, before } = iterativeOnTwo();
  const b = seqRequest('b', { sequence_id: 7, sequence_start: true });
  s.enqueue(seqRequest('a', {}), rec.respond('a'));
  s.enqueue(b, rec.respond('b'));
  s.enqueue(seqRequest('b2', { sequence_id: 7 }), rec.respond('b2'));
  assert.deepEqual(
    insts.map((i) => i.batches()),
    [[['a']], [['b']]],
  );
  s.cancel(b);
  assert.deepEqual(
    insts[1]!.cancelled.map((r) => r.id),
    ['b'],
    'the running request reaches its instance',
  );
  assert.equal(rec.finalOrder.length, 0);
  // The model does not stop: it releases b with RESCHEDULE.
  insts[1]!.current().finish((rs) => rs.map(() => ({ outputs: [], final: true, rescheduled: true as const })));
  await settle();
  assert.equal(
    rec.only('b').error?.message,
    "[request id: b] request for model 'm' version 3 was cancelled after its model rescheduled it, before its next step ran (its client cancelled it or went away)",
  );
  assert.match(rec.only('b2').error!.message, /request 'b' of its sequence 7 was cancelled, which ends the sequence/);
  assert.deepEqual(insts[1]!.batches(), [['b']], 'neither runs again');
  insts[0]!.current().finish();
  let stopped = false;
  void s.stop().then(() => (stopped = true));
  await until(() => stopped).catch(() => assert.fail(`stop() never ended: ${s.inflightCount()} request(s) counted in flight`));
  assert.deepEqual(done, [
    { id: 'b', success: false, failure: 'CANCELED' },
    { id: 'b2', success: false, failure: 'CANCELED' },
    { id: 'a', success: true, failure: undefined },
  ]);
  assert.equal(s.inflightCount(), 0);
  assert.equal(arena.usedBytes(), before);
});
