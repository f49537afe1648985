import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sessionOptionsFor } from '../../src/backends/onnxruntime/session-options';
import { ServerError } from '../../src/core/errors';
import type { ModelConfig } from '../../src/core/model-config';

function config(parameters: Record<string, string> = {}, optimization?: Record<string, unknown>): ModelConfig {
  return {
    name: 'm',
    platform: 'onnxruntime_onnx',
    backend: 'onnxruntime',
    runtime: '',
    version_policy: {},
    max_batch_size: 0,
    input: [],
    output: [],
    batch_input: [],
    batch_output: [],
    instance_group: [],
    default_model_filename: '',
    cc_model_filenames: {},
    metric_tags: {},
    model_warmup: [],
    optimization,
    parameters: Object.fromEntries(Object.entries(parameters).map(([k, v]) => [k, { string_value: v }])),
  };
}

test('session options: threads, mode, graph level, extra entries', () => {
  const cases: { label: string; cfg: ModelConfig; cores: number; instances: number; expect: Record<string, unknown> }[] = [
    {
      label: 'defaults: cores shared by instances, sequential, all, no spinning',
      cfg: config(),
      cores: 8,
      instances: 2,
      expect: { intraOpNumThreads: 4, executionMode: 'sequential', graphOptimizationLevel: 'all', extra: { 'session.intra_op.allow_spinning': '0' } },
    },
    { label: 'never below one thread', cfg: config(), cores: 2, instances: 3, expect: { intraOpNumThreads: 1 } },
    { label: 'a zero hint counts as one instance', cfg: config(), cores: 2, instances: 0, expect: { intraOpNumThreads: 2 } },
    {
      label: 'Triton parameter names',
      cores: 8,
      instances: 1,
      cfg: config({ intra_op_thread_count: '3', inter_op_thread_count: '2', execution_mode: '1', enable_mem_arena: '0', enable_mem_pattern: 'true' }),
      expect: { intraOpNumThreads: 3, interOpNumThreads: 2, executionMode: 'parallel', enableCpuMemArena: false, enableMemPattern: true },
    },
    {
      label: 'session.* parameters pass through and may turn spinning back on',
      cores: 2,
      instances: 1,
      cfg: config({ 'session.intra_op.allow_spinning': '1', 'session.disable_prepacking': '1', other: 'x' }),
      expect: { extra: { 'session.intra_op.allow_spinning': '1', 'session.disable_prepacking': '1' } },
    },
    { label: 'graph level -1 is basic', cfg: config({}, { graph: { level: -1 } }), cores: 2, instances: 1, expect: { graphOptimizationLevel: 'basic' } },
    { label: 'graph level 1 is extended', cfg: config({}, { graph: { level: 1 } }), cores: 2, instances: 1, expect: { graphOptimizationLevel: 'extended' } },
    { label: 'graph level 2 is all', cfg: config({}, { graph: { level: 2 } }), cores: 2, instances: 1, expect: { graphOptimizationLevel: 'all' } },
  ];
  for (const c of cases) {
    const options = sessionOptionsFor({ config: c.cfg, instanceCountHint: c.instances }, c.cores) as Record<string, unknown>;
    for (const [key, value] of Object.entries(c.expect)) assert.deepEqual(options[key], value, `${c.label}: ${key}`);
  }
});

test('session options: bad parameter values name the model and the parameter', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ intra_op_thread_count: 'four' }, /^unable to load model 'm': parameter 'intra_op_thread_count' must be a non-negative integer, got 'four'$/],
    [{ inter_op_thread_count: '-1' }, /parameter 'inter_op_thread_count' must be a non-negative integer, got '-1'/],
    [{ execution_mode: '2' }, /parameter 'execution_mode' must be 0 \(sequential\) or 1 \(parallel\), got '2'/],
    [{ enable_mem_arena: 'yes' }, /parameter 'enable_mem_arena' must be true\/false or 1\/0, got 'yes'/],
  ];
  for (const [params, message] of cases) {
    assert.throws(
      () => sessionOptionsFor({ config: config(params), instanceCountHint: 1 }, 2),
      (err: unknown) => {
        assert.ok(err instanceof ServerError);
        assert.equal(err.code, 'INVALID_ARG');
        assert.match(err.message, message);
        return true;
      },
    );
  }
});
