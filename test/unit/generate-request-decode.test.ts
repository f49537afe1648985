/**
 * The generate extension's request mapping (generate-request-decode.ts),
 * table-driven: keys to inputs by name with the metadata shape's two
 * passes, `parameters` mapped the same way, other keys as parameters, `id`,
 * and each refusal with its text.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeGenerateRequest, generateShape } from '../../src/frontend/http/generate-request-decode';
import { toErrorInfo } from '../../src/core/errors';
import type { DataType } from '../../src/core/datatypes';
import type { ValidationPlan } from '../../src/request/validation-plan';

function plan(maxBatchSize: number, inputs: [string, DataType, number[]][]): ValidationPlan {
  return {
    modelName: 'm',
    maxBatchSize,
    decoupled: false,
    outputs: [],
    requiredInputs: inputs.map(([n]) => n),
    inputs: inputs.map(([name, datatype, dims]) => ({ name, datatype, dims, optional: false, isShapeTensor: false })),
  };
}

const LLM = plan(0, [
  ['text_input', 'BYTES', [1]],
  ['stream', 'BOOL', [1]],
]);
const BATCHED = plan(8, [
  ['INPUT0', 'INT32', [4]],
  ['SEQ', 'FP32', [-1]],
]);

const decode = (p: ValidationPlan, body: unknown, encoding = ''): ReturnType<typeof decodeGenerateRequest> =>
  decodeGenerateRequest(Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)), encoding, p, 1 << 20);

/** BYTES serialized: 4-byte little-endian length, then the bytes. */
function bytes(...items: string[]): number[] {
  const out: number[] = [];
  for (const s of items) {
    const b = Buffer.from(s);
    out.push(b.length & 0xff, (b.length >> 8) & 0xff, 0, 0, ...b);
  }
  return out;
}

const MAPPED: [string, ValidationPlan, unknown, { inputs: [string, number[], number[]][]; parameters: Record<string, unknown>; id: string }][] = [
  [
    'a string and a bool, parameters nested',
    LLM,
    { text_input: 'hi', stream: true, parameters: { max_tokens: 3, temperature: 0.5 } },
    {
      inputs: [
        ['text_input', [1], bytes('hi')],
        ['stream', [1], [1]],
      ],
      parameters: { max_tokens: 3, temperature: 0.5 },
      id: '',
    },
  ],
  [
    'an input inside parameters, a top-level key as a parameter, id',
    LLM,
    { id: 'r', parameters: { text_input: ['x'] }, top_k: 'a' },
    { inputs: [['text_input', [1], bytes('x')]], parameters: { top_k: 'a' }, id: 'r' },
  ],
  [
    'batched: the batch dimension is 1, the fixed dims divide the count',
    BATCHED,
    { INPUT0: [1, 2, 3, 4], SEQ: [0.5, 1.5, 2.5] },
    {
      inputs: [
        ['INPUT0', [1, 4], [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0]],
        ['SEQ', [1, 3], [...Buffer.from(new Float32Array([0.5, 1.5, 2.5]).buffer)]],
      ],
      parameters: {},
      id: '',
    },
  ],
  [
    'a scalar into a variable dimension',
    BATCHED,
    { SEQ: 2 },
    { inputs: [['SEQ', [1, 1], [...Buffer.from(new Float32Array([2]).buffer)]]], parameters: {}, id: '' },
  ],
  [
    'an integer parameter past 2^53 stays exact',
    LLM,
    '{"text_input":"x","seed":9007199254740993,"parameters":{"big":18446744073709551615}}',
    { inputs: [['text_input', [1], bytes('x')]], parameters: { seed: 9007199254740993n, big: 18446744073709551615n }, id: '' },
  ],
];

for (const [name, p, body, want] of MAPPED) {
  test(`generate request: ${name}`, () => {
    const d = decode(p, body);
    assert.deepEqual(
      d.inputs.map((i) => [i.name, i.shape, [...i.data]]),
      want.inputs,
    );
    assert.deepEqual(d.parameters, want.parameters);
    assert.equal(d.id, want.id);
    assert.equal(d.outputs, null, 'every output');
    assert.equal(d.binaryDataOutput, false, 'as JSON');
  });
}

const REFUSED: [string, ValidationPlan, unknown, string, RegExp][] = [
  ['not JSON', LLM, 'text_input=x', 'INVALID_ARG', /^failed to parse the request JSON buffer: .*: the generate request body must be one JSON object$/],
  ['a JSON array', LLM, [1], 'INVALID_ARG', /must be one JSON object, got an array/],
  ['an id that is not a string', LLM, { id: 7 }, 'INVALID_ARG', /^Unable to parse 'id'/],
  ['parameters not an object', LLM, { parameters: 3 }, 'INVALID_ARG', /^Expected JSON object for keyword: 'parameters'/],
  [
    'a parameter that is an array',
    LLM,
    { stop: ['a'] },
    'INVALID_ARG',
    /^parameter 'stop' has invalid type\. It should be either 'int', 'bool', or 'string'\./,
  ],
  ['a parameter that is null', LLM, { parameters: { x: null } }, 'INVALID_ARG', /^parameter 'x' has invalid type/],
  ['a number for BYTES', LLM, { text_input: 5 }, 'INVALID_ARG', /input 'text_input' of model 'm' is BYTES, give a string or an array of strings$/],
  ['a string for BOOL', LLM, { stream: 'yes' }, 'INVALID_ARG', /input 'stream' of model 'm' is BOOL, give true\/false/],
  ['a nested array', BATCHED, { INPUT0: [[1, 2, 3, 4]] }, 'INVALID_ARG', /input 'INPUT0' of model 'm' takes a value or a 1-D array of values/],
  [
    'a count the fixed dims do not divide',
    BATCHED,
    { INPUT0: [1, 2, 3] },
    'INVALID_ARG',
    /^The schema can not convert input 'INPUT0' to tensor with proper shape: 3 element\(s\) do not fill shape \[-1,4\]$/,
  ],
  ['a compressed body', LLM, { text_input: 'x' }, 'INVALID_ARG', /^Unsupported content-encoding, only 'identity' is supported\.$/],
];

for (const [name, p, body, code, message] of REFUSED) {
  test(`generate request refused: ${name}`, () => {
    assert.throws(
      () => decode(p, body, name === 'a compressed body' ? 'gzip' : ''),
      (err: unknown) => {
        const info = toErrorInfo(err);
        assert.equal(info.code, code);
        assert.match(info.message, message);
        return true;
      },
    );
  });
}

const SHAPES: [number[], number, number[] | undefined][] = [
  [[1], 1, [1]],
  [[-1], 5, [5]],
  [[-1, 16], 16, [1, 16]],
  [[-1, -1], 3, [1, 3]],
  [[2, -1], 6, [2, 3]],
  [[4], 3, undefined],
  [[-1, 4], 6, undefined],
];

for (const [dims, count, want] of SHAPES) {
  test(`generate shape: ${count} element(s) into [${dims.join(',')}]`, () => {
    if (want === undefined) assert.throws(() => generateShape('X', dims, count), /The schema can not convert input 'X'/);
    else assert.deepEqual(generateShape('X', dims, count), want);
  });
}
