import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { completeOnnxConfig } from '../../src/backends/onnxruntime/complete-config';
import { ServerError } from '../../src/core/errors';
import type { ModelConfig, ModelInput, ModelOutput } from '../../src/core/model-config';
import { parseModelConfigText } from '../../src/repository/config/pbtxt';
import { simpleModel } from './fixtures/onnx-builder';
import { repoRoot } from './fixtures/repo-paths';

const repoModel = (name: string): string => path.join(repoRoot(), 'model_repository', name, '1', 'model.onnx');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'onnx-complete-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
function tmpModel(name: string, bytes: Uint8Array): string {
  const file = path.join(tmp, `${name}.onnx`);
  fs.writeFileSync(file, bytes);
  return file;
}

// Hand-built models: fixed first dim (cannot batch), a scalar-per-item one, one with an overridable initializer.
const FIXED = tmpModel('fixed', simpleModel([{ name: 'x', elem: 1, dims: [1, 3] }], [{ name: 'y', elem: 1, dims: [1, 3] }]));
const SCALAR = tmpModel('scalar', simpleModel([{ name: 'x', elem: 7, dims: ['n'] }], [{ name: 'y', elem: 8, dims: [-1] }]));
const OVERRIDE = tmpModel(
  'override',
  simpleModel(
    [
      { name: 'x', elem: 1, dims: [-1, 2] },
      { name: 'w', elem: 1, dims: [2] },
    ],
    [{ name: 'y', elem: 1, dims: [-1, 2] }],
    ['w'],
  ),
);

const input = (name: string, data_type: string, dims: number[], extra: Partial<ModelInput> = {}): ModelInput => ({
  name,
  data_type,
  format: 'FORMAT_NONE',
  dims,
  is_shape_tensor: false,
  allow_ragged_batch: false,
  optional: false,
  is_non_linear_format_io: false,
  ...extra,
});
const output = (name: string, data_type: string, dims: number[], extra: Partial<ModelOutput> = {}): ModelOutput => ({
  name,
  data_type,
  dims,
  label_filename: '',
  is_shape_tensor: false,
  is_non_linear_format_io: false,
  ...extra,
});

function config(name: string, fields: Partial<ModelConfig> = {}): ModelConfig {
  return {
    name,
    platform: '',
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
    parameters: {},
    model_warmup: [],
    ...fields,
  };
}

const SIMPLE_IN = [input('INPUT0', 'TYPE_INT32', [16]), input('INPUT1', 'TYPE_INT32', [16])];
const SIMPLE_OUT = [output('OUTPUT0', 'TYPE_INT32', [16]), output('OUTPUT1', 'TYPE_INT32', [16])];
const simple = (fields: Partial<ModelConfig> = {}): ModelConfig => config('simple', { max_batch_size: 8, input: SIMPLE_IN, output: SIMPLE_OUT, ...fields });
const EMPTY_DYNAMIC = {
  preferred_batch_size: [],
  max_queue_delay_microseconds: 0,
  preserve_ordering: false,
  priority_levels: 0,
  default_priority_level: 0,
  priority_queue_policy: {},
};

interface Case {
  label: string;
  config: ModelConfig;
  file: string;
  autoComplete?: boolean;
  backendConfig?: Record<string, string>;
  /** Fields expected in the result (deep-equal each). */
  expect?: Partial<ModelConfig>;
  absent?: (keyof ModelConfig)[];
  error?: { code: string; message: string | RegExp };
}

const cases: Case[] = [
  // ---- auto-complete ----
  {
    label: 'full config is kept as is',
    config: simple(),
    file: repoModel('simple'),
    expect: { max_batch_size: 8, input: SIMPLE_IN, output: SIMPLE_OUT },
    absent: ['dynamic_batching'],
  },
  {
    label: 'full config with max_batch_size 0 is not auto-completed (model -1 accepts the config dims)',
    config: simple({
      max_batch_size: 0,
      input: [input('INPUT0', 'TYPE_INT32', [-1, 16]), input('INPUT1', 'TYPE_INT32', [2, 16])],
      output: [output('OUTPUT0', 'TYPE_INT32', [-1, 16])],
    }),
    file: repoModel('simple'),
    expect: { max_batch_size: 0 },
    absent: ['dynamic_batching'],
  },
  {
    label: 'empty config: default max batch size 4, dynamic batching, all tensors without the batch dim',
    config: config('simple'),
    file: repoModel('simple'),
    expect: { max_batch_size: 4, input: SIMPLE_IN, output: SIMPLE_OUT, dynamic_batching: EMPTY_DYNAMIC },
  },
  {
    label: 'default-max-batch-size=0 keeps the model unbatched, dims with the batch dim',
    config: config('simple'),
    file: repoModel('simple'),
    backendConfig: { 'default-max-batch-size': '0' },
    expect: { max_batch_size: 0, input: [input('INPUT0', 'TYPE_INT32', [-1, 16]), input('INPUT1', 'TYPE_INT32', [-1, 16])] },
    absent: ['dynamic_batching'],
  },
  {
    label: 'default-max-batch-size=1: batching without dynamic batching',
    config: config('simple'),
    file: repoModel('simple'),
    backendConfig: { 'default-max-batch-size': '1' },
    expect: { max_batch_size: 1, input: SIMPLE_IN },
    absent: ['dynamic_batching'],
  },
  {
    label: 'configured max_batch_size is kept; dynamic batching added',
    config: config('simple', { max_batch_size: 8 }),
    file: repoModel('simple'),
    expect: { max_batch_size: 8, input: SIMPLE_IN, dynamic_batching: EMPTY_DYNAMIC },
  },
  {
    label: 'sequence batching: no dynamic batching added',
    config: config('simple', { sequence_batching: {} }),
    file: repoModel('simple'),
    expect: { max_batch_size: 4 },
    absent: ['dynamic_batching'],
  },
  {
    label: 'existing dynamic batching is kept',
    config: config('simple', { dynamic_batching: { ...EMPTY_DYNAMIC, max_queue_delay_microseconds: 100 } }),
    file: repoModel('simple'),
    expect: { dynamic_batching: { ...EMPTY_DYNAMIC, max_queue_delay_microseconds: 100 } },
  },
  {
    label: 'only inputs given: outputs filled, inputs kept',
    config: config('simple', { max_batch_size: 2, input: SIMPLE_IN }),
    file: repoModel('simple'),
    expect: { max_batch_size: 2, input: SIMPLE_IN, output: SIMPLE_OUT },
  },
  {
    label: 'auto-complete disabled: nothing is filled, and the missing inputs are an error',
    config: config('simple'),
    file: repoModel('simple'),
    autoComplete: false,
    error: {
      code: 'INVALID_ARG',
      message: "unable to load model 'simple', configuration expects 0 inputs, model provides 2 (not in the configuration: 'INPUT0', 'INPUT1')",
    },
  },
  {
    label: 'model that cannot batch: full dims, max_batch_size stays 0',
    config: config('fixed'),
    file: FIXED,
    expect: { max_batch_size: 0, input: [input('x', 'TYPE_FP32', [1, 3])], output: [output('y', 'TYPE_FP32', [1, 3])] },
    absent: ['dynamic_batching'],
  },
  {
    label: 'model that cannot batch with max_batch_size > 0 fails autofill',
    config: config('fixed', { max_batch_size: 8 }),
    file: FIXED,
    error: { code: 'INVALID_ARG', message: "autofill failed for model 'fixed': model does not support batching while non-zero max_batch_size is specified" },
  },
  {
    label: 'scalar items: dims [1] with an empty reshape; BYTES as TYPE_STRING',
    config: config('scalar'),
    file: SCALAR,
    expect: {
      max_batch_size: 4,
      input: [input('x', 'TYPE_INT64', [1], { reshape: { shape: [] } })],
      output: [output('y', 'TYPE_STRING', [1], { reshape: { shape: [] } })],
    },
  },
  {
    label: 'identity_types: variable dims',
    config: config('identity_types', { max_batch_size: 8, output: [output('OUTPUT_FP16', 'TYPE_FP16', [-1])] }),
    file: repoModel('identity_types'),
    expect: { output: [output('OUTPUT_FP16', 'TYPE_FP16', [-1])] },
  },
  {
    label: 'bad default-max-batch-size',
    config: config('simple'),
    file: repoModel('simple'),
    backendConfig: { 'default-max-batch-size': 'many' },
    error: { code: 'INVALID_ARG', message: "failed to parse backend config 'default-max-batch-size': expected an integer, got 'many'" },
  },

  // ---- config vs model ----
  {
    label: 'unknown input name',
    config: simple({ input: [SIMPLE_IN[0], input('INPUT2', 'TYPE_INT32', [16])] }),
    file: repoModel('simple'),
    error: { code: 'INVALID_ARG', message: "unexpected inference input 'INPUT2', allowed inputs are: INPUT0, INPUT1" },
  },
  {
    label: 'more inputs than the model has',
    config: simple({ input: [...SIMPLE_IN, input('INPUT2', 'TYPE_INT32', [16])] }),
    file: repoModel('simple'),
    error: { code: 'INVALID_ARG', message: "unable to load model 'simple', configuration expects 3 inputs, model provides 2" },
  },
  {
    label: 'input datatype mismatch',
    config: simple({ input: [input('INPUT0', 'TYPE_FP32', [16]), SIMPLE_IN[1]] }),
    file: repoModel('simple'),
    error: {
      code: 'INVALID_ARG',
      message: "unable to load model 'simple', configuration expects datatype TYPE_FP32 for input 'INPUT0', model provides TYPE_INT32",
    },
  },
  {
    label: 'input dims mismatch with batching',
    config: simple({ input: [input('INPUT0', 'TYPE_INT32', [8]), SIMPLE_IN[1]] }),
    file: repoModel('simple'),
    error: {
      code: 'INVALID_ARG',
      message:
        "model 'simple', tensor 'INPUT0': the model expects 2 dimensions (shape [-1,16]) but the model configuration specifies 2 dimensions (an initial batch dimension because max_batch_size > 0 followed by the explicit tensor shape, making complete shape [-1,8])",
    },
  },
  {
    label: 'input rank mismatch without batching',
    config: simple({ max_batch_size: 0 }),
    file: repoModel('simple'),
    error: {
      code: 'INVALID_ARG',
      message:
        "model 'simple', tensor 'INPUT0': the model expects 2 dimensions (shape [-1,16]) but the model configuration specifies 1 dimensions (shape [16])",
    },
  },
  {
    label: 'config -1 where the model is fixed',
    config: simple({ input: [input('INPUT0', 'TYPE_INT32', [-1]), SIMPLE_IN[1]] }),
    file: repoModel('simple'),
    error: { code: 'INVALID_ARG', message: /tensor 'INPUT0': the model expects 2 dimensions \(shape \[-1,16\]\).*complete shape \[-1,-1\]/ },
  },
  {
    label: 'batching config on a model without a variable first dim',
    config: config('fixed', { max_batch_size: 4, input: [input('x', 'TYPE_FP32', [3])], output: [output('y', 'TYPE_FP32', [3])] }),
    file: FIXED,
    error: {
      code: 'INVALID_ARG',
      message:
        "model 'fixed', tensor 'x': for the model to support batching the shape should have at least 1 dimension and the first dimension must be -1; but shape expected by the model is [1,3]",
    },
  },
  {
    label: 'unknown output name',
    config: simple({ output: [output('OUTPUT9', 'TYPE_INT32', [16])] }),
    file: repoModel('simple'),
    error: { code: 'INVALID_ARG', message: "unexpected inference output 'OUTPUT9', allowed outputs are: OUTPUT0, OUTPUT1" },
  },
  {
    label: 'output datatype mismatch',
    config: simple({ output: [output('OUTPUT1', 'TYPE_INT64', [16])] }),
    file: repoModel('simple'),
    error: {
      code: 'INVALID_ARG',
      message: "unable to load model 'simple', configuration expects datatype TYPE_INT64 for output 'OUTPUT1', model provides TYPE_INT32",
    },
  },
  {
    label: 'output dims mismatch',
    config: simple({ output: [output('OUTPUT1', 'TYPE_INT32', [4, 4])] }),
    file: repoModel('simple'),
    error: { code: 'INVALID_ARG', message: /^model 'simple', tensor 'OUTPUT1': the model expects 2 dimensions/ },
  },
  { label: 'a subset of the outputs is fine', config: simple({ output: [SIMPLE_OUT[1]] }), file: repoModel('simple'), expect: { output: [SIMPLE_OUT[1]] } },
  {
    label: 'input reshape is what is compared',
    config: simple({ input: [input('INPUT0', 'TYPE_INT32', [4, 4], { reshape: { shape: [16] } }), SIMPLE_IN[1]] }),
    file: repoModel('simple'),
    expect: { max_batch_size: 8 },
  },
  {
    label: 'an overridable initializer may be configured',
    config: config('override', { input: [input('x', 'TYPE_FP32', [-1, 2]), input('w', 'TYPE_FP32', [2])], output: [output('y', 'TYPE_FP32', [-1, 2])] }),
    file: OVERRIDE,
    autoComplete: false,
    expect: { max_batch_size: 0 },
  },
  {
    label: 'an overridable initializer need not be configured',
    config: config('override', { input: [input('x', 'TYPE_FP32', [-1, 2])], output: [output('y', 'TYPE_FP32', [-1, 2])] }),
    file: OVERRIDE,
    autoComplete: false,
    expect: { max_batch_size: 0 },
  },
  { label: 'auto-complete leaves overridable initializers out', config: config('override'), file: OVERRIDE, expect: { input: [input('x', 'TYPE_FP32', [2])] } },

  // ---- model file ----
  {
    label: 'missing model file',
    config: simple(),
    file: path.join(tmp, 'simple', '1', 'model.onnx'),
    error: { code: 'INTERNAL', message: `failed to stat file ${path.join(tmp, 'simple', '1', 'model.onnx')}` },
  },
  {
    label: 'corrupt model file',
    config: simple(),
    file: tmpModel('corrupt', Buffer.from('not a model at all')),
    error: { code: 'INTERNAL', message: `onnx runtime error 7: Load model from ${path.join(tmp, 'corrupt.onnx')} failed:Protobuf parsing failed.` },
  },
  {
    label: 'model directory holding model.onnx',
    config: simple(),
    file: path.join(repoRoot(), 'model_repository', 'simple', '1'),
    expect: { max_batch_size: 8 },
  },
];

for (const c of cases) {
  test(`completeConfig: ${c.label}`, async () => {
    const before = structuredClone(c.config);
    const run = completeOnnxConfig(c.config, c.file, c.autoComplete ?? true, c.backendConfig ?? {});
    if (c.error) {
      await assert.rejects(run, (err: unknown) => {
        assert.ok(err instanceof ServerError, String(err));
        assert.equal(err.code, c.error!.code);
        if (typeof c.error!.message === 'string') assert.ok(err.message.startsWith(c.error!.message), err.message);
        else assert.match(err.message, c.error!.message);
        return true;
      });
    } else {
      const result = await run;
      for (const [key, value] of Object.entries(c.expect ?? {})) assert.deepEqual(result[key], value, key);
      for (const key of c.absent ?? []) assert.equal(result[key], undefined, `${key} should be absent`);
    }
    assert.deepEqual(c.config, before, 'the input config is not modified');
  });
}

test('the example repository configs agree with their models, and auto-complete leaves them as they are', async () => {
  for (const name of ['simple', 'dense_classifier', 'image_classifier', 'identity_types']) {
    const file = path.join(repoRoot(), 'model_repository', name, 'config.pbtxt');
    const parsed = parseModelConfigText(fs.readFileSync(file, 'utf8'), file);
    assert.deepEqual(await completeOnnxConfig(parsed, repoModel(name), false, {}), parsed, name);
    assert.deepEqual(await completeOnnxConfig(parsed, repoModel(name), true, {}), parsed, name);
  }
});
