import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DynamicBatchScheduler } from '../../src/scheduler/dynamic-batch-scheduler';
import type { InferRequest, InferResponse } from '../../src/core/request';
import type { RequestDoneStats } from '../../src/scheduler/scheduler-hooks';
import { FakeInstance, Recorder, config, request, settle, until } from './scheduler-test-kit';

/** Long enough that no test ever reaches it: batches form by size, shape or stop(). */
const FOREVER_US = 60_000_000;

function ids(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}${i}`);
}

test('a preferred batch size runs at once; responses go back per request', async () => {
  const inst = new FakeInstance('m_0');
  const s = new DynamicBatchScheduler(config(8, { preferred_batch_size: [4], max_queue_delay_microseconds: FOREVER_US }), [inst]);
  const rec = new Recorder();
  for (const id of ids('r', 3)) s.enqueue(request(id), rec.respond(id));
  assert.equal(inst.executions.length, 0, 'three requests wait for a fourth');
  s.enqueue(request('r3'), rec.respond('r3'));
  assert.deepEqual(inst.batches(), [['r0', 'r1', 'r2', 'r3']]);
  assert.equal(s.inflightCount(), 4);
  inst.current().finish();
  await settle();
  for (const id of ids('r', 4)) assert.equal(rec.only(id).parameters?.['echo'], id);
  assert.equal(s.inflightCount(), 0);
  await s.stop();
});

test('under load the queue grows while the instance is busy and the next batch is bigger', async () => {
  const inst = new FakeInstance('m_0');
  const s = new DynamicBatchScheduler(config(8, { preferred_batch_size: [4, 8], max_queue_delay_microseconds: FOREVER_US }), [inst]);
  const rec = new Recorder();
  const all = ids('r', 14);
  for (const id of all) s.enqueue(request(id), rec.respond(id));
  assert.deepEqual(
    inst.batches().map((b) => b.length),
    [4],
    'first batch at the first preferred size',
  );
  inst.current().finish();
  await settle();
  assert.deepEqual(
    inst.batches().map((b) => b.length),
    [4, 8],
    'ten queued: the largest preferred size',
  );
  inst.current().finish();
  await settle();
  assert.deepEqual(
    inst.batches().map((b) => b.length),
    [4, 8],
    'two left wait for more',
  );
  const stopped = s.stop();
  assert.deepEqual(
    inst.batches().map((b) => b.length),
    [4, 8, 2],
    'stop() runs them without waiting',
  );
  inst.current().finish();
  await stopped;
  assert.deepEqual(inst.batches().flat(), all, 'FIFO order');
  for (const id of all) assert.equal(rec.only(id).parameters?.['echo'], id);
});

test('requests with larger batch sizes count by batch size', async () => {
  const inst = new FakeInstance('m_0');
  const s = new DynamicBatchScheduler(config(8, { preferred_batch_size: [8], max_queue_delay_microseconds: FOREVER_US }), [inst]);
  const rec = new Recorder();
  s.enqueue(request('a', 3), rec.respond('a'));
  s.enqueue(request('b', 4), rec.respond('b'));
  assert.equal(inst.executions.length, 0);
  s.enqueue(request('c', 2), rec.respond('c')); // 3+4+2 > 8: a and b go now
  assert.deepEqual(inst.batches(), [['a', 'b']]);
  inst.current().finish();
  await settle();
  const stopped = s.stop();
  assert.deepEqual(inst.batches(), [['a', 'b'], ['c']]);
  inst.current().finish();
  await stopped;
});

test('max_queue_delay: a lone request runs once the delay has passed (timer and sub-ms poll)', async () => {
  for (const delayUs of [2000, 200]) {
    const inst = new FakeInstance('m_0');
    const s = new DynamicBatchScheduler(config(8, { preferred_batch_size: [4], max_queue_delay_microseconds: delayUs }), [inst]);
    const rec = new Recorder();
    s.enqueue(request('r0'), rec.respond('r0'));
    s.enqueue(request('r1'), rec.respond('r1'));
    assert.equal(inst.executions.length, 0);
    await until(() => inst.executions.length === 1);
    assert.deepEqual(inst.batches(), [['r0', 'r1']]);
    inst.current().finish();
    await s.stop();
    assert.equal(rec.finalOrder.length, 2);
  }
});

test('max_queue_delay 0 runs what is there at once', async () => {
  const inst = new FakeInstance('m_0');
  const s = new DynamicBatchScheduler(config(8, { preferred_batch_size: [4], max_queue_delay_microseconds: 0 }), [inst]);
  const rec = new Recorder();
  s.enqueue(request('r0'), rec.respond('r0'));
  assert.deepEqual(inst.batches(), [['r0']]);
  s.enqueue(request('r1'), rec.respond('r1'));
  s.enqueue(request('r2'), rec.respond('r2'));
  inst.current().finish();
  await settle();
  assert.deepEqual(inst.batches(), [['r0'], ['r1', 'r2']]);
  inst.current().finish();
  await s.stop();
  assert.deepEqual(rec.finalOrder, ['r0', 'r1', 'r2']);
});

test('requests of different shapes never share a batch', async () => {
  const inst = new FakeInstance('m_0');
  const s = new DynamicBatchScheduler(config(8, { preferred_batch_size: [8], max_queue_delay_microseconds: FOREVER_US }, [-1]), [inst]);
  const rec = new Recorder();
  s.enqueue(request('a', 1, [3]), rec.respond('a'));
  s.enqueue(request('b', 1, [5]), rec.respond('b')); // different shape: a cannot grow, so it goes
  assert.deepEqual(inst.batches(), [['a']]);
  s.enqueue(request('c', 1, [5]), rec.respond('c'));
  s.enqueue(request('d', 1, [3]), rec.respond('d'));
  inst.current().finish();
  await settle();
  assert.deepEqual(inst.batches(), [['a'], ['b', 'c']]);
  inst.current().finish();
  await settle();
  const stopped = s.stop();
  assert.deepEqual(inst.batches(), [['a'], ['b', 'c'], ['d']]);
  inst.current().finish();
  await stopped;
});

test('several instances run batches in parallel', async () => {
  const insts = [new FakeInstance('m_0'), new FakeInstance('m_1'), new FakeInstance('m_2')];
  const s = new DynamicBatchScheduler(config(4, { preferred_batch_size: [2], max_queue_delay_microseconds: FOREVER_US }), insts);
  const rec = new Recorder();
  for (const id of ids('r', 6)) s.enqueue(request(id), rec.respond(id));
  assert.deepEqual(
    insts.map((i) => i.running),
    [1, 1, 1],
    'all three busy at once',
  );
  assert.deepEqual(
    insts.map((i) => i.batches()),
    [[['r0', 'r1']], [['r2', 'r3']], [['r4', 'r5']]],
  );
  s.enqueue(request('r6'), rec.respond('r6'));
  s.enqueue(request('r7'), rec.respond('r7'));
  insts[1]!.current().finish();
  await settle();
  assert.deepEqual(
    insts[1]!.batches(),
    [
      ['r2', 'r3'],
      ['r6', 'r7'],
    ],
    'the freed instance takes the next batch',
  );
  insts[0]!.current().finish();
  insts[1]!.current().finish();
  insts[2]!.current().finish();
  await s.stop();
  for (const id of ids('r', 8)) assert.equal(rec.only(id).error, undefined);
});

test('an instance whose execute() rejects: every request of that batch gets INTERNAL naming model and instance', async () => {
  const inst = new FakeInstance('m_0');
  const s = new DynamicBatchScheduler(config(8, { preferred_batch_size: [2], max_queue_delay_microseconds: FOREVER_US }), [inst]);
  const rec = new Recorder();
  s.enqueue(request('r0'), rec.respond('r0'));
  s.enqueue(request('r1'), rec.respond('r1'));
  inst.current().fail(new Error('worker died'));
  await settle();
  for (const id of ['r0', 'r1']) {
    const err = rec.only(id).error;
    assert.equal(err?.code, 'INTERNAL');
    assert.match(err?.message ?? '', new RegExp(`^\\[request id: ${id}\\] .*'m_0'.*model 'm' version 3.*worker died`));
  }
  assert.equal(s.inflightCount(), 0);
  // The instance is used again afterwards.
  s.enqueue(request('r2'), rec.respond('r2'));
  s.enqueue(request('r3'), rec.respond('r3'));
  inst.current().finish();
  await s.stop();
  assert.equal(rec.only('r3').error, undefined);
});

test('an instance that returns too few responses: the missing ones get INTERNAL, never silence', async () => {
  const inst = new FakeInstance('m_0');
  const s = new DynamicBatchScheduler(config(8, { preferred_batch_size: [2], max_queue_delay_microseconds: FOREVER_US }), [inst]);
  const rec = new Recorder();
  s.enqueue(request('r0'), rec.respond('r0'));
  s.enqueue(request('r1'), rec.respond('r1'));
  inst.current().finish((reqs) => [{ outputs: [], parameters: { echo: reqs[0]!.id }, final: true }]);
  await s.stop();
  assert.equal(rec.only('r0').error, undefined);
  assert.equal(rec.only('r1').error?.code, 'INTERNAL');
});

test('stop() drains the queue, refuses new requests, and is idempotent', async () => {
  const inst = new FakeInstance('m_0');
  const s = new DynamicBatchScheduler(config(8, { preferred_batch_size: [4], max_queue_delay_microseconds: FOREVER_US }), [inst]);
  const rec = new Recorder();
  for (const id of ids('r', 3)) s.enqueue(request(id), rec.respond(id));
  let resolved = false;
  const stopped = s.stop().then(() => {
    resolved = true;
  });
  assert.deepEqual(inst.batches(), [['r0', 'r1', 'r2']]);
  s.enqueue(request('late'), rec.respond('late'));
  const late = rec.only('late').error;
  assert.equal(late?.code, 'UNAVAILABLE');
  assert.match(late?.message ?? '', /^\[request id: late\] .*model 'm' version 3/);
  assert.equal(s.inflightCount(), 3, 'a refused request is never in flight');
  await settle();
  assert.equal(resolved, false, 'still running');
  inst.current().finish();
  await stopped;
  assert.equal(s.inflightCount(), 0);
  assert.deepEqual(rec.finalOrder, ['late', 'r0', 'r1', 'r2']);
  await s.stop();
  assert.equal(inst.executions.length, 1);
});

test('max_queue_size: a request beyond it gets RESOURCE_EXHAUSTED "Exceeds maximum queue size" and which bound it is', async () => {
  const inst = new FakeInstance('m_0');
  const dyn = {
    max_queue_delay_microseconds: 0,
    default_queue_policy: { timeout_action: 'REJECT' as const, default_timeout_microseconds: 0, allow_timeout_override: false, max_queue_size: 2 },
  };
  const s = new DynamicBatchScheduler(config(1, dyn), [inst]);
  const rec = new Recorder();
  for (const id of ids('r', 4)) s.enqueue(request(id), rec.respond(id));
  // r0 runs, r1 and r2 fill the queue, r3 is refused.
  assert.equal(rec.only('r3').error?.code, 'RESOURCE_EXHAUSTED');
  assert.match(rec.only('r3').error?.message ?? '', /^\[request id: r3\] Exceeds maximum queue size: model '\w+' queues at most \d+ request\(s\)/);
  assert.equal(s.inflightCount(), 3);
  inst.current().finish();
  await settle();
  s.enqueue(request('r4'), rec.respond('r4')); // room again
  for (let i = 0; i < 3; i++) {
    inst.current().finish();
    await settle();
  }
  await s.stop();
  assert.deepEqual(inst.batches(), [['r0'], ['r1'], ['r2'], ['r4']]);
  for (const id of ['r0', 'r1', 'r2', 'r4']) assert.equal(rec.only(id).error, undefined);
});

test('preserve_ordering holds a later batch until the earlier one is answered', async () => {
  for (const preserve of [true, false]) {
    const a = new FakeInstance('m_0');
    const b = new FakeInstance('m_1');
    const s = new DynamicBatchScheduler(config(1, { max_queue_delay_microseconds: 0, preserve_ordering: preserve }), [a, b]);
    const rec = new Recorder();
    s.enqueue(request('r0'), rec.respond('r0'));
    s.enqueue(request('r1'), rec.respond('r1'));
    b.current().finish();
    await settle();
    assert.deepEqual(rec.finalOrder, preserve ? [] : ['r1']);
    a.current().finish();
    await s.stop();
    assert.deepEqual(rec.finalOrder, preserve ? ['r0', 'r1'] : ['r1', 'r0']);
  }
});

test('non-final (decoupled) responses pass through; only the final one ends the request', async () => {
  for (const preserve of [true, false]) {
    const inst = new FakeInstance('m_0');
    const s = new DynamicBatchScheduler(config(4, { max_queue_delay_microseconds: 0, preserve_ordering: preserve }), [inst]);
    const rec = new Recorder();
    s.enqueue(request('r0'), rec.respond('r0'));
    inst.current().finish(() => [{ outputs: [], parameters: { part: 1 }, final: false }]);
    await s.stop();
    const got = rec.responses.get('r0') ?? [];
    assert.deepEqual(
      got.map((r) => r.final),
      [false, true],
    );
    assert.equal(got[0]!.parameters?.['part'], 1);
    assert.equal(s.inflightCount(), 0);
  }
});

test('hooks: requestDone once per request (also refused ones), executionDone once per batch', async () => {
  const inst = new FakeInstance('m_0');
  const done: [string, RequestDoneStats][] = [];
  const execs: [number, number][] = [];
  const hooks = {
    requestDone: (r: InferRequest, st: RequestDoneStats) => {
      done.push([r.id, { ...st }]);
    },
    executionDone: (batchSize: number, requestCount: number) => {
      execs.push([batchSize, requestCount]);
    },
  };
  const s = new DynamicBatchScheduler(config(8, { preferred_batch_size: [5], max_queue_delay_microseconds: FOREVER_US }), [inst], hooks);
  const rec = new Recorder();
  s.enqueue(request('a', 2), rec.respond('a'));
  s.enqueue(request('b', 3), rec.respond('b'));
  inst.current().finish((): InferResponse[] => [
    { outputs: [], final: true },
    { outputs: [], error: { code: 'INTERNAL', message: 'x' }, final: true },
  ]);
  await s.stop();
  s.enqueue(request('late'), rec.respond('late'));
  assert.deepEqual(execs, [[5, 2]]);
  assert.deepEqual(
    done.map(([id, st]) => [id, st.success]),
    [
      ['a', true],
      ['b', false],
      ['late', false],
    ],
  );
  const a = done[0]![1];
  assert.equal(a.computeStartNs, 1);
  assert.equal(a.computeEndNs, 4);
  assert.ok(a.queueStartNs > 0 && a.endNs >= a.queueStartNs);
  assert.equal(done[2]![1].computeStartNs, 0, 'never ran');
});

test('a throwing respond callback does not cost other requests their responses', async () => {
  const inst = new FakeInstance('m_0');
  const s = new DynamicBatchScheduler(config(8, { preferred_batch_size: [2], max_queue_delay_microseconds: FOREVER_US }), [inst]);
  const rec = new Recorder();
  const warnings: string[] = [];
  const onWarning = (w: Error): void => {
    warnings.push(w.message);
  };
  process.on('warning', onWarning);
  try {
    s.enqueue(request('bad'), () => {
      throw new Error('frontend bug');
    });
    s.enqueue(request('good'), rec.respond('good'));
    inst.current().finish();
    await s.stop();
    await settle();
    assert.equal(rec.only('good').error, undefined);
    assert.equal(s.inflightCount(), 0);
    assert.ok(warnings.some((w) => w.includes('frontend bug')));
  } finally {
    process.off('warning', onWarning);
  }
});

test('priority levels: a high-priority request overtakes queued low-priority ones', async () => {
  const inst = new FakeInstance('m_0');
  const s = new DynamicBatchScheduler(config(1, { priority_levels: 2, default_priority_level: 2 }), [inst]);
  const rec = new Recorder();
  const send = (id: string, priority?: number): void => {
    const r = request(id);
    if (priority !== undefined) r.parameters = { priority };
    s.enqueue(r, rec.respond(id));
  };
  send('busy');
  send('low1');
  send('low2', 0);
  send('low3', 7); // above the levels: the default level
  send('high', 1);
  for (let i = 0; i < 5; i++) {
    inst.current().finish();
    await settle();
  }
  assert.deepEqual(inst.batches().flat(), ['busy', 'high', 'low1', 'low2', 'low3']);
  await s.stop();
});

test('queue policy: max_queue_size rejects with Triton text; a queue timeout answers "Request timeout expired"', async () => {
  const inst = new FakeInstance('m_0');
  const s = new DynamicBatchScheduler(
    config(1, {
      default_queue_policy: { timeout_action: 'REJECT', default_timeout_microseconds: 0, allow_timeout_override: true, max_queue_size: 2 },
    }),
    [inst],
  );
  const rec = new Recorder();
  s.enqueue(request('busy'), rec.respond('busy'));
  s.enqueue(request('q1'), rec.respond('q1'));
  const timed = request('timed');
  timed.parameters = { timeout: 1000 };
  s.enqueue(timed, rec.respond('timed'));
  s.enqueue(request('full'), rec.respond('full'));
  assert.equal(rec.only('full').error?.code, 'RESOURCE_EXHAUSTED');
  assert.match(rec.only('full').error?.message ?? '', /^\[request id: full\] Exceeds maximum queue size: model '\w+' queues at most \d+ request\(s\)/);
  await until(() => rec.finalOrder.includes('timed'));
  assert.deepEqual(rec.only('timed').error, { code: 'UNAVAILABLE', message: 'Request timeout expired' });
  assert.equal(s.inflightCount(), 2);
  inst.current().finish();
  await settle();
  inst.current().finish();
  await settle();
  assert.deepEqual(inst.batches().flat(), ['busy', 'q1']);
  assert.equal(s.inflightCount(), 0);
  await s.stop();
});
