/**
 * Scheduler.cancel over fake instances (scheduler-test-kit.ts): for each
 * scheduler that queues, a cancelled request still in the queue leaves it,
 * never runs, and is answered once with CANCELLED, counted as Triton counts
 * it (a failure, reason CANCELED); one already running is handed to its
 * instance (ModelInstance.cancel) and ends with its own response; one that
 * finished, or that the scheduler never saw, is ignored. The sequence
 * batcher's cancels are in sequence-cancel.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { skippedResponse, type InferRequest } from '../../src/core/request';
import { DefaultScheduler } from '../../src/scheduler/default-scheduler';
import { DynamicBatchScheduler } from '../../src/scheduler/dynamic-batch-scheduler';
import type { Scheduler } from '../../src/scheduler/scheduler';
import type { RequestDoneStats, SchedulerHooks } from '../../src/scheduler/scheduler-hooks';
import { FakeInstance, Recorder, config, request, settle } from './scheduler-test-kit';

interface Done {
  id: string;
  success: boolean;
  failure: RequestDoneStats['failure'];
}

function hooks(done: Done[]): SchedulerHooks {
  return { requestDone: (req, s) => done.push({ id: req.id, success: s.success, failure: s.failure }) };
}

/** The schedulers that keep a queue of their own, with one instance that runs one request at a time. */
const kinds: { name: string; make: (inst: FakeInstance, h: SchedulerHooks) => Scheduler }[] = [
  { name: 'default', make: (inst, h) => new DefaultScheduler('m', [inst], h) },
  { name: 'dynamic (max batch 1)', make: (inst, h) => new DynamicBatchScheduler(config(1, {}), [inst], h) },
];

for (const kind of kinds) {
  test(`${kind.name}: a queued request that is cancelled leaves the queue, answered CANCELLED and counted CANCELED`, async () => {
    const inst = new FakeInstance('m_0');
    const done: Done[] = [];
    const s = kind.make(inst, hooks(done));
    const rec = new Recorder();
    const reqs = ['r0', 'r1', 'r2'].map((id) => request(id));
    reqs.forEach((r) => s.enqueue(r, rec.respond(r.id)));
    assert.deepEqual(inst.batches(), [['r0']], 'r1 and r2 wait');
    s.cancel(reqs[1]!);
    const r1 = rec.only('r1');
    assert.equal(r1.final, true);
    assert.equal(r1.error?.code, 'CANCELLED');
    assert.equal(r1.error?.message, "[request id: r1] request for model 'm' version 3 was cancelled before it ran (its client cancelled it or went away)");
    assert.deepEqual(done, [{ id: 'r1', success: false, failure: 'CANCELED' }]);
    assert.equal(s.inflightCount(), 2);
    s.cancel(reqs[1]!); // again: already answered
    assert.equal(rec.responses.get('r1')!.length, 1, 'answered once');
    inst.current().finish();
    await settle();
    inst.current().finish();
    await settle();
    assert.deepEqual(inst.batches(), [['r0'], ['r2']], 'r1 never ran');
    assert.deepEqual(inst.cancelled, [], 'no instance was told: r1 was not on one');
    assert.equal(s.inflightCount(), 0);
    await s.stop();
  });

  test(`${kind.name}: a running request that is cancelled is told to its instance and ends with its own response`, async () => {
    const inst = new FakeInstance('m_0');
    const done: Done[] = [];
    const s = kind.make(inst, hooks(done));
    const rec = new Recorder();
    const r0 = request('r0');
    s.enqueue(r0, rec.respond('r0'));
    s.cancel(r0);
    assert.deepEqual(inst.cancelled, [r0]);
    assert.equal(rec.responses.get('r0'), undefined, 'not answered by the scheduler');
    inst.current().finish((rs) => rs.map(() => ({ outputs: [], error: { code: 'CANCELLED', message: 'model saw it' }, final: true })));
    await settle();
    assert.equal(rec.only('r0').error?.message, 'model saw it');
    assert.deepEqual(done, [{ id: 'r0', success: false, failure: undefined }], "the model's answer: an execution failure (BACKEND)");
    // Finished, or never seen: nothing happens.
    s.cancel(r0);
    s.cancel(request('stranger'));
    assert.deepEqual(inst.cancelled, [r0]);
    await s.stop();
  });
}

test('dynamic batcher: the batch formed after a cancel leaves the cancelled request out', async () => {
  const inst = new FakeInstance('m_0');
  const s = new DynamicBatchScheduler(config(4, { max_queue_delay_microseconds: 0 }), [inst]);
  const rec = new Recorder();
  const reqs = ['a', 'b', 'c', 'd', 'e'].map((id) => request(id));
  reqs.forEach((r) => s.enqueue(r, rec.respond(r.id)));
  assert.deepEqual(inst.batches(), [['a']]);
  s.cancel(reqs[2]!);
  inst.current().finish();
  await settle();
  assert.deepEqual(inst.batches(), [['a'], ['b', 'd', 'e']]);
  assert.equal(rec.only('c').error?.code, 'CANCELLED');
  inst.current().finish();
  await s.stop();
});

test('a request of a batch: only that request is told to the instance', async () => {
  const inst = new FakeInstance('m_0');
  const s = new DynamicBatchScheduler(config(4, {}), [inst]);
  const rec = new Recorder();
  const busy = request('busy');
  s.enqueue(busy, rec.respond('busy'));
  const batch: InferRequest[] = ['x', 'y', 'z'].map((id) => request(id));
  batch.forEach((r) => s.enqueue(r, rec.respond(r.id)));
  inst.current().finish();
  await settle();
  assert.deepEqual(inst.batches()[1], ['x', 'y', 'z']);
  s.cancel(batch[1]!);
  assert.deepEqual(inst.cancelled, [batch[1]]);
  inst.current().finish();
  await s.stop();
  assert.deepEqual(rec.finalOrder, ['busy', 'x', 'y', 'z'], 'every request still answered by its execution');
});

test('a response the instance marks skipped (cancelled before its execution began) counts CANCELED and not in the execution', async () => {
  const inst = new FakeInstance('m_0');
  const done: Done[] = [];
  const executions: { rows: number; requests: number }[] = [];
  const s = new DynamicBatchScheduler(config(4, {}), [inst], {
    requestDone: (req, st) => done.push({ id: req.id, success: st.success, failure: st.failure }),
    executionDone: (rows, requests) => executions.push({ rows, requests }),
  });
  const rec = new Recorder();
  const busy = request('busy');
  s.enqueue(busy, rec.respond('busy'));
  const batch = ['x', 'y', 'z'].map((id) => request(id));
  batch.forEach((r) => s.enqueue(r, rec.respond(r.id)));
  inst.current().finish();
  await settle();
  inst.current().finish((rs) => rs.map((r) => (r.id === 'y' ? skippedResponse(r) : { outputs: [], final: true })));
  await settle();
  assert.deepEqual(
    executions,
    [
      { rows: 1, requests: 1 },
      { rows: 2, requests: 2 },
    ],
    'the skipped request is no part of its execution',
  );
  assert.deepEqual(done.slice(1), [
    { id: 'x', success: true, failure: undefined },
    { id: 'y', success: false, failure: 'CANCELED' },
    { id: 'z', success: true, failure: undefined },
  ]);
  const last = request('last');
  s.enqueue(last, rec.respond('last'));
  inst.current().finish((rs) => rs.map((r) => skippedResponse(r)));
  await s.stop();
  assert.equal(executions.length, 2, 'a batch that skipped every request is no execution');
  assert.equal(rec.only('last').error?.code, 'CANCELLED');
});
