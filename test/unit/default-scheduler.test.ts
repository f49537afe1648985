import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DefaultScheduler } from '../../src/scheduler/default-scheduler';
import type { InferRequest } from '../../src/core/request';
import { FakeInstance, Recorder, request, settle } from './scheduler-test-kit';

test('one request per execution, FIFO, each answered exactly once', async () => {
  const inst = new FakeInstance('m_0');
  const s = new DefaultScheduler('m', [inst]);
  const rec = new Recorder();
  for (const id of ['r0', 'r1', 'r2']) s.enqueue(request(id, 2), rec.respond(id));
  assert.deepEqual(inst.batches(), [['r0']], 'never batched, even for a batching model');
  assert.equal(s.inflightCount(), 3);
  for (let i = 0; i < 3; i++) {
    inst.current().finish();
    await settle();
  }
  assert.deepEqual(inst.batches(), [['r0'], ['r1'], ['r2']]);
  assert.deepEqual(rec.finalOrder, ['r0', 'r1', 'r2']);
  for (const id of ['r0', 'r1', 'r2']) assert.equal(rec.only(id).parameters?.['echo'], id);
  assert.equal(s.inflightCount(), 0);
  await s.stop();
});

test('several instances run in parallel; a freed instance takes the next request', async () => {
  const a = new FakeInstance('m_0');
  const b = new FakeInstance('m_1');
  const s = new DefaultScheduler('m', [a, b]);
  const rec = new Recorder();
  for (const id of ['r0', 'r1', 'r2']) s.enqueue(request(id), rec.respond(id));
  assert.deepEqual([a.running, b.running], [1, 1]);
  b.current().finish();
  await settle();
  assert.deepEqual(b.batches(), [['r1'], ['r2']]);
  assert.deepEqual(rec.finalOrder, ['r1'], 'no ordering guarantee: first done, first answered');
  a.current().finish();
  b.current().finish();
  await s.stop();
  assert.deepEqual(rec.finalOrder, ['r1', 'r0', 'r2']);
});

test('execute() rejecting or throwing gives INTERNAL naming model and instance', async () => {
  const inst = new FakeInstance('m_0');
  const s = new DefaultScheduler('m', [inst]);
  const rec = new Recorder();
  s.enqueue(request('r0'), rec.respond('r0'));
  inst.current().fail(new Error('segfault'));
  await settle();
  const err = rec.only('r0').error;
  assert.equal(err?.code, 'INTERNAL');
  assert.match(err?.message ?? '', /^\[request id: r0\] instance 'm_0' of model 'm' version 3 .*segfault/);

  const throwing = {
    name: 'm_9',
    execute(): never {
      throw new Error('sync throw');
    },
    stop: () => Promise.resolve(),
    kill: () => Promise.resolve(),
  };
  const s2 = new DefaultScheduler('m', [throwing]);
  s2.enqueue(request('r1'), rec.respond('r1'));
  await s2.stop();
  assert.match(rec.only('r1').error?.message ?? '', /'m_9'.*sync throw/);
  await s.stop();
});

test('stop() drains queued requests, refuses new ones, resolves at zero in flight, idempotent', async () => {
  const inst = new FakeInstance('m_0');
  const s = new DefaultScheduler('m', [inst]);
  const rec = new Recorder();
  for (const id of ['r0', 'r1']) s.enqueue(request(id), rec.respond(id));
  let resolved = false;
  const stopped = s.stop().then(() => {
    resolved = true;
  });
  s.enqueue(request('late'), rec.respond('late'));
  assert.equal(rec.only('late').error?.code, 'UNAVAILABLE');
  assert.match(rec.only('late').error?.message ?? '', /model 'm' version 3/);
  inst.current().finish();
  await settle();
  assert.equal(resolved, false);
  assert.deepEqual(inst.batches(), [['r0'], ['r1']], 'queued work still runs');
  inst.current().finish();
  await stopped;
  assert.equal(s.inflightCount(), 0);
  await s.stop();
  assert.equal(rec.only('r1').error, undefined);
});

test('stop() with nothing in flight resolves at once', async () => {
  const s = new DefaultScheduler('m', [new FakeInstance('m_0')]);
  await s.stop();
  await s.stop();
});

test('hooks see every request and execution', async () => {
  const inst = new FakeInstance('m_0');
  const seen: string[] = [];
  const execs: number[] = [];
  const s = new DefaultScheduler('m', [inst], {
    requestDone: (r: InferRequest, st) => seen.push(`${r.id}:${st.success}`),
    executionDone: (batchSize) => execs.push(batchSize),
  });
  s.enqueue(request('r0', 3), () => undefined);
  inst.current().finish();
  await s.stop();
  s.enqueue(request('late'), () => undefined);
  assert.deepEqual(seen, ['r0:true', 'late:false']);
  assert.deepEqual(execs, [3]);
});

test('a scheduler needs at least one instance', () => {
  assert.throws(() => new DefaultScheduler('m', []), /model 'm' has no instances/);
});

/** An instance that, like a worker thread, queues a second batch behind the running one. */
class PipelinedInstance extends FakeInstance {
  readonly pipelineDepth = 2;
  /** Handed over, not started yet: FIFO, like a worker thread draining its ring. */
  private readonly waiting: (() => void)[] = [];
  private starting = 0;
  override execute(requests: InferRequest[]): ReturnType<FakeInstance['execute']> {
    if (this.running === 0 && this.waiting.length === 0 && this.starting === 0) return super.execute(requests);
    this.starting++;
    return new Promise<void>((resolve) => this.waiting.push(resolve)).then(() => {
      this.starting--;
      return super.execute(requests);
    });
  }
  finishCurrent(): void {
    this.current().finish();
    this.waiting.shift()?.();
  }
}

test('instances with pipelineDepth 2 get the next request before the running one ends; order and exactly-once hold', async () => {
  const inst = new PipelinedInstance('m_0');
  const s = new DefaultScheduler('m', [inst]);
  const rec = new Recorder();
  let handedOver = 0;
  const execute = inst.execute.bind(inst);
  inst.execute = (requests) => {
    handedOver++;
    return execute(requests);
  };
  for (const id of ['r0', 'r1', 'r2']) s.enqueue(request(id, 1), rec.respond(id));
  assert.equal(handedOver, 2, 'one running, one queued in the instance, one in the scheduler');
  for (let i = 0; i < 3; i++) {
    inst.finishCurrent();
    await settle();
  }
  assert.equal(handedOver, 3);
  assert.deepEqual(rec.finalOrder, ['r0', 'r1', 'r2']);
  assert.equal(s.inflightCount(), 0);
  await s.stop();
});

test('instance choice: one request at a time stays on the instance freed last; concurrent ones spread before any instance gets a second', async () => {
  const a = new PipelinedInstance('m_0');
  const b = new PipelinedInstance('m_1');
  const s = new DefaultScheduler('m', [a, b]);
  const rec = new Recorder();
  for (const id of ['r0', 'r1', 'r2']) {
    s.enqueue(request(id, 1), rec.respond(id));
    (a.running > 0 ? a : b).finishCurrent();
    await settle();
  }
  assert.deepEqual(a.batches(), [['r0'], ['r1'], ['r2']], 'the warm instance takes every sequential request');
  assert.deepEqual(b.batches(), []);
  for (const id of ['c0', 'c1', 'c2']) s.enqueue(request(id, 1), rec.respond(id));
  assert.deepEqual([a.batches().length, b.batches().length], [4, 1], 'c0 on m_0 (freed last), c1 on idle m_1');
  a.finishCurrent(); // c2 was handed to m_0 behind c0 and starts now
  await settle();
  assert.deepEqual(a.batches().at(-1), ['c2']);
  b.finishCurrent();
  a.finishCurrent();
  await s.stop();
  assert.deepEqual(rec.finalOrder.slice(0, 3), ['r0', 'r1', 'r2']);
  assert.equal(rec.finalOrder.length, 6);
});
