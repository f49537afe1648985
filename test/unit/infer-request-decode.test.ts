import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ServerError } from '../../src/core/errors';
import type { ErrorCode } from '../../src/core/errors';
import { decodeInferRequest, parseHeaderLength } from '../../src/frontend/http/infer-request-decode';
import { compileValidationPlan } from '../../src/request/validation-plan';
import type { ValidationPlan } from '../../src/request/validation-plan';
import type { ModelConfig } from '../../src/core/model-config';

function plan(name: string, maxBatchSize: number, inputs: [string, string, number[]][]): ValidationPlan {
  return compileValidationPlan({
    name,
    max_batch_size: maxBatchSize,
    input: inputs.map(([n, t, dims]) => ({ name: n, data_type: t, dims, optional: false, is_shape_tensor: false })),
    output: [{ name: 'OUTPUT0', data_type: 'TYPE_INT32', dims: [16] }],
  } as unknown as ModelConfig);
}

const simple = plan('simple', 8, [
  ['INPUT0', 'TYPE_INT32', [16]],
  ['INPUT1', 'TYPE_INT32', [16]],
]);
const single = plan('one', 0, [['X', 'TYPE_FP32', [-1]]]);
const singleBatched = plan('oneb', 4, [['X', 'TYPE_FP32', [2, -1]]]);
const text = plan('text', 0, [['S', 'TYPE_STRING', [1]]]);
const textVar = plan('textv', 0, [['S', 'TYPE_STRING', [-1]]]);
const twoVar = plan('twov', 0, [['X', 'TYPE_FP32', [-1, -1]]]);

const MAX = 64 * 1024 * 1024;

/** A JSON header followed by binary blobs, with its header length. */
function withBinary(header: unknown, ...blobs: Buffer[]): { body: Buffer; headerLength: number } {
  const json = Buffer.from(JSON.stringify(header));
  return { body: Buffer.concat([json, ...blobs]), headerLength: json.length };
}

/** JSON text of `v`, bigints as their exact integer literals. */
function jsonText(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `\u0000${x}\u0000` : x)).replace(/"\\u0000(-?\d+)\\u0000"/g, '$1');
}

function decodeJson(header: unknown, p: ValidationPlan = simple, max = MAX) {
  return decodeInferRequest(Buffer.from(typeof header === 'string' ? header : jsonText(header)), undefined, p, max);
}

function oneInput(datatype: string, shape: number[], data: unknown, extra: Record<string, unknown> = {}) {
  return { inputs: [{ name: 'INPUT0', datatype, shape, data, ...extra }] };
}

test('Appendix A request: binary inputs are views of the body, outputs requested binary', () => {
  const in0 = Buffer.alloc(64);
  const in1 = Buffer.alloc(64);
  for (let i = 0; i < 16; i++) {
    in0.writeInt32LE(i, 4 * i);
    in1.writeInt32LE(1, 4 * i);
  }
  const header =
    '{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}},' +
    '{"name":"INPUT1","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}}],' +
    '"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}},{"name":"OUTPUT1","parameters":{"binary_data":true}}]}';
  assert.equal(header.length, 308);
  const body = Buffer.concat([Buffer.from(header), in0, in1]);
  assert.equal(body.length, 436);
  const headerLength = parseHeaderLength('308', body.length);
  const r = decodeInferRequest(body, headerLength, simple, MAX);
  assert.equal(r.id, '');
  assert.equal(r.binaryDataOutput, false);
  assert.deepEqual(r.parameters, {});
  assert.deepEqual(
    r.inputs.map((i) => [i.name, i.datatype, i.shape]),
    [
      ['INPUT0', 'INT32', [1, 16]],
      ['INPUT1', 'INT32', [1, 16]],
    ],
  );
  assert.deepEqual(Buffer.from(r.inputs[0].data), in0);
  assert.deepEqual(Buffer.from(r.inputs[1].data), in1);
  assert.equal(r.inputs[0].data.buffer, body.buffer); // no copy
  assert.deepEqual(r.outputs, [
    { name: 'OUTPUT0', binary: true, classification: 0, parameters: { binary_data: true } },
    { name: 'OUTPUT1', binary: true, classification: 0, parameters: { binary_data: true } },
  ]);
});

function bytesOf(ctor: { from(a: ArrayLike<number> | ArrayLike<bigint>): ArrayBufferView }, values: unknown[]): number[] {
  const v = ctor.from(values as ArrayLike<number>);
  return [...new Uint8Array(v.buffer, v.byteOffset, v.byteLength)];
}

const dataRows: { name: string; datatype: string; shape: number[]; data: unknown; bytes: number[] }[] = [
  {
    name: 'INT32 nested',
    datatype: 'INT32',
    shape: [2, 2],
    data: [
      [1, -2],
      [3, 2147483648],
    ],
    bytes: bytesOf(Int32Array, [1, -2, 3, -2147483648]),
  },
  { name: 'INT8 truncates', datatype: 'INT8', shape: [3], data: [127, 128, -129], bytes: [127, 128, 127] },
  { name: 'UINT16 truncates', datatype: 'UINT16', shape: [2], data: [65535, 65537], bytes: bytesOf(Uint16Array, [65535, 1]) },
  { name: 'UINT32', datatype: 'UINT32', shape: [1], data: [4294967295], bytes: [255, 255, 255, 255] },
  {
    name: 'INT64',
    datatype: 'INT64',
    shape: [3],
    data: [-1, 9007199254740991, -9007199254740991],
    bytes: bytesOf(BigInt64Array, [-1n, 9007199254740991n, -9007199254740991n]),
  },
  {
    name: 'INT64 max/min',
    datatype: 'INT64',
    shape: [2],
    data: [9223372036854775807n, -9223372036854775808n],
    bytes: bytesOf(BigInt64Array, [9223372036854775807n, -9223372036854775808n]),
  },
  {
    name: 'UINT64 max',
    datatype: 'UINT64',
    shape: [2],
    data: [18446744073709551615n, 4294967296],
    bytes: bytesOf(BigUint64Array, [18446744073709551615n, 4294967296n]),
  },
  { name: 'FP32 from doubles and ints', datatype: 'FP32', shape: [3], data: [0.1, 2, -1.5e-3], bytes: bytesOf(Float32Array, [0.1, 2, -1.5e-3]) },
  { name: 'FP64', datatype: 'FP64', shape: [2], data: [0.1, -3], bytes: bytesOf(Float64Array, [0.1, -3]) },
  { name: 'BOOL', datatype: 'BOOL', shape: [3], data: [true, false, true], bytes: [1, 0, 1] },
  {
    name: 'BYTES (Appendix A serialisation)',
    datatype: 'BYTES',
    shape: [3],
    data: ['hello', '', 'abc'],
    bytes: [...Buffer.from('0500000068656c6c6f0000000003000000616263', 'hex')],
  },
  { name: 'BYTES UTF-8', datatype: 'BYTES', shape: [1], data: [['é']], bytes: [2, 0, 0, 0, 0xc3, 0xa9] },
  { name: 'zero-size shape ignores data', datatype: 'FP32', shape: [0, 3], data: 'not even an array', bytes: [] },
];

for (const row of dataRows) {
  test(`JSON data → bytes: ${row.name}`, () => {
    const r = decodeJson(oneInput(row.datatype, row.shape, row.data));
    assert.deepEqual([...r.inputs[0].data], row.bytes);
    assert.deepEqual(r.inputs[0].shape, row.shape);
  });
}

test('doubles are fine where they belong: FP32 data 1.0 and 1e2 beside INT32 data, a "1.5" in a BYTES element, 2.5 in a parameter', () => {
  const r = decodeJson(
    '{"id":"1.0e5","parameters":{"p":2.5},"inputs":[{"name":"A","datatype":"FP32","shape":[2],"data":[1.0,1e2]},' +
      '{"name":"B","datatype":"INT32","shape":[2],"data":[7,-8]},{"name":"C","datatype":"BYTES","shape":[1],"data":["1.5"]}]}',
  );
  assert.deepEqual([...new Float32Array(r.inputs[0].data.slice().buffer)], [1, 100]);
  assert.deepEqual([...new Int32Array(r.inputs[1].data.slice().buffer)], [7, -8]);
  assert.equal(Buffer.from(r.inputs[2].data).subarray(4).toString(), '1.5');
  assert.equal(r.parameters.p, 2.5);
});

test('bare NaN / Infinity in FP32 data (rapidjson accepts them)', () => {
  const r = decodeJson('{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[4],"data":[NaN,Infinity,-Infinity,-Inf]}]}');
  const f = new Float32Array(r.inputs[0].data.buffer, r.inputs[0].data.byteOffset, 4);
  assert.ok(Number.isNaN(f[0]));
  assert.deepEqual([...f.subarray(1)], [Infinity, -Infinity, -Infinity]);
});

test('the rapidjson-compatible fallback: UTF-8 BOM, "__proto__" keys', () => {
  const r = decodeInferRequest(Buffer.from('\ufeff{"id":"b","inputs":[]}'), undefined, simple, MAX);
  assert.equal(r.id, 'b');
  const p = decodeJson('{"__proto__":{"x":1},"inputs":[{"name":"INPUT0","datatype":"FP64","shape":[1],"data":[NaN]}]}');
  assert.equal(p.inputs.length, 1);
  assert.equal(Object.getPrototypeOf({}), Object.prototype);
});

test('request parameters: reserved, custom, binary_data_output, id', () => {
  const r = decodeJson({
    id: 'abc',
    model_name: 'ignored',
    parameters: {
      sequence_id: 7,
      sequence_start: true,
      sequence_end: false,
      priority: 1,
      timeout: 100,
      binary_data_output: true,
      custom: 'x',
      n: -3,
      f: 1.5,
      b: false,
      headers: 'h',
    },
    inputs: [],
  });
  assert.equal(r.id, 'abc');
  assert.equal(r.binaryDataOutput, true);
  assert.deepEqual(r.parameters, {
    sequence_id: 7,
    sequence_start: true,
    sequence_end: false,
    priority: 1,
    timeout: 100,
    custom: 'x',
    n: -3,
    f: 1.5,
    b: false,
    headers: 'h',
  });
  assert.equal(r.outputs, null);
  assert.deepEqual(decodeJson({ parameters: { sequence_id: 'seq-1' }, inputs: [] }).parameters, { sequence_id: 'seq-1' });
});

test('outputs: classification, JSON default, empty list = all outputs', () => {
  const r = decodeJson({
    inputs: [],
    outputs: [{ name: 'A', parameters: { classification: 3 } }, { name: 'B' }, { name: 'C', parameters: { binary_data: false, shared_memory_byte_size: 4 } }],
  });
  assert.deepEqual(r.outputs, [
    { name: 'A', binary: undefined, classification: 3, parameters: { classification: 3 } },
    { name: 'B', binary: undefined, classification: 0, parameters: {} },
    { name: 'C', binary: false, classification: 0, parameters: { binary_data: false, shared_memory_byte_size: 4 } },
  ]);
  assert.equal(decodeJson({ inputs: [], outputs: [] }).outputs, null);
});

test('binary_data_size 0 is an empty tensor and consumes nothing', () => {
  const { body, headerLength } = withBinary(oneInput('FP32', [0], undefined, { data: undefined, parameters: { binary_data_size: 0 } }));
  assert.equal(decodeInferRequest(body, headerLength, simple, MAX).inputs[0].data.byteLength, 0);
});

test('nesting depth 100 is accepted', () => {
  let data: unknown = 5;
  for (let i = 0; i < 100; i++) data = [data];
  assert.deepEqual([...decodeJson(oneInput('UINT8', [1], data)).inputs[0].data], [5]);
});

test('raw binary request (Inference-Header-Content-Length: 0)', () => {
  const body = Buffer.from(new Float32Array([1, 2, 3]).buffer);
  const r = decodeInferRequest(body, 0, single, MAX);
  assert.deepEqual(r, {
    id: '',
    inputs: [{ name: 'X', datatype: 'FP32', shape: [3], data: body, parameters: {} }],
    outputs: null,
    parameters: {},
    binaryDataOutput: true,
  });
  const b = decodeInferRequest(Buffer.alloc(32), 0, singleBatched, MAX);
  assert.deepEqual(b.inputs[0].shape, [1, 2, 4]);
  const s = decodeInferRequest(Buffer.from('hey'), 0, text, MAX);
  assert.deepEqual([...s.inputs[0].data], [3, 0, 0, 0, 104, 101, 121]);
  assert.deepEqual(s.inputs[0].shape, [1]);
});

test('parseHeaderLength', () => {
  assert.equal(parseHeaderLength(undefined, 10), undefined);
  assert.equal(parseHeaderLength('10', 10), 10);
  assert.equal(parseHeaderLength(' 7xyz', 10), 7);
  assert.equal(parseHeaderLength('0', 10), 0);
  const cases: [string, number, string][] = [
    ['abc', 10, 'Unable to parse Inference-Header-Content-Length, got: abc'],
    ['99999999999', 10, 'Unable to parse Inference-Header-Content-Length, got: 99999999999'],
    ['-1', 10, 'inference header size should be in range (0, 10), got: -1'],
    ['11', 10, 'inference header size should be in range (0, 10), got: 11'],
  ];
  for (const [v, len, message] of cases) {
    assert.throws(
      () => parseHeaderLength(v, len),
      (e: unknown) => e instanceof ServerError && e.code === 'INVALID_ARG' && e.message === message,
    );
  }
});

type ErrorRow = { name: string; body: string | Buffer; headerLength?: number; plan?: ValidationPlan; max?: number; code: ErrorCode; message: string };

const J = (v: unknown) => JSON.stringify(v);
const P = 'failed to parse the request JSON buffer: ';
const bin = withBinary(oneInput('INT32', [1, 16], undefined, { data: undefined, parameters: { binary_data_size: 64 } }), Buffer.alloc(54));
const extra = withBinary(oneInput('INT32', [1, 16], undefined, { data: undefined, parameters: { binary_data_size: 4 } }), Buffer.alloc(6));
let deep: unknown = 1;
for (let i = 0; i < 101; i++) deep = [deep];

const errorRows: ErrorRow[] = [
  // JSON syntax: rapidjson's message and byte offset
  { name: 'empty document', body: '   ', code: 'INTERNAL', message: `${P}The document is empty. at 3` },
  { name: 'invalid value', body: '{"inputs":[}', code: 'INTERNAL', message: `${P}Invalid value. at 11` },
  { name: 'bad literal', body: '{"inputs":nul}', code: 'INTERNAL', message: `${P}Invalid value. at 13` },
  { name: 'trailing value', body: '{"inputs":[]} x', code: 'INTERNAL', message: `${P}The document root must not be followed by other values. at 14` },
  { name: 'missing colon', body: '{"a" 1}', code: 'INTERNAL', message: `${P}Missing a colon after a name of object member. at 5` },
  { name: 'trailing comma in object', body: '{"a":1,}', code: 'INTERNAL', message: `${P}Missing a name for object member. at 7` },
  { name: 'missing comma in object', body: '{"a":1 "b":2}', code: 'INTERNAL', message: `${P}Missing a comma or '}' after an object member. at 7` },
  { name: 'missing comma in array', body: '[1 2]', code: 'INTERNAL', message: `${P}Missing a comma or ']' after an array element. at 3` },
  { name: 'unterminated string', body: '{"a', code: 'INTERNAL', message: `${P}Missing a closing quotation mark in string. at 3` },
  { name: 'bad escape', body: '{"a\\x":1}', code: 'INTERNAL', message: `${P}Invalid escape character in string. at 3` },
  { name: 'bad hex escape', body: '{"\\u12g4":1}', code: 'INTERNAL', message: `${P}Incorrect hex digit after \\u escape in string. at 2` },
  { name: 'missing fraction', body: '[1.]', code: 'INTERNAL', message: `${P}Miss fraction part in number. at 3` },
  { name: 'missing exponent', body: '[1e+]', code: 'INTERNAL', message: `${P}Miss exponent in number. at 4` },
  { name: 'byte offsets count UTF-8 bytes', body: '{"é":[1,,]}', code: 'INTERNAL', message: `${P}Invalid value. at 9` },
  {
    name: 'binary bytes without the header length',
    body: Buffer.concat([Buffer.from('{"inputs":[]}'), Buffer.from([1, 2])]),
    code: 'INTERNAL',
    message: `${P}The document root must not be followed by other values. at 13`,
  },
  {
    name: 'empty body without header length is a raw request',
    body: '',
    code: 'INVALID_ARG',
    message: "[request id: <id_unknown>] Raw request must only have 1 input (found 1) to be deduced but got 2 inputs in 'simple' model configuration",
  },
  {
    name: 'header JSON above the limit',
    body: J({ inputs: [] }),
    max: 5,
    code: 'INVALID_ARG',
    message: 'request JSON size of 13 bytes exceeds the maximum allowed input size of 5 bytes. Use --http-max-input-size to increase the limit.',
  },
  {
    name: 'header length beyond the body',
    body: '{}',
    headerLength: 5,
    code: 'INVALID_ARG',
    message: 'unexpected size for request JSON, expecting 3 more bytes',
  },
  // id, parameters
  { name: 'non-string id', body: J({ id: 1, inputs: [] }), code: 'INTERNAL', message: "Unable to parse 'id': attempt to access JSON non-string as string" },
  {
    name: 'parameters not an object',
    body: J({ parameters: [], inputs: [] }),
    code: 'INTERNAL',
    message: 'failed to get request params.: attempt to get members for non-object',
  },
  {
    name: 'sequence_start type',
    body: J({ parameters: { sequence_start: 1 }, inputs: [] }),
    code: 'INTERNAL',
    message: "Unable to parse 'sequence_start': attempt to access JSON non-boolean as boolean",
  },
  {
    name: 'priority type',
    body: J({ parameters: { priority: -1 }, inputs: [] }),
    code: 'INTERNAL',
    message: "Unable to parse 'priority': attempt to access JSON non-unsigned-integer as unsigned-integer",
  },
  {
    name: 'timeout type',
    body: J({ parameters: { timeout: '5' }, inputs: [] }),
    code: 'INTERNAL',
    message: "Unable to parse 'timeout': attempt to access JSON non-unsigned-integer as unsigned-integer",
  },
  {
    name: 'binary_data_output type',
    body: J({ parameters: { binary_data_output: 'yes' }, inputs: [] }),
    code: 'INTERNAL',
    message: "Unable to parse 'binary_data_output': attempt to access JSON non-boolean as boolean",
  },
  {
    name: 'sequence_id type',
    body: J({ parameters: { sequence_id: -4 }, inputs: [] }),
    code: 'INTERNAL',
    message: "Unable to parse 'sequence_id': attempt to access JSON non-string as string",
  },
  {
    name: 'sequence_id too long',
    body: J({ parameters: { sequence_id: 'x'.repeat(129) }, inputs: [] }),
    code: 'UNSUPPORTED',
    message: 'string correlation ID cannot be longer than 128 characters',
  },
  {
    name: 'triton_ prefix',
    body: J({ parameters: { triton_x: 1 }, inputs: [] }),
    code: 'INVALID_ARG',
    message: "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.",
  },
  {
    name: 'custom parameter type',
    body: J({ parameters: { c: [1] }, inputs: [] }),
    code: 'INVALID_ARG',
    message: "parameter 'c' has invalid type. It should be either 'int', 'bool', or 'string'.",
  },
  {
    name: 'custom parameter null',
    body: J({ parameters: { c: null }, inputs: [] }),
    code: 'INVALID_ARG',
    message: "parameter 'c' has invalid type. It should be either 'int', 'bool', or 'string'.",
  },
  // inputs
  { name: 'no inputs member', body: J({}), code: 'INTERNAL', message: "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'" },
  { name: 'root not an object', body: '[]', code: 'INTERNAL', message: "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'" },
  { name: 'inputs not an array', body: J({ inputs: {} }), code: 'INTERNAL', message: "Unable to parse 'inputs': attempt to access JSON non-array as array" },
  {
    name: 'no data source',
    body: J({ inputs: [{ name: 'INPUT0' }] }),
    code: 'INVALID_ARG',
    message:
      "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But no field is set",
  },
  {
    name: 'two data sources',
    body: J(oneInput('INT32', [1], [1], { parameters: { binary_data_size: 4, shared_memory_region: 'r' } })),
    code: 'INVALID_ARG',
    message:
      "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But set 'data' 'binary_data_size' 'shared_memory_region'",
  },
  {
    name: 'input not an object',
    body: J({ inputs: [1] }),
    code: 'INVALID_ARG',
    message:
      "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But no field is set",
  },
  {
    name: 'missing name',
    body: J({ inputs: [{ datatype: 'INT32', shape: [1], data: [1] }] }),
    code: 'INTERNAL',
    message: "Unable to parse 'name': attempt to access non-existing object member 'name'",
  },
  {
    name: 'datatype not a string',
    body: J({ inputs: [{ name: 'INPUT0', datatype: 5, shape: [1], data: [1] }] }),
    code: 'INTERNAL',
    message: "Unable to parse 'datatype': attempt to access JSON non-string as string",
  },
  {
    name: 'missing shape',
    body: J({ inputs: [{ name: 'INPUT0', datatype: 'INT32', data: [1] }] }),
    code: 'INTERNAL',
    message: "Unable to parse 'shape': attempt to access non-existing object member 'shape'",
  },
  {
    name: 'negative dimension',
    body: J(oneInput('INT32', [2, -5], [1])),
    code: 'INTERNAL',
    message: "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer",
  },
  {
    name: 'duplicate input',
    body: J({
      id: '9',
      inputs: [
        { name: 'A', datatype: 'INT32', shape: [1], data: [1] },
        { name: 'A', datatype: 'INT32', shape: [1], data: [1] },
      ],
    }),
    code: 'INVALID_ARG',
    message: "[request id: 9] input 'A' already exists in request",
  },
  {
    name: 'binary_data_size type',
    body: J(oneInput('INT32', [1], undefined, { parameters: { binary_data_size: -4 } })),
    code: 'INTERNAL',
    message: "Unable to parse 'binary_data_size': attempt to access JSON non-unsigned-integer as unsigned-integer",
  },
  {
    name: 'binary data short',
    body: bin.body,
    headerLength: bin.headerLength,
    code: 'INVALID_ARG',
    message: "unexpected size for input 'INPUT0', expecting 10 additional bytes for model 'simple'",
  },
  {
    name: 'binary data left over',
    body: extra.body,
    headerLength: extra.headerLength,
    code: 'INVALID_ARG',
    message: "unexpected additional input data for model 'simple'",
  },
  {
    name: 'shared memory input',
    body: J(oneInput('INT32', [1], undefined, { parameters: { shared_memory_region: 'reg', shared_memory_byte_size: 4 } })),
    code: 'NOT_FOUND',
    message: "Unable to find shared memory region: 'reg'",
  },
  {
    name: 'shared memory region type',
    body: J(oneInput('INT32', [1], undefined, { parameters: { shared_memory_region: 3 } })),
    code: 'INTERNAL',
    message: "Unable to parse 'shared_memory_region': attempt to access JSON non-string as string",
  },
  {
    name: 'data not an array',
    body: J(oneInput('INT32', [1], 5)),
    code: 'INTERNAL',
    message: "Unable to parse 'data': attempt to access JSON non-array as array",
  },
  {
    name: 'FP16 as JSON',
    body: J(oneInput('FP16', [1], [1])),
    code: 'INVALID_ARG',
    message: 'receiving FP16 data via JSON is not supported. Please use the binary data format for input INPUT0',
  },
  {
    name: 'BF16 as JSON',
    body: J(oneInput('BF16', [1], [1])),
    code: 'INVALID_ARG',
    message: 'receiving BF16 data via JSON is not supported. Please use the binary data format for input INPUT0',
  },
  {
    name: 'unknown datatype',
    body: J(oneInput('FLOAT', [1], [1])),
    code: 'INVALID_ARG',
    message: "invalid datatype for input INPUT0. 'FLOAT' is not a protocol datatype; in a request write 'FP32'.",
  },
  {
    name: 'config spelling of a datatype',
    body: J(oneInput('TYPE_FP32', [1], [1])),
    code: 'INVALID_ARG',
    message: "invalid datatype for input INPUT0. 'TYPE_FP32' is how config.pbtxt spells it; in a request write 'FP32'.",
  },
  {
    name: 'no such datatype',
    body: J(oneInput('QUUX', [1], [1])),
    code: 'INVALID_ARG',
    message:
      "invalid datatype for input INPUT0. 'QUUX' is not a datatype; use one of BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, FP32, FP64, BYTES, BF16.",
  },
  {
    name: 'too many elements',
    body: J(oneInput('INT32', [2], [1, 2, 3])),
    code: 'INTERNAL',
    message: "Unable to parse 'data': Shape does not match true shape of 'data' field",
  },
  {
    name: 'too few elements',
    body: J(oneInput('INT32', [2, 2], [[1, 2], [3]])),
    code: 'INTERNAL',
    message: "Failed to parse 'data' field: shape does not match true shape",
  },
  {
    name: 'INT32 element 1.5',
    body: J(oneInput('INT32', [1], [1.5])),
    code: 'INTERNAL',
    message: "Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer",
  },
  // Written as doubles (Triton's rapidjson holds them so): no integer, whatever their value.
  {
    name: 'INT32 element 1.0',
    body: '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[2],"data":[3,1.0]}]}',
    code: 'INTERNAL',
    message: "Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer",
  },
  {
    name: 'INT64 element 1e2',
    body: '{"inputs":[{"name":"INPUT0","datatype":"INT64","shape":[1],"data":[[1e2]]}]}',
    code: 'INTERNAL',
    message: "Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer",
  },
  {
    name: 'UINT16 element 2E0',
    body: '{"inputs":[{"name":"INPUT0","datatype":"UINT16","shape":[1],"data":[2E0]}]}',
    code: 'INTERNAL',
    message: "Unable to parse 'data': attempt to access JSON non-unsigned-integer as unsigned-integer",
  },
  {
    name: 'UINT8 element -1',
    body: J(oneInput('UINT8', [1], [-1])),
    code: 'INTERNAL',
    message: "Unable to parse 'data': attempt to access JSON non-unsigned-integer as unsigned-integer",
  },
  {
    name: 'BOOL element 1',
    body: J(oneInput('BOOL', [1], [1])),
    code: 'INTERNAL',
    message: "Unable to parse 'data': attempt to access JSON non-boolean as boolean",
  },
  {
    name: 'FP32 element string',
    body: J(oneInput('FP32', [1], ['1'])),
    code: 'INTERNAL',
    message: "Unable to parse 'data': attempt to access JSON non-number as double",
  },
  {
    name: 'BYTES element number',
    body: J(oneInput('BYTES', [1], [1])),
    code: 'INTERNAL',
    message: "Unable to parse 'data': attempt to access JSON non-string as string",
  },
  { name: 'nesting depth 101', body: J(oneInput('UINT8', [1], deep)), code: 'INVALID_ARG', message: 'JSON nesting depth exceeds maximum allowed limit (100)' },
  {
    name: 'JSON input above the limit',
    body: J(oneInput('FP64', [20], new Array(20).fill(0))),
    max: 120,
    code: 'INVALID_ARG',
    message:
      "JSON input 'INPUT0' has a byte_size (160 bytes) that exceeds the maximum allowed value of 120 bytes. Use --http-max-input-size to increase the limit.",
  },
  {
    name: 'element count overflow',
    body: J(oneInput('FP32', [16, 2 ** 60 + 2], [1])),
    code: 'INVALID_ARG',
    message: "shape [16,1152921504606847000] of input 'INPUT0' causes total element count to exceed maximum size of 9223372036854775807",
  },
  { name: 'byte size overflow', body: J(oneInput('FP32', [4, 2 ** 60 + 2], [1])), code: 'INVALID_ARG', message: "byte size overflow for input 'INPUT0'" },
  // outputs
  {
    name: 'outputs not an array',
    body: J({ inputs: [], outputs: 1 }),
    code: 'INTERNAL',
    message: "Unable to parse 'outputs': attempt to access JSON non-array as array",
  },
  {
    name: 'output shm + classification',
    body: J({ inputs: [], outputs: [{ name: 'O', parameters: { shared_memory_region: 'r', classification: 2 } }] }),
    code: 'INVALID_ARG',
    message: "Output can't set both 'shared_memory_region' and 'classification'",
  },
  {
    name: 'output shm + binary_data',
    body: J({ inputs: [], outputs: [{ name: 'O', parameters: { shared_memory_region: 'r', binary_data: true } }] }),
    code: 'INVALID_ARG',
    message: "Output can't set both 'shared_memory_region' and 'binary_data'",
  },
  {
    name: 'output shm + binary_data type',
    body: J({ inputs: [], outputs: [{ name: 'O', parameters: { shared_memory_region: 'r', binary_data: 1 } }] }),
    code: 'INTERNAL',
    message: "Unable to set 'binary_data': attempt to access JSON non-boolean as boolean",
  },
  {
    name: 'output shm region',
    body: J({ inputs: [], outputs: [{ name: 'O', parameters: { shared_memory_region: 'r', binary_data: false } }] }),
    code: 'NOT_FOUND',
    message: "Unable to find shared memory region: 'r'",
  },
  {
    name: 'output name missing',
    body: J({ inputs: [], outputs: [{}] }),
    code: 'INTERNAL',
    message: "Unable to parse 'name': attempt to access non-existing object member 'name'",
  },
  {
    name: 'duplicate output',
    body: J({ inputs: [], outputs: [{ name: 'O' }, { name: 'O' }] }),
    code: 'INVALID_ARG',
    message: "[request id: <id_unknown>] output 'O' already exists in request",
  },
  {
    name: 'classification type',
    body: J({ inputs: [], outputs: [{ name: 'O', parameters: { classification: -1 } }] }),
    code: 'INTERNAL',
    message: "Unable to set 'classification': attempt to access JSON non-unsigned-integer as unsigned-integer",
  },
  {
    name: 'binary_data type',
    body: J({ inputs: [], outputs: [{ name: 'O', parameters: { binary_data: 'true' } }] }),
    code: 'INTERNAL',
    message: "Unable to parse 'binary_data': attempt to access JSON non-boolean as boolean",
  },
  // raw binary requests
  {
    name: 'raw: above the limit',
    body: Buffer.alloc(9),
    headerLength: 0,
    plan: single,
    max: 8,
    code: 'INVALID_ARG',
    message: 'Raw input has a byte_size (9 bytes) that exceeds the maximum allowed value of 8 bytes. Use --http-max-input-size to increase the limit.',
  },
  {
    name: 'raw: two variable dims',
    body: Buffer.alloc(8),
    headerLength: 0,
    plan: twoVar,
    code: 'INVALID_ARG',
    message: "[request id: <id_unknown>] The shape of the raw input 'X' can not be deduced because there are more than one variable-sized dimension",
  },
  {
    name: 'raw: BYTES needs shape [1]',
    body: Buffer.alloc(8),
    headerLength: 0,
    plan: textVar,
    code: 'INVALID_ARG',
    message: "[request id: <id_unknown>] For BYTE datatype raw input 'S', the model must have input shape [1]",
  },
];

for (const row of errorRows) {
  test(`decodeInferRequest rejects: ${row.name}`, () => {
    const body = typeof row.body === 'string' ? Buffer.from(row.body) : row.body;
    assert.throws(
      () => decodeInferRequest(body, row.headerLength, row.plan ?? simple, row.max ?? MAX),
      (e: unknown) => {
        assert.ok(e instanceof ServerError, String(e));
        assert.equal(e.message, row.message);
        assert.equal(e.code, row.code);
        return true;
      },
    );
  });
}
