import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseModelConfigText } from '../../src/repository/config/pbtxt';
import { defaultCpuInstanceCount, normalizeConfig, type NormalizeContext } from '../../src/repository/config/normalize';
import type { ModelConfig } from '../../src/core/model-config';

const cfg = (text: string): ModelConfig => parseModelConfigText(text, 'm/config.pbtxt');
const group = (over: Record<string, unknown>): Record<string, unknown> => ({
  name: 'm',
  kind: 'KIND_CPU',
  count: 1,
  gpus: [],
  secondary_devices: [],
  profile: [],
  passive: false,
  host_policy: '',
  ...over,
});

const instanceCases: { name: string; text: string; ctx: Partial<NormalizeContext>; groups: Record<string, unknown>[] }[] = [
  {
    name: 'default group on CPU, onnxruntime count 2',
    text: 'backend: "onnxruntime"',
    ctx: { gpuCount: 0 },
    groups: [group({ count: 2 })],
  },
  { name: 'default group on CPU, python count 1', text: 'backend: "python"', ctx: { gpuCount: 0 }, groups: [group({})] },
  {
    name: 'default group on GPU gets all gpus, count 1',
    text: 'backend: "onnxruntime"',
    ctx: { gpuCount: 2 },
    groups: [group({ kind: 'KIND_GPU', gpus: [0, 1] })],
  },
  {
    name: 'caller-given CPU count',
    text: 'backend: "python"',
    ctx: { gpuCount: 0, defaultInstanceCount: 3 },
    groups: [group({ count: 3 })],
  },
  {
    name: 'unnamed groups named <model>_<index>',
    text: 'backend: "python" instance_group [ { kind: KIND_CPU count: 4 }, { name: "g" kind: KIND_CPU }, { kind: KIND_MODEL } ]',
    ctx: { gpuCount: 0 },
    groups: [group({ name: 'm_0', count: 4 }), group({ name: 'g' }), group({ name: 'm_2', kind: 'KIND_MODEL' })],
  },
  {
    name: 'KIND_AUTO without GPUs is CPU; count 0 and negative take the default',
    text: 'backend: "onnxruntime" instance_group { count: 0 } instance_group { count: -1 }',
    ctx: { gpuCount: 0 },
    groups: [group({ name: 'm_0', count: 2 }), group({ name: 'm_1', count: 2 })],
  },
  {
    name: 'KIND_AUTO with GPUs is GPU; listed gpu missing makes it CPU',
    text: 'backend: "onnxruntime" instance_group { gpus: [1] } instance_group { gpus: [5] } instance_group { }',
    ctx: { gpuCount: 2 },
    groups: [
      group({ name: 'm_0', kind: 'KIND_GPU', gpus: [1] }),
      group({ name: 'm_1', kind: 'KIND_CPU', gpus: [5], count: 2 }),
      group({ name: 'm_2', kind: 'KIND_GPU', gpus: [0, 1] }),
    ],
  },
  {
    name: 'KIND_GPU without GPUs keeps an empty list (validation reports it)',
    text: 'backend: "onnxruntime" instance_group { kind: KIND_GPU count: 2 host_policy: "" }',
    ctx: { gpuCount: 0 },
    groups: [group({ name: 'm_0', kind: 'KIND_GPU', count: 2 })],
  },
];

for (const c of instanceCases) {
  test(`normalize instance groups: ${c.name}`, () => {
    const out = normalizeConfig(cfg(c.text), { modelName: 'm', gpuCount: 0, ...c.ctx });
    assert.deepEqual(out.instance_group, c.groups);
  });
}

test('normalize: name from the directory, kept when given', () => {
  assert.equal(normalizeConfig(cfg(''), { modelName: 'dir', gpuCount: 0 }).name, 'dir');
  assert.equal(normalizeConfig(cfg('name: "x"'), { modelName: 'dir', gpuCount: 0 }).name, 'x');
});

test('normalize: version policy defaults to latest 1, kept when given', () => {
  assert.deepEqual(normalizeConfig(cfg(''), { modelName: 'm', gpuCount: 0 }).version_policy, { latest: { num_versions: 1 } });
  assert.deepEqual(normalizeConfig(cfg('version_policy { all {} }'), { modelName: 'm', gpuCount: 0 }).version_policy, { all: {} });
});

const batchingCases: { name: string; text: string; path: (c: ModelConfig) => unknown; want: unknown }[] = [
  { name: 'preferred = [max_batch_size]', text: 'max_batch_size: 8 dynamic_batching {}', path: (c) => c.dynamic_batching?.preferred_batch_size, want: [8] },
  { name: 'preferred stays empty without batching', text: 'dynamic_batching {}', path: (c) => c.dynamic_batching?.preferred_batch_size, want: [] },
  {
    name: 'preferred kept',
    text: 'max_batch_size: 8 dynamic_batching { preferred_batch_size: [2, 4] }',
    path: (c) => c.dynamic_batching?.preferred_batch_size,
    want: [2, 4],
  },
  { name: 'no dynamic batching added', text: 'max_batch_size: 8', path: (c) => c.dynamic_batching, want: undefined },
  { name: 'sequence idle default 1 s', text: 'sequence_batching {}', path: (c) => c.sequence_batching?.max_sequence_idle_microseconds, want: 1000000 },
  {
    name: 'sequence idle kept',
    text: 'sequence_batching { max_sequence_idle_microseconds: 5 }',
    path: (c) => c.sequence_batching?.max_sequence_idle_microseconds,
    want: 5,
  },
  {
    name: 'oldest preferred = [max_batch_size]',
    text: 'max_batch_size: 4 sequence_batching { oldest {} }',
    path: (c) => (c.sequence_batching?.oldest as { preferred_batch_size: number[] }).preferred_batch_size,
    want: [4],
  },
  { name: 'direct strategy not added', text: 'sequence_batching {}', path: (c) => c.sequence_batching?.direct, want: undefined },
];

for (const c of batchingCases) {
  test(`normalize batching: ${c.name}`, () => {
    assert.deepEqual(c.path(normalizeConfig(cfg(c.text), { modelName: 'm', gpuCount: 0 })), c.want);
  });
}

test('normalize: optimization gets pinned memory, explicit settings kept', () => {
  const a = normalizeConfig(cfg(''), { modelName: 'm', gpuCount: 0 });
  assert.deepEqual(a.optimization, {
    priority: 'PRIORITY_DEFAULT',
    input_pinned_memory: { enable: true },
    output_pinned_memory: { enable: true },
    gather_kernel_buffer_threshold: 0,
    eager_batching: false,
  });
  const b = normalizeConfig(cfg('optimization { priority: PRIORITY_MAX input_pinned_memory { enable: false } }'), {
    modelName: 'm',
    gpuCount: 0,
  });
  assert.equal(b.optimization?.priority, 'PRIORITY_MAX');
  assert.deepEqual(b.optimization?.input_pinned_memory, { enable: false });
  assert.deepEqual(b.optimization?.output_pinned_memory, { enable: true });
});

test('normalize: ensembles get neither instance groups nor optimization', () => {
  const c = normalizeConfig(cfg('platform: "ensemble" ensemble_scheduling { }'), { modelName: 'e', gpuCount: 1 });
  assert.deepEqual(c.instance_group, []);
  assert.equal(c.optimization, undefined);
  assert.deepEqual(c.version_policy, { latest: { num_versions: 1 } });
});

test('normalize: pure, the input is not modified', () => {
  const input = cfg('max_batch_size: 2 dynamic_batching {} instance_group { }');
  const before = structuredClone(input);
  normalizeConfig(input, { modelName: 'm', gpuCount: 1 });
  assert.deepEqual(input, before);
});

test('defaultCpuInstanceCount per backend', () => {
  assert.deepEqual(['onnxruntime', 'tensorflow', 'python', 'pytorch', 'openvino', ''].map(defaultCpuInstanceCount), [2, 2, 1, 1, 1, 1]);
});
