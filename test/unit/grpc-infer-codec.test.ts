/**
 * The gRPC proto codec, table-driven: ModelInferRequest objects go through
 * the real protobuf encoder and the frontend's real deserializer (our protos
 * via proto-loader), then decodeModelInferRequest; response building puts
 * each output in raw_output_contents.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import protobuf from 'protobufjs';
import { ServerError } from '../../src/core/errors';
import { buildInferResponse, decodeModelInferRequest } from '../../src/frontend/grpc/infer-codec';
import { grpcServiceProtoPath, loadProtos } from '../../src/frontend/grpc/grpc-protos';
import type { ModelInferRequestMsg } from '../../src/frontend/grpc/proto-types';

const root = new protobuf.Root();
root.loadSync(grpcServiceProtoPath(), { keepCase: true });
const RequestType = root.lookupType('inference.ModelInferRequest');

/** Object → wire bytes → the message exactly as the server's handler receives it. */
function wire(obj: Record<string, unknown>): ModelInferRequestMsg {
  const bytes = RequestType.encode(RequestType.fromObject({ model_name: 'm', ...obj })).finish();
  return loadProtos().inference.ModelInfer!.requestDeserialize(Buffer.from(bytes)) as ModelInferRequestMsg;
}

const hex = (u: Uint8Array): string => Buffer.from(u).toString('hex');

const dataCases: { name: string; input: Record<string, unknown>; raw?: Buffer[]; hex: string }[] = [
  { name: 'raw bytes are used as given', input: { datatype: 'UINT8', shape: [3] }, raw: [Buffer.from([1, 2, 3])], hex: '010203' },
  { name: 'INT8 keeps the low byte', input: { datatype: 'INT8', shape: [2], contents: { int_contents: [-1, 258] } }, hex: 'ff02' },
  { name: 'INT16 little-endian', input: { datatype: 'INT16', shape: [2], contents: { int_contents: [-2, 0x1234] } }, hex: 'feff3412' },
  { name: 'INT32', input: { datatype: 'INT32', shape: [1], contents: { int_contents: [-1] } }, hex: 'ffffffff' },
  { name: 'UINT16', input: { datatype: 'UINT16', shape: [1], contents: { uint_contents: [0xabcd] } }, hex: 'cdab' },
  { name: 'INT64 beyond 2^53', input: { datatype: 'INT64', shape: [1], contents: { int64_contents: ['-9007199254740993'] } }, hex: 'ffffffffffffdfff' },
  { name: 'UINT64 max', input: { datatype: 'UINT64', shape: [1], contents: { uint64_contents: ['18446744073709551615'] } }, hex: 'ffffffffffffffff' },
  { name: 'FP32', input: { datatype: 'FP32', shape: [1], contents: { fp32_contents: [1.5] } }, hex: '0000c03f' },
  { name: 'FP64', input: { datatype: 'FP64', shape: [1], contents: { fp64_contents: [-2] } }, hex: '00000000000000c0' },
  { name: 'BOOL', input: { datatype: 'BOOL', shape: [3], contents: { bool_contents: [true, false, true] } }, hex: '010001' },
  {
    name: 'BYTES are length-prefixed',
    input: { datatype: 'BYTES', shape: [2], contents: { bytes_contents: [Buffer.from('ab'), Buffer.alloc(0)] } },
    hex: '020000006162' + '00000000',
  },
];

for (const c of dataCases) {
  test(`input data: ${c.name}`, () => {
    const msg = wire({ inputs: [{ name: 'X', ...c.input }], raw_input_contents: c.raw ?? [] });
    const { decoded } = decodeModelInferRequest(msg, 'm');
    assert.equal(decoded.inputs.length, 1);
    assert.equal(hex(decoded.inputs[0].data), c.hex);
    assert.deepEqual(decoded.inputs[0].shape, (c.input.shape as number[]).map(Number));
  });
}

test('raw_input_contents are consumed in input order; surplus entries are ignored', () => {
  const msg = wire({
    inputs: [
      { name: 'A', datatype: 'UINT8', shape: [1] },
      { name: 'B', datatype: 'UINT8', shape: [1] },
    ],
    raw_input_contents: [Buffer.from([1]), Buffer.from([2]), Buffer.from([3])],
  });
  const { decoded } = decodeModelInferRequest(msg, 'm');
  assert.deepEqual(
    decoded.inputs.map((i) => [i.name, hex(i.data)]),
    [
      ['A', '01'],
      ['B', '02'],
    ],
  );
  assert.equal(decoded.outputs, null, 'no outputs listed = every output');
  assert.equal(decoded.id, '');
});

const errorCases: { name: string; req: Record<string, unknown>; code: string; message: string }[] = [
  {
    name: 'typed field of the wrong type',
    req: { inputs: [{ name: 'X', datatype: 'INT32', shape: [1], contents: { fp32_contents: [1] } }] },
    code: 'INVALID_ARG',
    message: "unexpected explicit tensor data for input tensor 'X' for model 'm' of type 'FP32', expected datatype 'INT32'",
  },
  {
    name: 'two typed fields',
    req: { inputs: [{ name: 'X', datatype: 'INT32', shape: [1], contents: { int_contents: [1], fp32_contents: [1] } }] },
    code: 'INVALID_ARG',
    message: "unexpected explicit tensor data for input tensor 'X' for model 'm', binary data was already supplied.",
  },
  {
    name: 'FP16 has no typed field',
    req: { inputs: [{ name: 'X', datatype: 'FP16', shape: [1], contents: { fp32_contents: [1] } }] },
    code: 'INVALID_ARG',
    message: "unexpected explicit tensor data for input tensor 'X' for model 'm' of type 'FP32', expected datatype 'FP16'",
  },
  {
    name: 'contents together with raw_input_contents',
    req: { inputs: [{ name: 'X', datatype: 'INT32', shape: [1], contents: { int_contents: [1] } }], raw_input_contents: [Buffer.alloc(4)] },
    code: 'INVALID_ARG',
    message: "contents field must not be specified when using raw_input_contents for 'X' for model 'm'",
  },
  {
    name: 'no data for an input',
    req: { inputs: [{ name: 'X', datatype: 'INT32', shape: [1] }] },
    code: 'INVALID_ARG',
    message: "unable to find data for input tensor 'X' for model 'm' in request.",
  },
  {
    name: 'shared memory region (none can be registered)',
    req: {
      inputs: [
        {
          name: 'X',
          datatype: 'INT32',
          shape: [1],
          parameters: {
            shared_memory_region: { string_param: 'r' },
            shared_memory_byte_size: { int64_param: 4 },
          },
        },
      ],
    },
    code: 'NOT_FOUND',
    message: "Unable to find shared memory region: 'r'",
  },
  {
    name: 'shared memory region with contents',
    req: {
      inputs: [
        {
          name: 'X',
          datatype: 'INT32',
          shape: [1],
          contents: { int_contents: [1] },
          parameters: {
            shared_memory_region: { string_param: 'r' },
            shared_memory_byte_size: { int64_param: 4 },
          },
        },
      ],
    },
    code: 'INVALID_ARG',
    message: "unexpected 'content' provided when using shared memory for input tensor 'X' for model 'm'",
  },
  {
    name: 'shared memory offset without region',
    req: { inputs: [{ name: 'X', datatype: 'INT32', shape: [1], parameters: { shared_memory_offset: { int64_param: 0 } } }] },
    code: 'INVALID_ARG',
    message: "'shared_memory_offset' can not be specified without 'shared_memory_region' parameter for tensor 'X'",
  },
  {
    name: 'sequence_id as uint64',
    req: { parameters: { sequence_id: { uint64_param: 1 } } },
    code: 'INVALID_ARG',
    message: "invalid value type for 'sequence_id' parameter, expected int64_param or string_param.",
  },
  {
    name: 'sequence_start not bool',
    req: { parameters: { sequence_start: { int64_param: 1 } } },
    code: 'INVALID_ARG',
    message: "invalid value type for 'sequence_start' parameter, expected bool_param.",
  },
  {
    name: 'negative int64 priority',
    req: { parameters: { priority: { int64_param: -1 } } },
    code: 'INVALID_ARG',
    message: "invalid value for 'priority', expected value >= 0.",
  },
  {
    name: 'timeout not int64',
    req: { parameters: { timeout: { uint64_param: 5 } } },
    code: 'INVALID_ARG',
    message: "invalid value type for 'timeout' parameter, expected int64_param.",
  },
  {
    name: 'reserved triton_ key',
    req: { parameters: { triton_x: { bool_param: true } } },
    code: 'INVALID_ARG',
    message:
      "parameter keys starting with 'triton_' are reserved for Triton usage. Only the following keys starting with 'triton_' are allowed: triton_enable_empty_final_response",
  },
  {
    name: 'custom uint64 parameter',
    req: { parameters: { k: { uint64_param: 5 } } },
    code: 'INVALID_ARG',
    message: "invalid value type for 'k' parameter, expected int64_param, bool_param, or string_param.",
  },
  {
    name: 'string sequence id over 128 bytes',
    req: { parameters: { sequence_id: { string_param: 'x'.repeat(129) } } },
    code: 'UNSUPPORTED',
    message: 'string correlation ID cannot be longer than 128 characters',
  },
];

for (const c of errorCases) {
  test(`error: ${c.name}`, () => {
    assert.throws(
      () => decodeModelInferRequest(wire(c.req), 'm'),
      (err: ServerError) => {
        assert.equal(err.code, c.code);
        assert.equal(err.message, c.message);
        return true;
      },
    );
  });
}

test('request parameters: reserved keys typed, custom values kept, empty-final flag split off', () => {
  const { decoded, enableEmptyFinalResponse } = decodeModelInferRequest(
    wire({
      id: 'q',
      parameters: {
        sequence_id: { int64_param: 42 },
        sequence_start: { bool_param: true },
        priority: { uint64_param: 3 },
        timeout: { int64_param: 1000 },
        triton_enable_empty_final_response: { bool_param: true },
        binary_data_output: { bool_param: true },
        s: { string_param: 'v' },
        d: { double_param: 0.5 },
        i: { int64_param: -7 },
      },
    }),
    'm',
  );
  assert.equal(decoded.id, 'q');
  assert.deepEqual(decoded.parameters, { sequence_id: 42, sequence_start: true, priority: 3, timeout: 1000, s: 'v', d: 0.5, i: -7 });
  assert.equal(enableEmptyFinalResponse, true);
  const s = decodeModelInferRequest(wire({ parameters: { sequence_id: { string_param: 'abc' } } }), 'm');
  assert.equal(s.decoded.parameters.sequence_id, 'abc');
});

// [sent sequence_id int64_param, the correlation id]: Triton takes the int64's 64 bits as the uint64 id.
const sequenceIdRows: [string, number | bigint][] = [
  ['9007199254740991', 9007199254740991],
  ['9007199254740993', 9007199254740993n],
  ['9223372036854775807', 9223372036854775807n],
  ['-9223372036854775803', 9223372036854775813n], // 2^63+5, as a client must send it
  ['-1', 18446744073709551615n],
];

for (const [sent, id] of sequenceIdRows) {
  test(`sequence_id int64_param ${sent} is correlation id ${id}`, () => {
    assert.equal(decodeModelInferRequest(wire({ parameters: { sequence_id: { int64_param: sent } } }), 'm').decoded.parameters.sequence_id, id);
  });
}

test('custom int64 parameters past 2^53 stay exact; response bigints go out as int64_param text', () => {
  const { decoded } = decodeModelInferRequest(wire({ parameters: { big: { int64_param: '-9223372036854775808' }, small: { int64_param: '5' } } }), 'm');
  assert.deepEqual(decoded.parameters, { big: -9223372036854775808n, small: 5 });
  const r = buildInferResponse({
    id: '',
    modelName: 'm',
    modelVersion: '1',
    parameters: { a: 9223372036854775813n, b: -5n },
    outputs: [],
    requested: null,
    batched: false,
  });
  assert.deepEqual(r.parameters, { a: { int64_param: '9223372036854775813' }, b: { int64_param: '-5' } });
});

test('requested outputs with classification', () => {
  const { decoded } = decodeModelInferRequest(wire({ outputs: [{ name: 'A' }, { name: 'B', parameters: { classification: { int64_param: 2 } } }] }), 'm');
  assert.deepEqual(
    decoded.outputs!.map((o) => [o.name, o.classification]),
    [
      ['A', 0],
      ['B', 2],
    ],
  );
});

test('response: one raw_output_contents entry per output, in order, empty ones included', () => {
  const a = new Uint8Array([1, 0, 0, 0]);
  const r = buildInferResponse({
    id: 'x',
    modelName: 'm',
    modelVersion: '3',
    parameters: { p: 1, q: 'v', b: true, f: 0.25 },
    outputs: [
      { name: 'A', datatype: 'INT32', shape: [1], data: a },
      { name: 'E', datatype: 'FP32', shape: [0], data: new Uint8Array(0) },
    ],
    requested: null,
    batched: false,
  });
  assert.deepEqual(r.outputs, [
    { name: 'A', datatype: 'INT32', shape: [1] },
    { name: 'E', datatype: 'FP32', shape: [0] },
  ]);
  assert.equal(r.raw_output_contents.length, 2);
  assert.equal(r.raw_output_contents[0], a, 'a view, not a copy');
  assert.equal(r.raw_output_contents[1].byteLength, 0);
  assert.deepEqual(r.parameters, { p: { int64_param: 1 }, q: { string_param: 'v' }, b: { bool_param: true }, f: { double_param: 0.25 } });
});

test('response: requested subset and classification as BYTES', () => {
  const scores = new Uint8Array(new Float32Array([0.1, 0.7, 0.2]).buffer);
  const r = buildInferResponse({
    id: '',
    modelName: 'm',
    modelVersion: '1',
    outputs: [
      { name: 'A', datatype: 'INT32', shape: [1], data: new Uint8Array(4) },
      { name: 'S', datatype: 'FP32', shape: [3], data: scores },
    ],
    requested: [{ name: 'S', binary: true, classification: 2, parameters: {} }],
    batched: false,
    labels: () => ['a', 'b', 'c'],
  });
  assert.deepEqual(r.outputs, [{ name: 'S', datatype: 'BYTES', shape: [2] }]);
  const raw = Buffer.from(r.raw_output_contents[0]);
  const first = raw.subarray(4, 4 + raw.readUInt32LE(0)).toString();
  assert.equal(first, '0.700000:1:b');
});
