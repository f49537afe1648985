import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Arena } from '../../src/dataplane/arena';
import type { InferRequest, ParamValue } from '../../src/core/request';
import { SequenceBatchScheduler } from '../../src/scheduler/sequence-batch-scheduler';
import { FakeInstance, Recorder, config, request, settle } from './scheduler-test-kit';

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
    params: { sequence_id: 9, sequence_start: true }, batchSize: 2,
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
    name: 'numeric id for a string CORRID',
    params: { sequence_id: 3, sequence_start: true }, corrid: 'TYPE_STRING',
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
