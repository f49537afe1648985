import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Arena } from '../../src/dataplane/arena';
import { DefaultScheduler } from '../../src/scheduler/default-scheduler';
import type { InferRequest, InferResponse } from '../../src/core/request';
import { CachingScheduler, ResponseCache, responseCacheFromOptions } from '../../src/scheduler/response-cache';
import type { SchedulerHooks } from '../../src/scheduler/scheduler-hooks';
import { FakeInstance, Recorder, settle } from './scheduler-test-kit';

function tensorRequest(arena: Arena, id: string, values: number[], params: Record<string, string | number> = {}): InferRequest {
  const data = Buffer.from(new Float32Array(values).buffer);
  const { offset, gen } = arena.alloc(data.byteLength);
  arena.bytes(offset, data.byteLength).set(data);
  return {
    id,
    model: 'm',
    version: 1,
    latest: false,
    batchSize: 1,
    requestedOutputs: null,
    parameters: params,
    arrivalNs: 0,
    inputs: [{ name: 'x', datatype: 'FP32', shape: [values.length], offset, gen, byteSize: data.byteLength }],
  };
}

/** The instance answers with 2 * x as output 'y' in a new arena block. */
function doubler(arena: Arena) {
  return (requests: InferRequest[]): InferResponse[] =>
    requests.map((r) => {
      const x = new Float32Array(arena.bytes(r.inputs[0]!.offset, r.inputs[0]!.byteSize).slice().buffer);
      const y = Buffer.from(x.map((v) => v * 2).buffer);
      const { offset, gen } = arena.alloc(y.byteLength);
      arena.bytes(offset, y.byteLength).set(y);
      return { outputs: [{ name: 'y', datatype: 'FP32', shape: [x.length], offset, gen, byteSize: y.byteLength }], final: true };
    });
}

function yOf(arena: Arena, r: InferResponse): number[] {
  const o = r.outputs[0]!;
  return [...new Float32Array(arena.bytes(o.offset, o.byteSize).slice().buffer)];
}

test('a repeated request is answered from the cache without executing; other inputs or parameters miss', async () => {
  const arena = Arena.create();
  const inst = new FakeInstance('m_0');
  const events: string[] = [];
  const hooks: SchedulerHooks = {
    cacheDone: (_r, hit) => events.push(hit ? 'hit' : 'miss'),
    requestDone: (r, s) => events.push(`done ${r.id}${s.cacheHit === true ? ' (cached)' : ''}`),
  };
  const s = new CachingScheduler(new DefaultScheduler('m', [inst], hooks), new ResponseCache(1 << 20), arena, hooks);
  const rec = new Recorder();
  s.enqueue(tensorRequest(arena, 'first', [1, 2]), rec.respond('first'));
  inst.current().finish(doubler(arena));
  await settle();
  s.enqueue(tensorRequest(arena, 'again', [1, 2], { priority: 1 }), rec.respond('again'));
  assert.equal(inst.executions.length, 1, 'the hit did not execute');
  assert.deepEqual(yOf(arena, rec.only('again')), [2, 4]);
  assert.notEqual(rec.only('again').outputs[0]!.offset, rec.only('first').outputs[0]!.offset, 'a hit gets its own arena block');
  s.enqueue(tensorRequest(arena, 'other', [1, 3]), rec.respond('other'));
  s.enqueue(tensorRequest(arena, 'param', [1, 2], { scale: 3 }), rec.respond('param'));
  assert.equal(inst.executions.length, 2);
  inst.current().finish(doubler(arena));
  await settle();
  inst.current().finish(doubler(arena));
  await s.stop();
  assert.equal(inst.executions.length, 3);
  assert.deepEqual(
    events.filter((e) => e === 'hit' || e === 'miss'),
    ['miss', 'hit', 'miss', 'miss'],
  );
  assert.ok(events.includes('done again (cached)'));
});

test('errors are not cached', async () => {
  const arena = Arena.create();
  const inst = new FakeInstance('m_0');
  const s = new CachingScheduler(new DefaultScheduler('m', [inst]), new ResponseCache(1 << 20), arena);
  const rec = new Recorder();
  s.enqueue(tensorRequest(arena, 'a', [5]), rec.respond('a'));
  inst.current().finish((rs) => rs.map(() => ({ outputs: [], error: { code: 'INTERNAL', message: 'boom' }, final: true })));
  await settle();
  s.enqueue(tensorRequest(arena, 'b', [5]), rec.respond('b'));
  assert.equal(inst.executions.length, 2);
  inst.current().finish(doubler(arena));
  await s.stop();
});

test('--cache-config: local,size makes the cache; none makes none; a bad size is refused', () => {
  assert.equal(responseCacheFromOptions({}), undefined);
  assert.equal(responseCacheFromOptions({ local: { size: '1048576' } })?.stats().capacity, 1048576);
  assert.throws(() => responseCacheFromOptions({ local: { size: 'lots' } }), /local,size must be a byte count >= 0, got 'lots'/);
});
