/**
 * SequenceBatchScheduler.cancel over fake instances: a cancelled request
 * still queued ends its sequence as Triton's sequence batcher does: it and
 * the later queued requests of the sequence are answered CANCELLED (counted
 * CANCELED), the earlier ones still run, the id needs a new START, and the
 * freed slot goes to the backlog; a backlogged sequence leaves whole; the
 * control tensors and the implicit state are freed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Arena } from '../../src/dataplane/arena';
import type { InferRequest, InferResponse, ParamValue } from '../../src/core/request';
import { SequenceBatchScheduler } from '../../src/scheduler/sequence-batch-scheduler';
import type { RequestDoneStats } from '../../src/scheduler/scheduler-hooks';
import { FakeInstance, Recorder, config, request, settle } from './scheduler-test-kit';

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
  assert.equal(rec.only('a3').error?.message, "[request id: a3] request for model 'm' version 3 was cancelled before it ran (its client cancelled it or went away)");
  assert.equal(rec.only('a4').error?.code, 'CANCELLED');
  assert.equal(rec.only('a4').error?.message,
    "[request id: a4] request for model 'm' version 3 was cancelled before it ran: request 'a3' of its sequence 7 was cancelled, which ends the sequence (send a new START to begin again)");
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
  assert.deepEqual(inst.cancelled.map((r) => r.id), ['a1'], 'the running request reaches its instance');
  inst.current().finish();
  await s.stop();
  assert.equal(rec.only('a1').error, undefined, 'and ends with its own response');
  assert.equal(inst.executions.length, 1);
});

test('implicit state: a cancel that ends a sequence frees its state with the last request of it that runs', async () => {
  const arena = Arena.create();
  const inst = new FakeInstance('m_0');
  const s = new SequenceBatchScheduler(seqConfig(true), [inst], arena);
  const rec = new Recorder();
  const before = arena.usedBytes();
  const a = [
    seqRequest('a1', { sequence_id: 5, sequence_start: true }),
    seqRequest('a2', { sequence_id: 5 }),
    seqRequest('a3', { sequence_id: 5 }),
  ];
  for (const r of a) s.enqueue(r, rec.respond(r.id));
  s.cancel(a[1]!);
  assert.equal(rec.only('a2').error?.code, 'CANCELLED');
  assert.equal(rec.only('a3').error?.code, 'CANCELLED');
  const withState = (rs: InferRequest[]): InferResponse[] => rs.map(() => {
    const { offset, gen } = arena.alloc(4);
    return { outputs: [{ name: 'S_OUT', datatype: 'FP32', shape: [1], offset, gen, byteSize: 4 }], final: true };
  });
  inst.current().finish(withState);
  await s.stop();
  assert.equal(rec.only('a1').error, undefined);
  assert.equal(arena.usedBytes(), before, 'the state and the control tensors are all freed');
});
