import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Arena } from '../../src/dataplane/arena';
import type { InferRequest, ParamValue } from '../../src/core/request';
import { SequenceBatchScheduler } from '../../src/scheduler/sequence-batch-scheduler';
import { FakeInstance, Recorder, config, request, settle, until } from './scheduler-test-kit';

function seqConfig(maxBatchSize: number, corridType = 'TYPE_UINT64'): ReturnType<typeof config> {
  const c = config(maxBatchSize);
  c.sequence_batching = {
    max_sequence_idle_microseconds: 5_000_000,
    control_input: [
      { name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', int32_false_true: [0, 1] }] },
      { name: 'END', control: [{ kind: 'CONTROL_SEQUENCE_END', fp32_false_true: [0, 1] }] },
      { name: 'READY', control: [{ kind: 'CONTROL_SEQUENCE_READY', bool_false_true: [false, true] }] },
      { name: 'CORRID', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', data_type: corridType }] },
    ],
  };
  return c;
}

function seqRequest(id: string, params: Record<string, ParamValue>, batchSize = 1): InferRequest {
  const r = request(id, batchSize);
  r.parameters = params;
  return r;
}

/** The control values a request reached the instance with. */
function controlsOf(arena: Arena, r: InferRequest): Record<string, number | bigint | string> {
  const out: Record<string, number | bigint | string> = {};
  for (const t of r.inputs) {
    const b = arena.buffer(t.offset, t.byteSize);
    if (t.name === 'START') out[t.name] = b.readInt32LE(0);
    else if (t.name === 'END') out[t.name] = b.readFloatLE(0);
    else if (t.name === 'READY') out[t.name] = b[0]!;
    else if (t.name === 'CORRID') out[t.name] = t.datatype === 'BYTES' ? b.subarray(4).toString() : b.readBigUInt64LE(0);
    else continue;
    assert.deepEqual(t.shape, [1, 1]);
  }
  return out;
}

test('two sequences on one instance: one request per slot per execution, with control tensors, freed after', async () => {
  const arena = Arena.create();
  const inst = new FakeInstance('m_0');
  const s = new SequenceBatchScheduler(seqConfig(4), [inst], arena);
  const rec = new Recorder();
  const before = arena.usedBytes();
  s.enqueue(seqRequest('a1', { sequence_id: 11, sequence_start: true }), rec.respond('a1'));
  s.enqueue(seqRequest('b1', { sequence_id: 22, sequence_start: true }), rec.respond('b1'));
  s.enqueue(seqRequest('a2', { sequence_id: 11, sequence_end: true }), rec.respond('a2'));
  assert.deepEqual(inst.batches(), [['a1']]);
  const first = inst.current().requests[0]!;
  assert.deepEqual(controlsOf(arena, first), { START: 1, END: 0, READY: 1, CORRID: 11n });
  inst.current().finish();
  await settle();
  assert.deepEqual(inst.batches(), [['a1'], ['a2', 'b1']]);
  assert.deepEqual(controlsOf(arena, inst.current().requests[0]!), { START: 0, END: 1, READY: 1, CORRID: 11n });
  inst.current().finish();
  await s.stop();
  assert.deepEqual(rec.finalOrder.sort(), ['a1', 'a2', 'b1']);
  assert.equal(arena.usedBytes(), before, 'control tensors are freed after the final response');
});

const refusals: { name: string; params: Record<string, ParamValue>; batchSize?: number; corrid?: string; message: string }[] = [
  {
    name: 'no START on the first request',
    params: { sequence_id: 9 },
    message: "inference request for sequence 9 to model 'm' must specify the START flag on the first request of the sequence",
  },
  {
    name: 'batch size above 1',
    params: { sequence_id: 9, sequence_start: true },
    batchSize: 2,
    message: "inference request to model 'm' must specify batch-size 1 due to requirements of sequence batcher",
  },
  {
    name: 'no correlation id',
    params: { sequence_start: true },
    message: "inference request to model 'm' must specify a non-zero or non-empty correlation ID",
  },
  {
    name: 'string id for a numeric CORRID',
    params: { sequence_id: 'abc', sequence_start: true },
    message: "[request id: r] sequence batching control 'CORRID' data-type is 'BYTES', but model 'm' expects 'UINT64'",
  },
  {
    name: 'a string id for a numeric CORRID and batch size 2: the id first, as Triton validates it before the batcher',
    params: { sequence_id: 'abc', sequence_start: true },
    batchSize: 2,
    message: "[request id: r] sequence batching control 'CORRID' data-type is 'BYTES', but model 'm' expects 'UINT64'",
  },
  {
    name: 'numeric id for a string CORRID',
    params: { sequence_id: 3, sequence_start: true },
    corrid: 'TYPE_STRING',
    message: "[request id: r] sequence batching control 'CORRID' data-type is 'UINT64', but model 'm' expects 'BYTES'",
  },
];

for (const c of refusals) {
  test(`refused before any queue: ${c.name}`, async () => {
    const arena = Arena.create();
    const inst = new FakeInstance('m_0');
    const s = new SequenceBatchScheduler(seqConfig(4, c.corrid), [inst], arena);
    const rec = new Recorder();
    const before = arena.usedBytes();
    s.enqueue(seqRequest('r', c.params, c.batchSize), rec.respond('r'));
    const r = rec.only('r');
    assert.equal(r.error?.code, 'INVALID_ARG');
    assert.equal(r.error?.message, c.message);
    assert.equal(inst.executions.length, 0);
    assert.equal(arena.usedBytes(), before);
    await s.stop();
  });
}

test('a string CORRID reaches the instance as a BYTES element', async () => {
  const arena = Arena.create();
  const inst = new FakeInstance('m_0');
  const s = new SequenceBatchScheduler(seqConfig(0, 'TYPE_STRING'), [inst], arena);
  const rec = new Recorder();
  s.enqueue(seqRequest('a', { sequence_id: 'seq-α', sequence_start: true, sequence_end: true }), rec.respond('a'));
  const t = inst.current().requests[0]!.inputs.find((i) => i.name === 'CORRID')!;
  assert.equal(t.datatype, 'BYTES');
  assert.deepEqual(t.shape, [1]);
  assert.equal(arena.buffer(t.offset, t.byteSize).subarray(4).toString(), 'seq-α');
  inst.current().finish();
  await s.stop();
});

test("direct: every sequence keeps its slot's row; idle slots below the highest busy one get not-ready rows (Triton's controls, zero inputs), answered to nobody and freed", async () => {
  const arena = Arena.create();
  const inst = new FakeInstance('m_0');
  const execs: number[][] = [];
  const done: string[] = [];
  const hooks = {
    executionDone: (batchSize: number, requests: number, _t: unknown, padding: number): void => {
      execs.push([batchSize, requests, padding]);
    },
    requestDone: (r: InferRequest): void => {
      done.push(r.id);
    },
  };
  const s = new SequenceBatchScheduler(seqConfig(4), [inst], arena, hooks);
  const rec = new Recorder();
  const baseline = arena.usedBytes();
  const inputs: InferRequest['inputs'] = [];
  const withData = (id: string, params: Record<string, ParamValue>): InferRequest => {
    const r = seqRequest(id, params);
    const { offset, gen } = arena.alloc(16);
    arena.bytes(offset, 16).fill(7);
    r.inputs = [{ ...r.inputs[0]!, offset, gen, byteSize: 16 }];
    inputs.push(r.inputs[0]!);
    return r;
  };
  // Each row's response carries an output block, as a real instance's would.
  const finish = (): void =>
    inst.current().finish((requests) =>
      requests.map((r) => {
        const { offset, gen } = arena.alloc(8);
        return { outputs: [{ name: 'y', datatype: 'FP32', shape: [1, 2], offset, gen, byteSize: 8 }], parameters: { echo: r.id }, final: true };
      }),
    );
  // a, b, c start one after the other on the free instance: slots 0, 1, 2.
  for (const [id, seq] of [
    ['a1', 1],
    ['b1', 2],
    ['c1', 3],
  ] as const) {
    s.enqueue(withData(id, { sequence_id: seq, sequence_start: true }), rec.respond(id));
    finish();
    await settle();
  }
  s.enqueue(withData('b2', { sequence_id: 2 }), rec.respond('b2'));
  const lone = inst.current().requests;
  assert.equal(lone[0]!.id, '');
  assert.deepEqual(controlsOf(arena, lone[0]!), { START: 0, END: 0, READY: 0, CORRID: 0n });
  const x = lone[0]!.inputs.find((t) => t.name === 'x')!;
  assert.deepEqual(x.shape, [1, 4]);
  assert.ok(
    arena.bytes(x.offset, x.byteSize).every((b) => b === 0),
    "a not-ready row carries zeros, not another sequence's data",
  );
  assert.deepEqual([lone[0]!.requestedOutputs, lone[0]!.parameters], [[], {}]);
  assert.deepEqual(controlsOf(arena, lone[1]!), { START: 0, END: 0, READY: 1, CORRID: 2n });
  // While b2 runs, a and c queue; b is idle when they run: its slot gets a not-ready row.
  s.enqueue(withData('a2', { sequence_id: 1, sequence_end: true }), rec.respond('a2'));
  s.enqueue(withData('c2', { sequence_id: 3, sequence_end: true }), rec.respond('c2'));
  finish();
  await settle();
  assert.deepEqual(controlsOf(arena, inst.current().requests[1]!), { START: 0, END: 0, READY: 0, CORRID: 0n });
  finish();
  await s.stop();
  assert.deepEqual(inst.batches(), [['a1'], ['', 'b1'], ['', '', 'c1'], ['', 'b2'], ['a2', '', 'c2']]);
  assert.deepEqual(
    execs,
    [
      [1, 1, 0],
      [2, 1, 1],
      [3, 1, 2],
      [2, 1, 1],
      [3, 2, 1],
    ],
    "batch sizes count the rows, requests only the clients'",
  );
  assert.deepEqual(done.sort(), ['a1', 'a2', 'b1', 'b2', 'c1', 'c2']);
  for (const id of done) {
    const r = rec.only(id);
    assert.equal(r.parameters?.echo, id, `${id} got its own row's response`);
    for (const t of r.outputs) arena.free(t);
  }
  for (const t of inputs) arena.free(t);
  assert.equal(arena.usedBytes(), baseline, 'not-ready rows, their controls and their outputs are freed');
});

test("direct: a head whose shapes differ from the lowest slot's waits for the next execution, its row not-ready", async () => {
  const arena = Arena.create();
  const inst = new FakeInstance('m_0');
  const c = seqConfig(4);
  c.input[0]!.dims = [-1];
  const s = new SequenceBatchScheduler(c, [inst], arena);
  const rec = new Recorder();
  const shaped = (id: string, params: Record<string, ParamValue>, n: number): InferRequest => {
    const r = seqRequest(id, params);
    r.inputs = [{ ...r.inputs[0]!, shape: [1, n] }];
    return r;
  };
  s.enqueue(shaped('a1', { sequence_id: 1, sequence_start: true }, 4), rec.respond('a1'));
  // While a1 runs: a2 and c1 have a1's shapes, b1 does not.
  s.enqueue(shaped('a2', { sequence_id: 1 }, 4), rec.respond('a2'));
  s.enqueue(shaped('b1', { sequence_id: 2, sequence_start: true }, 3), rec.respond('b1'));
  s.enqueue(shaped('c1', { sequence_id: 3, sequence_start: true }, 4), rec.respond('c1'));
  inst.current().finish();
  await settle();
  inst.current().finish();
  await settle();
  inst.current().finish();
  await s.stop();
  assert.deepEqual(inst.batches(), [['a1'], ['a2', '', 'c1'], ['', 'b1']]);
});

test('iterative_sequence: a request without a correlation id starts its own sequence (ids from 1, START), which ends once it ran', async () => {
  const arena = Arena.create();
  const inst = new FakeInstance('m_0');
  const c = seqConfig(4);
  (c.sequence_batching as Record<string, unknown>).iterative_sequence = true;
  const s = new SequenceBatchScheduler(c, [inst], arena);
  const rec = new Recorder();
  s.enqueue(seqRequest('x', {}), rec.respond('x'));
  const first = inst.current().requests[0]!;
  assert.deepEqual(controlsOf(arena, first), { START: 1, END: 0, READY: 1, CORRID: 1n });
  assert.deepEqual(first.parameters, { sequence_id: 1, sequence_start: true });
  inst.current().finish();
  await settle();
  s.enqueue(seqRequest('y', {}), rec.respond('y'));
  assert.deepEqual(controlsOf(arena, inst.current().requests[0]!), { START: 1, END: 0, READY: 1, CORRID: 2n });
  assert.deepEqual(inst.batches(), [['x'], ['y']], 'the ended sequence left slot 0 to the next one');
  inst.current().finish();
  await settle();
  s.enqueue(seqRequest('z', { sequence_id: 1 }), rec.respond('z'));
  assert.equal(rec.only('z').error?.message, "inference request for sequence 1 to model 'm' must specify the START flag on the first request of the sequence");
  await s.stop();
});

test("iterative_sequence: a rescheduled request runs again as its sequence's next step (no START, same id), answered once, its slot held until then", async () => {
  const arena = Arena.create();
  const inst = new FakeInstance('m_0');
  const c = seqConfig(1);
  (c.sequence_batching as Record<string, unknown>).iterative_sequence = true;
  const s = new SequenceBatchScheduler(c, [inst], arena);
  const rec = new Recorder();
  const before = arena.usedBytes();
  const rescheduled = (requests: InferRequest[]) => requests.map(() => ({ outputs: [], final: true, rescheduled: true as const }));
  s.enqueue(seqRequest('x', {}), rec.respond('x'));
  // The only slot is x's: y waits in the backlog while x is rescheduled.
  s.enqueue(seqRequest('y', {}), rec.respond('y'));
  assert.deepEqual(controlsOf(arena, inst.current().requests[0]!), { START: 1, END: 0, READY: 1, CORRID: 1n });
  inst.current().finish(rescheduled);
  await settle();
  assert.deepEqual(inst.batches(), [['x'], ['x']], 'x runs again before the backlog gets the slot');
  const again = inst.current().requests[0]!;
  assert.deepEqual(controlsOf(arena, again), { START: 0, END: 0, READY: 1, CORRID: 1n });
  assert.deepEqual(again.parameters, { sequence_id: 1, sequence_start: false, sequence_end: false });
  assert.equal(s.inflightCount(), 2);
  assert.equal(rec.finalOrder.length, 0, 'a rescheduled request is not answered');
  inst.current().finish();
  await settle();
  assert.deepEqual(inst.batches(), [['x'], ['x'], ['y']], 'x answered: its sequence ended and y got the slot');
  inst.current().finish();
  await s.stop();
  assert.deepEqual(rec.finalOrder, ['x', 'y']);
  assert.equal(rec.only('x').error, undefined);
  assert.equal(arena.usedBytes(), before, 'the rewritten control tensors are freed too');
});

test("without iterative_sequence a rescheduled response is answered with Triton's refusal, naming the model and what to do", async () => {
  const arena = Arena.create();
  const inst = new FakeInstance('m_0');
  const s = new SequenceBatchScheduler(seqConfig(1), [inst], arena);
  const rec = new Recorder();
  s.enqueue(seqRequest('x', { sequence_id: 5, sequence_start: true }), rec.respond('x'));
  inst.current().finish((requests) => requests.map(() => ({ outputs: [], final: true, rescheduled: true as const })));
  await s.stop();
  const e = rec.only('x').error;
  assert.equal(e?.code, 'UNSUPPORTED');
  assert.match(
    e!.message,
    /^\[request id: x\] Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not configured to handle such a flag\. .*'sequence_batching \{ iterative_sequence: true \}' to the config of model 'm'/,
  );
  assert.deepEqual(inst.batches(), [['x']]);
});

test('iterative_sequence with oldest preserve_ordering: a rescheduled request keeps its place, so a later one answered first waits for it', async () => {
  const arena = Arena.create();
  const inst = new FakeInstance('m_0');
  const c = seqConfig(2);
  const sb = c.sequence_batching as Record<string, unknown>;
  sb.iterative_sequence = true;
  sb.oldest = { max_candidate_sequences: 4, preserve_ordering: true };
  const s = new SequenceBatchScheduler(c, [inst], arena);
  const rec = new Recorder();
  s.enqueue(seqRequest('x', {}), rec.respond('x'));
  s.enqueue(seqRequest('p', {}), rec.respond('p'));
  s.enqueue(seqRequest('q', {}), rec.respond('q'));
  inst.current().finish();
  await settle();
  assert.deepEqual(inst.batches(), [['x'], ['p', 'q']]);
  // p is rescheduled and q answered in the same execution: q waits for p, which was dispatched first.
  inst
    .current()
    .finish((requests) => requests.map((r) => (r.id === 'p' ? { outputs: [], final: true, rescheduled: true as const } : { outputs: [], final: true })));
  await settle();
  assert.deepEqual(inst.batches(), [['x'], ['p', 'q'], ['p']]);
  assert.deepEqual(rec.finalOrder, ['x']);
  inst.current().finish();
  await s.stop();
  assert.deepEqual(rec.finalOrder, ['x', 'p', 'q'], 'p keeps its first dispatch place ahead of q');
});

test('iterative_sequence: a sequence whose request runs past max_sequence_idle keeps its slot, so the request runs again on the instance (and pool) that counts it', async () => {
  const arena = Arena.create();
  const insts = [new FakeInstance('m_0'), new FakeInstance('m_1')];
  const c = seqConfig(1);
  const sb = c.sequence_batching as Record<string, unknown>;
  sb.iterative_sequence = true;
  sb.max_sequence_idle_microseconds = 1000; // the idle check runs every 10 ms
  const s = new SequenceBatchScheduler(c, insts, arena);
  const rec = new Recorder();
  s.enqueue(seqRequest('x', {}), rec.respond('x'));
  assert.deepEqual(insts[0]!.batches(), [['x']]);
  // Several idle checks pass while x runs (timers fire in order: the 10 ms check before this 60 ms one).
  await new Promise((resolve) => setTimeout(resolve, 60));
  s.enqueue(seqRequest('y', {}), rec.respond('y'));
  assert.deepEqual(insts[1]!.batches(), [['y']], 'x still holds its slot on m_0: y takes the free one on m_1');
  insts[0]!.current().finish((requests) => requests.map(() => ({ outputs: [], final: true, rescheduled: true as const })));
  await settle();
  assert.deepEqual(insts[0]!.batches(), [['x'], ['x']], 'x runs its next step where its sequence is');
  for (const i of insts) i.current().finish();
  let stopped = false;
  void s.stop().then(() => (stopped = true));
  await until(() => stopped).catch(() => assert.fail('stop() never ended: a pool still counts a request in flight'));
  assert.deepEqual(rec.finalOrder.sort(), ['x', 'y']);
  assert.equal(rec.only('x').error, undefined);
  assert.equal(s.inflightCount(), 0);
});
