import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ServerError } from '../../src/core/errors';
import type { DecodedInput, DecodedRequest, RequestedOutput } from '../../src/request/decoded-request';
import { validateRequest } from '../../src/request/validate';
import { compileValidationPlan } from '../../src/request/validation-plan';
import type { ValidationPlan } from '../../src/request/validation-plan';
import type { ModelConfig, ModelInput, ModelOutput } from '../../src/core/model-config';

function input(name: string, data_type: string, dims: number[], extra: Partial<ModelInput> = {}): ModelInput {
  return {
    name,
    data_type,
    dims,
    format: 'FORMAT_NONE',
    is_shape_tensor: false,
    allow_ragged_batch: false,
    optional: false,
    is_non_linear_format_io: false,
    ...extra,
  };
}

function output(name: string, data_type: string, dims: number[]): ModelOutput {
  return { name, data_type, dims, label_filename: '', is_shape_tensor: false, is_non_linear_format_io: false };
}

function plan(maxBatchSize: number, inputs: ModelInput[], outputs: ModelOutput[] = [output('OUT', 'TYPE_FP32', [4])]): ValidationPlan {
  return compileValidationPlan({ name: 'm', max_batch_size: maxBatchSize, input: inputs, output: outputs } as unknown as ModelConfig);
}

function fp32(name: string, shape: number[], bytes?: number): DecodedInput {
  let n = 4;
  for (const d of shape) n *= d;
  return { name, datatype: 'FP32', shape, data: new Uint8Array(bytes ?? n), parameters: {} };
}

function bytesInput(name: string, shape: number[], raw: number[]): DecodedInput {
  return { name, datatype: 'BYTES', shape, data: Uint8Array.from(raw), parameters: {} };
}

function out(name: string): RequestedOutput {
  return { name, binary: undefined, classification: 0, parameters: {} };
}

function req(inputs: DecodedInput[], outputs: RequestedOutput[] | null = null, id = ''): DecodedRequest {
  return { id, inputs, outputs, parameters: {}, binaryDataOutput: false };
}

const R = '[request id: <id_unknown>] ';
const NOTE =
  'NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each ' +
  'input shape. If you want to specify the full shape including the batch dim in your input dims config, try ' +
  'setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.';

const batched = plan(8, [input('A', 'TYPE_FP32', [4]), input('B', 'TYPE_FP32', [4])]);
const flat = plan(0, [input('A', 'TYPE_FP32', [2, 3])]);
const optional = plan(0, [input('A', 'TYPE_FP32', [4]), input('B', 'TYPE_FP32', [4], { optional: true })]);
const strings = plan(0, [input('S', 'TYPE_STRING', [2])]);
const shapeTensor = plan(4, [input('X', 'TYPE_FP32', [2]), input('SH', 'TYPE_INT32', [3], { is_shape_tensor: true })]);

// In §4.2 order; each row's request fails only at the step it names.
const errors: { name: string; plan: ValidationPlan; req: DecodedRequest; message: string }[] = [
  { name: 'duplicate input', plan: batched, req: req([fp32('A', [1, 4]), fp32('A', [1, 4])]), message: `${R}input 'A' already exists in request` },
  {
    name: 'duplicate output',
    plan: batched,
    req: req([fp32('A', [1, 4]), fp32('B', [1, 4])], [out('OUT'), out('OUT')]),
    message: `${R}output 'OUT' already exists in request`,
  },
  {
    name: '1. unknown requested output',
    plan: batched,
    req: req([fp32('A', [1, 4]), fp32('B', [1, 4])], [out('NOPE')]),
    message: "unexpected inference output 'NOPE' for model 'm', allowed outputs are: OUT",
  },
  {
    name: '2. too few inputs (all required)',
    plan: batched,
    req: req([fp32('A', [1, 4])]),
    message: `${R}expected 2 inputs but got 1 inputs for model 'm'. Got input(s) ['A'], but missing required input(s) ['B']. Please provide all required input(s).`,
  },
  {
    name: '2. no inputs',
    plan: batched,
    req: req([]),
    message: `${R}expected 2 inputs but got 0 inputs for model 'm'. Got input(s) [], but missing required input(s) ['A','B']. Please provide all required input(s).`,
  },
  {
    name: '2. too many inputs: missing list renders as "]"',
    plan: flat,
    req: req([fp32('A', [2, 3]), fp32('Z', [1])]),
    message: `${R}expected 1 inputs but got 2 inputs for model 'm'. Got input(s) ['A','Z'], but missing required input(s) ]. Please provide all required input(s).`,
  },
  {
    name: '2. optional inputs',
    plan: optional,
    req: req([]),
    message: `${R}expected number of inputs between 1 and 2 but got 0 inputs for model 'm'. Got input(s) [], but missing required input(s) ['A']. Please provide all required input(s).`,
  },
  {
    name: '3. unknown input',
    plan: batched,
    req: req([fp32('A', [1, 4]), fp32('C', [1, 4])]),
    message: "unexpected inference input 'C' for model 'm', allowed inputs are: A, B",
  },
  {
    name: '3. unknown input (non-batching)',
    plan: flat,
    req: req([fp32('Q', [2, 3])]),
    message: "unexpected inference input 'Q' for model 'm', allowed inputs are: A",
  },
  {
    name: '3. rank 0',
    plan: batched,
    req: req([fp32('A', []), fp32('B', [1, 4])]),
    message: `${R}input 'A' has no shape but model requires batch dimension for 'm'`,
  },
  {
    name: '3. batch mismatch',
    plan: batched,
    req: req([fp32('A', [2, 4]), fp32('B', [3, 4])]),
    message: `${R}input 'B' batch size does not match other inputs for 'm'`,
  },
  {
    name: '4. batch too large',
    plan: batched,
    req: req([fp32('A', [9, 4]), fp32('B', [9, 4])]),
    message: `${R}inference request batch-size must be <= 8 for 'm'`,
  },
  {
    name: '4. forgotten batch dim',
    plan: batched,
    req: req([fp32('A', [16]), fp32('B', [16])], null, '42'),
    message: "[request id: 42] inference request batch-size must be <= 8 for 'm'",
  },
  {
    name: '5. datatype',
    plan: batched,
    req: req([{ ...fp32('A', [1, 4]), datatype: 'INT32' }, fp32('B', [1, 4])]),
    message: `${R}inference input 'A' data-type is 'INT32', but model 'm' expects 'FP32'`,
  },
  {
    name: '5. invalid datatype',
    plan: batched,
    req: req([{ ...fp32('A', [1, 4]), datatype: 'FLOAT' }, fp32('B', [1, 4])]),
    message: `${R}inference input 'A' data-type is '<invalid>', but model 'm' expects 'FP32'. 'FLOAT' is not a protocol datatype; in a request write 'FP32'.`,
  },
  {
    name: '5. config spelling of a datatype (gRPC)',
    plan: batched,
    req: req([{ ...fp32('A', [1, 4]), datatype: 'TYPE_FP32' }, fp32('B', [1, 4])]),
    message: `${R}inference input 'A' data-type is '<invalid>', but model 'm' expects 'FP32'. 'TYPE_FP32' is how config.pbtxt spells it; in a request write 'FP32'.`,
  },
  {
    name: '6. -1 in request shape',
    plan: flat,
    req: req([fp32('A', [2, -1], 8)]),
    message: `${R}All input dimensions should be specified for input 'A' for model 'm', got [2,-1]`,
  },
  {
    name: '6. shape (batching, with NOTE)',
    plan: batched,
    req: req([fp32('A', [1, 5]), fp32('B', [1, 4])]),
    message: `${R}unexpected shape for input 'A' for model 'm'. Expected [-1,4], got [1,5]. ${NOTE}`,
  },
  {
    name: '6. shape (non-batching, trailing ". ")',
    plan: flat,
    req: req([fp32('A', [3, 2])]),
    message: `${R}unexpected shape for input 'A' for model 'm'. Expected [2,3], got [3,2]. `,
  },
  {
    name: '6. rank mismatch',
    plan: flat,
    req: req([fp32('A', [6])]),
    message: `${R}unexpected shape for input 'A' for model 'm'. Expected [2,3], got [6]. `,
  },
  {
    name: '7. byte size',
    plan: batched,
    req: req([fp32('A', [1, 4], 15), fp32('B', [1, 4])]),
    message: `${R}input byte size mismatch for input 'A' for model 'm'. Expected 16, got 15`,
  },
  {
    name: '7. BYTES: too many elements (early stop)',
    plan: strings,
    req: req([bytesInput('S', [2], [1, 0, 0, 0, 97, 0, 0, 0, 0, 1, 0, 0, 0, 98])]),
    message: `${R}unexpected number of string elements 3 for inference input 'S' for model 'm', expecting 2`,
  },
  {
    name: '7. BYTES: too few elements',
    plan: strings,
    req: req([bytesInput('S', [2], [1, 0, 0, 0, 97])]),
    message: `${R}expected 2 string elements for inference input 'S' for model 'm', got 1`,
  },
  {
    name: '7. BYTES: truncated last element',
    plan: strings,
    req: req([bytesInput('S', [2], [1, 0, 0, 0, 97, 5, 0, 0, 0, 98])]),
    message: `${R}expected 2 string elements for inference input 'S' for model 'm', got 1`,
  },
  {
    name: '7. BYTES: incomplete length indicator',
    plan: strings,
    req: req([bytesInput('S', [2], [1, 0, 0, 0, 97, 2, 0])]),
    message:
      `${R}incomplete string length indicator for inference input 'S' for model 'm', expecting 4 bytes but only 2 bytes available. ` +
      'Please make sure the string length indicator is in one buffer.',
  },
];

for (const row of errors) {
  test(`validateRequest rejects: ${row.name}`, () => {
    assert.throws(
      () => validateRequest(row.plan, row.req),
      (e: unknown) => e instanceof ServerError && e.code === 'INVALID_ARG' && e.message === row.message,
    );
  });
}

const ok: { name: string; plan: ValidationPlan; req: DecodedRequest; batchSize: number }[] = [
  { name: 'batched', plan: batched, req: req([fp32('A', [3, 4]), fp32('B', [3, 4])], [out('OUT')]), batchSize: 3 },
  { name: 'non-batching returns 1', plan: flat, req: req([fp32('A', [2, 3])]), batchSize: 1 },
  { name: 'optional input omitted', plan: optional, req: req([fp32('A', [4])]), batchSize: 1 },
  // Triton's count check counts only: the optional input in place of the required one passes.
  { name: 'input count is a count', plan: optional, req: req([fp32('B', [4])]), batchSize: 1 },
  { name: 'batch 0 then batch 2 (Triton quirk)', plan: batched, req: req([fp32('A', [0, 4]), fp32('B', [2, 4])]), batchSize: 2 },
  { name: 'BYTES', plan: strings, req: req([bytesInput('S', [2], [1, 0, 0, 0, 97, 0, 0, 0, 0])]), batchSize: 1 },
  {
    name: 'shape tensor keeps its shape',
    plan: shapeTensor,
    req: req([fp32('X', [2, 2]), { name: 'SH', datatype: 'INT32', shape: [3], data: new Uint8Array(12), parameters: {} }]),
    batchSize: 2,
  },
];

for (const row of ok) {
  test(`validateRequest accepts: ${row.name}`, () => {
    assert.deepEqual(validateRequest(row.plan, row.req), { batchSize: row.batchSize });
  });
}

test('variable dims accept any size', () => {
  const p = plan(0, [input('A', 'TYPE_FP32', [-1, 3])]);
  assert.deepEqual(validateRequest(p, req([fp32('A', [5, 3])])), { batchSize: 1 });
});

test('compileValidationPlan is structured-clone-able and complete', () => {
  const p = compileValidationPlan({
    name: 'm',
    max_batch_size: 2,
    model_transaction_policy: { decoupled: true },
    input: [input('A', 'TYPE_STRING', [1], { reshape: { shape: [] } }), input('B', 'TYPE_BF16', [2], { optional: true })],
    output: [output('O', 'TYPE_INT64', [-1])],
  } as unknown as ModelConfig);
  assert.deepEqual(structuredClone(p), p);
  assert.deepEqual(p, {
    modelName: 'm',
    maxBatchSize: 2,
    inputs: [
      { name: 'A', datatype: 'BYTES', dims: [1], optional: false, isShapeTensor: false, reshape: [] },
      { name: 'B', datatype: 'BF16', dims: [2], optional: true, isShapeTensor: false },
    ],
    outputs: [{ name: 'O', datatype: 'INT64', dims: [-1] }],
    requiredInputs: ['A'],
    decoupled: true,
  });
});
