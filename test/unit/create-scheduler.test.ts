import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ServerError } from '../../src/core/errors';
import { createScheduler } from '../../src/scheduler/create-scheduler';
import { DefaultScheduler } from '../../src/scheduler/default-scheduler';
import { DynamicBatchScheduler } from '../../src/scheduler/dynamic-batch-scheduler';
import { Arena } from '../../src/dataplane/arena';
import { CachingScheduler, ResponseCache } from '../../src/scheduler/response-cache';
import { SequenceBatchScheduler } from '../../src/scheduler/sequence-batch-scheduler';
import { FakeInstance, config } from './scheduler-test-kit';

test('no scheduling block: DefaultScheduler', () => {
  assert.ok(createScheduler(config(0), [new FakeInstance('m_0')]) instanceof DefaultScheduler);
});

test('dynamic_batching: DynamicBatchScheduler', () => {
  assert.ok(createScheduler(config(8, {}), [new FakeInstance('m_0')]) instanceof DynamicBatchScheduler);
});

const unsupported: { block: 'sequence_batching' | 'ensemble_scheduling'; value: object }[] = [{ block: 'ensemble_scheduling', value: { step: [] } }];

test('sequence_batching: SequenceBatchScheduler (needs the arena)', () => {
  const c = config(4);
  c.sequence_batching = { max_sequence_idle_microseconds: 1000000 };
  assert.ok(createScheduler(c, [new FakeInstance('m_0')], undefined, { arena: Arena.create() }) instanceof SequenceBatchScheduler);
});

test('response_cache with a server cache: CachingScheduler around the version scheduler', () => {
  const c = config(0);
  c.response_cache = { enable: true };
  assert.ok(
    createScheduler(c, [new FakeInstance('m_0')], undefined, { arena: Arena.create(), responseCache: new ResponseCache(1024) }) instanceof CachingScheduler,
  );
  // Without a server cache the model's setting is ignored, as in Triton.
  assert.ok(createScheduler(c, [new FakeInstance('m_0')], undefined, { arena: Arena.create() }) instanceof DefaultScheduler);
});

for (const { block, value } of unsupported) {
  test(`${block}: UNSUPPORTED for now`, () => {
    const c = config(8);
    (c as Record<string, unknown>)[block] = value;
    assert.throws(
      () => createScheduler(c, [new FakeInstance('m_0')]),
      (err: unknown) => {
        assert.ok(err instanceof ServerError);
        assert.equal(err.code, 'UNSUPPORTED');
        assert.equal(err.message, `${block} is not supported yet for model 'm'`);
        return true;
      },
    );
  });
}
