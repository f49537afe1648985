/** `nodetron tune`'s configs: the models it refuses and why, the shipped config as a candidate, a candidate written into a config, and its options. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseModelConfigText } from '../../src/repository/config/pbtxt';
import { applyCandidate, describeModel, refusal } from '../../src/tune/tune-config';
import { parseTuneOptions, TuneUsageError } from '../../src/tune/tune-options';
import type { Candidate } from '../../src/tune/tune-space';

const cfg = (text: string): ReturnType<typeof parseModelConfigText> => parseModelConfigText(text, 'm/config.pbtxt');

const refusals: { name: string; text: string; want: RegExp | undefined }[] = [
  { name: 'a plain ONNX model is tuned', text: 'name: "m" platform: "onnxruntime_onnx" max_batch_size: 8', want: undefined },
  {
    name: 'an ensemble names its steps',
    text: 'name: "e" platform: "ensemble" ensemble_scheduling { step [{ model_name: "a" model_version: -1 }, { model_name: "b" model_version: -1 }] }',
    want: /^model 'e' is an ensemble: .*nodetron tune -m a, nodetron tune -m b/,
  },
  { name: 'sequence batching', text: 'name: "s" backend: "python" sequence_batching {}', want: /^model 's' uses sequence batching: .*correlation id/ },
  {
    name: 'decoupled',
    text: 'name: "d" backend: "python" model_transaction_policy { decoupled: true }',
    want: /^model 'd' is decoupled: .*time to first response/,
  },
];

for (const c of refusals) {
  test(`refusal: ${c.name}`, () => {
    const why = refusal(cfg(c.text));
    if (c.want === undefined) assert.equal(why, undefined);
    else assert.match(why ?? '', c.want);
  });
}

test('the shipped config as a candidate reads every number the search changes', () => {
  const m = describeModel(
    cfg(`name: "m" backend: "onnxruntime" max_batch_size: 32
      instance_group [{ kind: KIND_CPU count: 2 }, { kind: KIND_CPU count: 1 }]
      dynamic_batching { preferred_batch_size: [8, 16] max_queue_delay_microseconds: 500 }
      parameters { key: "intra_op_thread_count" value { string_value: "1" } }`),
    4,
  );
  assert.equal(m.kind, 'onnx');
  assert.deepEqual(m.shipped, { instances: 3, maxBatch: 32, batching: { delayUs: 500, preferred: [8, 16] }, intraOp: 1, interOp: undefined });
  assert.equal(m.maxBatchLimit, 32);
  assert.equal(m.requestBatch, 4);
  assert.equal(describeModel(cfg('name: "p" backend: "python"'), 1).kind, 'python');
  assert.equal(describeModel(cfg('name: "f" backend: "fil"'), 1).kind, 'fil');
  assert.equal(describeModel(cfg('name: "o" platform: "onnxruntime_onnx"'), 1).kind, 'onnx');
});

const applyCases: { name: string; base: string; kind: 'onnx' | 'python'; c: Candidate; check: (c: ReturnType<typeof cfg>) => void }[] = [
  {
    name: 'no instance group: one is added; batching turned on',
    base: 'name: "m" platform: "onnxruntime_onnx" max_batch_size: 8',
    kind: 'onnx',
    c: { instances: 4, maxBatch: 8, batching: { delayUs: 100, preferred: [8] }, intraOp: 1, interOp: undefined },
    check: (c) => {
      assert.deepEqual(
        c.instance_group.map((g) => [g.kind, g.count]),
        [['KIND_CPU', 4]],
      );
      assert.equal(c.dynamic_batching?.max_queue_delay_microseconds, 100);
      assert.deepEqual(c.dynamic_batching?.preferred_batch_size, [8]);
      assert.equal(c.parameters.intra_op_thread_count?.string_value, '1');
      assert.equal(c.parameters.execution_mode, undefined);
    },
  },
  {
    name: 'two groups become one; batching off keeps the other settings; inter-op turns parallel mode on',
    base: `name: "m" platform: "onnxruntime_onnx" max_batch_size: 8 instance_group [{ count: 1 kind: KIND_CPU }, { count: 2 kind: KIND_CPU }]
      dynamic_batching { max_queue_delay_microseconds: 500 } parameters { key: "intra_op_thread_count" value { string_value: "2" } }
      parameters { key: "enable_mem_arena" value { string_value: "1" } }`,
    kind: 'onnx',
    c: { instances: 2, maxBatch: 4, batching: undefined, intraOp: undefined, interOp: 2 },
    check: (c) => {
      assert.deepEqual(
        c.instance_group.map((g) => [g.kind, g.count]),
        [['KIND_CPU', 2]],
      );
      assert.equal(c.max_batch_size, 4);
      assert.equal(c.dynamic_batching, undefined);
      assert.equal(c.parameters.intra_op_thread_count, undefined);
      assert.equal(c.parameters.inter_op_thread_count?.string_value, '2');
      assert.equal(c.parameters.execution_mode?.string_value, '1');
      assert.equal(c.parameters.enable_mem_arena?.string_value, '1');
    },
  },
  {
    name: 'Python: only the instance count; its parameters untouched',
    base: 'name: "p" backend: "python" instance_group [{ kind: KIND_CPU count: 1 }] parameters { key: "intra_op_thread_count" value { string_value: "3" } }',
    kind: 'python',
    c: { instances: 3, maxBatch: 0, batching: undefined, intraOp: undefined, interOp: undefined },
    check: (c) => {
      assert.equal(c.instance_group[0]!.count, 3);
      assert.equal(c.parameters.intra_op_thread_count?.string_value, '3');
    },
  },
];

for (const c of applyCases) {
  test(`apply a candidate: ${c.name}`, () => {
    const base = cfg(c.base);
    const before = JSON.stringify(base);
    const out = applyCandidate(base, c.c, c.kind);
    c.check(out);
    assert.equal(JSON.stringify(base), before, 'the base config is not changed');
    // What the load API gets must read back as a config.
    assert.doesNotThrow(() => JSON.parse(JSON.stringify(out)) as unknown);
  });
}

const optionErrors: { argv: string[]; want: RegExp }[] = [
  { argv: [], want: /^-m: a model name is required$/ },
  { argv: ['-m', 'simple'], want: /give --model-repository DIR .* or -u HOST:PORT/ },
  { argv: ['-m', 'simple', '-u', 'x:1', '--server-arg=--foo'], want: /--server-arg: only for the server tune starts/ },
  { argv: ['-m', 'simple', '-u', 'x:1', '--budget-minutes', '0'], want: /--budget-minutes: must be positive, got 0/ },
  { argv: ['-m', 'simple', '-u', 'x:1', '--format', 'xml'], want: /--format: expected one of table, csv, json, got 'xml'/ },
  { argv: ['-m', 'simple', '-u', 'x:1', '--shape', 'x'], want: /--shape: expected NAME:d1,d2/ },
  { argv: ['-m', 'simple', '-u', 'x:1', '--max-concurrency', 'many'], want: /--max-concurrency: expected an integer, got 'many'/ },
  { argv: ['-m', 'simple', '--bogus'], want: /^unknown option '--bogus'$/ },
];

for (const c of optionErrors) {
  test(`tune options: ${c.argv.join(' ') || '(none)'}`, () => {
    assert.throws(
      () => parseTuneOptions(c.argv),
      (err: unknown) => err instanceof TuneUsageError && c.want.test(err.message),
    );
  });
}

test('tune options: defaults and spellings', () => {
  const o = parseTuneOptions([
    '-m',
    'simple',
    '--model-repository',
    '/r',
    '--latency-budget-ms=5',
    '--shape',
    'IN:4,2',
    '--server-arg=--http-thread-count=2',
    '--write',
  ]);
  assert.equal(o.budgetMinutes, 10);
  assert.equal(o.latencyBudgetMs, 5);
  assert.equal(o.format, 'table');
  assert.equal(o.measurementIntervalMs, 500);
  assert.equal(o.maxConcurrency, 64);
  assert.deepEqual([...o.shapes], [['IN', [4, 2]]]);
  assert.deepEqual(o.serverArgs, ['--http-thread-count=2']);
  assert.equal(o.write, true);
});
