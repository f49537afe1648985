/**
 * The hand-rolled inference wire codec against protobufjs, table-driven:
 * every request decodes to exactly what @grpc/proto-loader (LOADER_OPTIONS)
 * produces from the same bytes; every response encodes to bytes that
 * protobufjs decodes to what it decodes from its own encoding.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { grpcServiceProtoPath, LOADER_OPTIONS } from '../../src/frontend/grpc/grpc-protos';
import { decodeModelInferRequestBytes } from '../../src/frontend/grpc/infer-request-wire';
import { encodeModelInferResponseBytes, encodeModelStreamInferResponseBytes } from '../../src/frontend/grpc/infer-response-wire';
import type { ModelInferRequestMsg, ModelInferResponseOut, ModelStreamInferResponseOut } from '../../src/frontend/grpc/proto-types';
import { protoDir } from '../../src/repository/config/schema';

const root = new protobuf.Root();
root.loadSync(grpcServiceProtoPath(), { keepCase: true });
const RequestType = root.lookupType('inference.ModelInferRequest');
const ResponseType = root.lookupType('inference.ModelInferResponse');
const StreamType = root.lookupType('inference.ModelStreamInferResponse');

const pkg = protoLoader.loadSync(grpcServiceProtoPath(), { ...LOADER_OPTIONS, includeDirs: [protoDir()] });
const service = pkg['inference.GRPCInferenceService'] as Record<string, { requestDeserialize: (b: Buffer) => unknown }>;
/** Triton's serialized BYTES layout of these elements: a 4-byte little-endian length before each. */
function serializedBytes(elements: readonly Uint8Array[]): Buffer {
  return Buffer.concat(
    elements.flatMap((e) => {
      const len = Buffer.alloc(4);
      len.writeUInt32LE(e.byteLength);
      return [len, Buffer.from(e)];
    }),
  );
}

/**
 * What the server received before the hand-rolled decoder: proto-loader's
 * deserializer, with bytes_contents moved into bytes_serialized as our
 * decoder gives them (infer-request-wire.ts, its one difference in shape).
 */
const loaderDecode = (b: Buffer): unknown => {
  const msg = service.ModelInfer.requestDeserialize(b) as ModelInferRequestMsg;
  for (const t of msg.inputs) {
    const c = t.contents;
    if (c === null || c.bytes_contents.length === 0) continue;
    c.bytes_serialized = { data: serializedBytes(c.bytes_contents), count: c.bytes_contents.length };
    c.bytes_contents = [];
  }
  return msg;
};

const encodeReq = (obj: Record<string, unknown>): Buffer => Buffer.from(RequestType.encode(RequestType.fromObject(obj)).finish());

const decodeCases: { name: string; obj: Record<string, unknown> }[] = [
  { name: 'empty message', obj: {} },
  { name: 'names and id', obj: { model_name: 'simple', model_version: '3', id: 'req-1' } },
  { name: 'non-ASCII strings', obj: { model_name: 'modèle', id: '識別子 🚀' } },
  { name: 'long strings', obj: { model_name: 'm'.repeat(300), id: 'x'.repeat(20000) } },
  {
    name: 'simple-style request',
    obj: {
      model_name: 'simple',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
      ],
      outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT1' }],
      raw_input_contents: [Buffer.alloc(64, 1), Buffer.alloc(64, 2)],
    },
  },
  { name: 'empty raw entries', obj: { raw_input_contents: [Buffer.alloc(0), Buffer.from([7]), Buffer.alloc(0)] } },
  { name: 'large raw entry', obj: { raw_input_contents: [Buffer.alloc(300000, 9)] } },
  {
    name: 'request parameters, every kind',
    obj: {
      parameters: {
        b_true: { bool_param: true },
        b_false: { bool_param: false },
        i_zero: { int64_param: 0 },
        i_small: { int64_param: 42 },
        i_neg: { int64_param: -7 },
        i_big: { int64_param: '9223372036854775807' },
        i_min: { int64_param: '-9223372036854775808' },
        i_past_53: { int64_param: '9007199254740993' },
        i_neg_past_53: { int64_param: '-9007199254740993' },
        i_2_32: { int64_param: '4294967296' },
        i_neg_2_32: { int64_param: '-4294967296' },
        s: { string_param: 'v' },
        s_empty: { string_param: '' },
        d: { double_param: 0.25 },
        d_neg: { double_param: -1e300 },
        u_max: { uint64_param: '18446744073709551615' },
        u_small: { uint64_param: 5 },
        u_2_63: { uint64_param: '9223372036854775808' },
        none: {},
        '': { bool_param: true },
      },
    },
  },
  {
    name: 'tensor parameters and shapes',
    obj: {
      inputs: [
        {
          name: 'X',
          datatype: 'FP32',
          shape: [0, -1, 3, '4294967297', '-9223372036854775808'],
          parameters: { shared_memory_region: { string_param: 'r' }, shared_memory_byte_size: { int64_param: 16 }, shared_memory_offset: { int64_param: 0 } },
        },
        { name: 'Y' },
      ],
      outputs: [{ name: 'O', parameters: { classification: { int64_param: 3 }, binary_data: { bool_param: true } } }, {}],
    },
  },
  {
    name: 'typed contents, every field',
    obj: {
      inputs: [
        {
          name: 'T',
          datatype: 'INT32',
          shape: [2],
          contents: {
            bool_contents: [true, false, true],
            int_contents: [0, -1, 2147483647, -2147483648],
            int64_contents: [0, -1, '9223372036854775807', '-9223372036854775808', '123456789012'],
            uint_contents: [0, 4294967295, 7],
            uint64_contents: [0, '18446744073709551615', 99],
            fp32_contents: [1.5, -0, 3.4e38, 1e-45],
            fp64_contents: [Math.PI, -2, 5e-324],
            bytes_contents: [Buffer.from('ab'), Buffer.alloc(0), Buffer.from([0, 255])],
          },
        },
      ],
    },
  },
  { name: 'contents present but empty', obj: { inputs: [{ name: 'E', contents: {} }] } },
  { name: 'many inputs', obj: { inputs: Array.from({ length: 50 }, (_, k) => ({ name: `I${k}`, datatype: 'UINT8', shape: [k] })) } },
];

for (const c of decodeCases) {
  test(`decode matches proto-loader: ${c.name}`, () => {
    const bytes = encodeReq(c.obj);
    assert.deepStrictEqual(decodeModelInferRequestBytes(bytes), loaderDecode(bytes));
  });
}

/** Hand-built bytes protobufjs' encoder does not produce (unpacked repeats, unknown fields, repeated keys). */
type W = protobuf.Writer;
const craft = (build: (w: W) => void): Buffer => {
  const w = protobuf.Writer.create();
  build(w);
  return Buffer.from(w.finish());
};
const tag = (w: W, field: number, wire: number): W => w.uint32((field << 3) | wire);

const craftedCases: { name: string; bytes: Buffer }[] = [
  {
    name: 'unpacked shape and contents',
    bytes: craft((w) => {
      tag(w, 5, 2).fork();
      tag(w, 1, 2).string('X');
      tag(w, 3, 0).int64(2);
      tag(w, 3, 0).int64(-3);
      tag(w, 3, 2).fork().int64(4).int64(5).ldelim(); // packed and unpacked mixed
      tag(w, 5, 2).fork();
      tag(w, 1, 0).bool(true);
      tag(w, 2, 0).int32(-5);
      tag(w, 3, 0).int64('-9223372036854775808');
      tag(w, 4, 0).uint32(4000000000);
      tag(w, 5, 0).uint64('18446744073709551615');
      tag(w, 6, 5).float(2.5);
      tag(w, 7, 1).double(-0.5);
      tag(w, 6, 2).fork().float(1).float(2).ldelim();
      w.ldelim();
      w.ldelim();
    }),
  },
  {
    name: 'unknown fields of every wire type, at every level',
    bytes: craft((w) => {
      tag(w, 99, 0).uint64('18446744073709551615');
      tag(w, 100, 1).fixed64(1);
      tag(w, 101, 2).bytes(Buffer.from('junk'));
      tag(w, 102, 5).fixed32(1);
      tag(w, 103, 3);
      tag(w, 1, 0).uint32(1);
      tag(w, 2, 2).string('in group');
      tag(w, 103, 4);
      tag(w, 1, 2).string('m');
      tag(w, 4, 2).fork();
      tag(w, 9, 0).uint32(1);
      tag(w, 1, 2).string('k');
      tag(w, 2, 2).fork();
      tag(w, 7, 2).string('x');
      tag(w, 3, 2).string('v');
      w.ldelim();
      w.ldelim();
      tag(w, 5, 2).fork();
      tag(w, 77, 2).string('?');
      tag(w, 1, 2).string('X');
      tag(w, 5, 2).fork();
      tag(w, 20, 0).uint32(3);
      tag(w, 2, 2).fork().int32(1).ldelim();
      w.ldelim();
      w.ldelim();
      tag(w, 6, 2).fork();
      tag(w, 3, 5).fixed32(0);
      tag(w, 1, 2).string('O');
      w.ldelim();
    }),
  },
  {
    name: 'a repeated map key: the last entry wins',
    bytes: craft((w) => {
      tag(w, 4, 2).fork();
      tag(w, 1, 2).string('k');
      tag(w, 2, 2).fork();
      tag(w, 1, 0).bool(true);
      w.ldelim();
      w.ldelim();
      tag(w, 4, 2).fork();
      tag(w, 1, 2).string('k');
      tag(w, 2, 2).fork();
      tag(w, 3, 2).string('second');
      w.ldelim();
      w.ldelim();
    }),
  },
  {
    name: 'a map entry without a key',
    bytes: craft((w) => {
      tag(w, 4, 2).fork();
      tag(w, 2, 2).fork();
      tag(w, 4, 1).double(1);
      w.ldelim();
      w.ldelim();
    }),
  },
  {
    name: 'a scalar field given twice: the last wins',
    bytes: craft((w) => {
      tag(w, 1, 2).string('first');
      tag(w, 3, 2).string('a');
      tag(w, 1, 2).string('second');
    }),
  },
  {
    name: 'bytes_contents between other fields of the contents, in two inputs, short, long and empty elements',
    bytes: craft((w) => {
      tag(w, 5, 2).fork();
      tag(w, 1, 2).string('S');
      tag(w, 5, 2).fork();
      tag(w, 8, 2).bytes(Buffer.from('é\u0000'));
      tag(w, 99, 2).bytes(Buffer.from('unknown'));
      tag(w, 8, 2).bytes(Buffer.alloc(0));
      tag(w, 2, 0).int32(7);
      tag(w, 8, 2).bytes(Buffer.alloc(1000, 0xfe));
      tag(w, 98, 3);
      tag(w, 8, 2).bytes(Buffer.from('in a group, skipped'));
      tag(w, 98, 4);
      tag(w, 8, 2).bytes(Buffer.from([0, 255, 128]));
      w.ldelim();
      w.ldelim();
      tag(w, 5, 2).fork();
      tag(w, 1, 2).string('T');
      tag(w, 5, 2).fork();
      tag(w, 8, 2).bytes(Buffer.alloc(0));
      w.ldelim();
      w.ldelim();
    }),
  },
  {
    name: 'a non-canonical (over-long) varint tag and length',
    bytes: Buffer.from([0x8a, 0x00, 0x82, 0x80, 0x00, 0x68, 0x69]),
  },
];

for (const c of craftedCases) {
  test(`decode matches proto-loader: ${c.name}`, () => {
    assert.deepStrictEqual(decodeModelInferRequestBytes(c.bytes), loaderDecode(c.bytes));
  });
}

test('raw_input_contents are views into the received message, not copies', () => {
  const bytes = encodeReq({ raw_input_contents: [Buffer.from([1, 2, 3])] });
  const msg = decodeModelInferRequestBytes(bytes);
  const raw = msg.raw_input_contents[0] as Buffer;
  assert.equal(raw.buffer, bytes.buffer);
  bytes[bytes.length - 1] = 9;
  assert.equal(raw[2], 9);
});

// Where protobufjs is not the reference: it keeps both members of a oneof given twice and throws on a map entry without a value.
test('a oneof given twice keeps only the member last on the wire (protobuf semantics)', () => {
  const bytes = craft((w) => {
    tag(w, 4, 2).fork();
    tag(w, 1, 2).string('k');
    tag(w, 2, 2).fork();
    tag(w, 2, 0).int64(7);
    tag(w, 1, 0).bool(true);
    w.ldelim();
    w.ldelim();
  });
  assert.deepStrictEqual(decodeModelInferRequestBytes(bytes).parameters, { k: { bool_param: true, parameter_choice: 'bool_param' } });
});

test('a map entry without a value is an InferParameter with nothing set', () => {
  const bytes = craft((w) => {
    tag(w, 4, 2).fork();
    tag(w, 1, 2).string('k');
    w.ldelim();
  });
  assert.deepStrictEqual(decodeModelInferRequestBytes(bytes).parameters, { k: {} });
});

const malformed: { name: string; bytes: Buffer; message: string }[] = [
  {
    name: 'truncated length',
    bytes: Buffer.from([0x0a, 0x05, 0x61]),
    message: 'protobuf message truncated: a length-delimited field at byte 2 declares 5 bytes, 1 remain',
  },
  { name: 'truncated varint', bytes: Buffer.from([0x78, 0x80]), message: 'protobuf message truncated at byte 2' },
  { name: 'truncated fixed64', bytes: Buffer.from([0x79, 1, 2, 3]), message: 'protobuf message truncated at byte 4' },
  { name: 'varint over 10 bytes', bytes: Buffer.from([0x78, ...Array(10).fill(0xff), 0x01]), message: 'protobuf varint at byte 1 is longer than 10 bytes' },
  { name: 'tag over 10 bytes', bytes: Buffer.from([0x0a, 0x00, ...Array(10).fill(0xff), 0x01]), message: 'protobuf varint at byte 2 is longer than 10 bytes' },
  { name: 'wrong wire type for a string', bytes: Buffer.from([0x08, 0x01]), message: "protobuf field 'model_name' has unexpected wire type 0" },
  { name: 'wire type 6', bytes: Buffer.from([(15 << 3) | 6]), message: 'invalid protobuf wire type 6 at byte 1' },
  { name: 'a stray end-group', bytes: Buffer.from([0x0a, 0x00, (15 << 3) | 4]), message: 'invalid protobuf wire type 4 at byte 3' },
  { name: 'groups nested past 100', bytes: Buffer.alloc(150, (9 << 3) | 3), message: 'protobuf groups nested deeper than 100 at byte 101' },
  {
    name: 'sub-message overruns its parent',
    bytes: Buffer.from([0x2a, 0x02, 0x0a, 0x05, 0x61, 0x62, 0x63, 0x64, 0x65]),
    message: 'protobuf message truncated: a length-delimited field at byte 4 declares 5 bytes, 0 remain',
  },
  {
    name: 'packed run overruns its length',
    bytes: Buffer.from([0x2a, 0x05, 0x1a, 0x01, 0x80, 0x01, 0x00]),
    message: "protobuf packed field 'shape' overruns its length",
  },
];

for (const c of malformed) {
  test(`decode throws: ${c.name}`, () => {
    assert.throws(() => decodeModelInferRequestBytes(c.bytes), { message: c.message });
  });
}

const TO_OBJECT: protobuf.IConversionOptions = { longs: String, enums: String, defaults: true, oneofs: true };
const decodeWith = (type: protobuf.Type, b: Uint8Array): unknown => type.toObject(type.decode(b), TO_OBJECT);

const withPrefix = (bytes: number[]): Uint8Array => {
  // A view into a larger buffer, as arena outputs are.
  const backing = new Uint8Array(bytes.length + 16).fill(0xee);
  backing.set(bytes, 8);
  return backing.subarray(8, 8 + bytes.length);
};

const responseCases: { name: string; r: ModelInferResponseOut }[] = [
  { name: 'all empty', r: { model_name: '', model_version: '', id: '', parameters: {}, outputs: [], raw_output_contents: [] } },
  {
    name: 'simple-style response',
    r: {
      model_name: 'simple',
      model_version: '1',
      id: 'req-9',
      parameters: {},
      outputs: [
        { name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16] },
        { name: 'OUTPUT1', datatype: 'INT32', shape: [1, 16] },
      ],
      raw_output_contents: [withPrefix(Array.from({ length: 64 }, (_, k) => k)), withPrefix(Array.from({ length: 64 }, (_, k) => 255 - k))],
    },
  },
  {
    name: 'parameters of every kind',
    r: {
      model_name: 'm',
      model_version: '2',
      id: '',
      parameters: {
        triton_final_response: { bool_param: true },
        f: { bool_param: false },
        i: { int64_param: 5 },
        i0: { int64_param: 0 },
        neg: { int64_param: -5 },
        big: { int64_param: 2 ** 53 - 1 },
        negbig: { int64_param: -(2 ** 53 - 1) },
        i32: { int64_param: 2 ** 31 },
        str64: { int64_param: '-9223372036854775808' },
        strmax: { int64_param: '9223372036854775807' },
        s: { string_param: 'value' },
        s0: { string_param: '' },
        su: { string_param: 'ünïcödé ✓' },
        slong: { string_param: 'y'.repeat(200) },
        d: { double_param: 0.1 },
        d0: { double_param: 0 },
        '': { bool_param: true },
      },
      outputs: [],
      raw_output_contents: [],
    },
  },
  {
    name: 'shapes: empty, zero, large, negative; empty and large raw entries',
    r: {
      model_name: 'ünï',
      model_version: '1',
      id: 'i'.repeat(100),
      parameters: {},
      outputs: [
        { name: 'S', datatype: 'FP32', shape: [] },
        { name: 'Z', datatype: 'FP32', shape: [0] },
        { name: 'L', datatype: 'UINT8', shape: [300000, 1, 127, 128, 16383, 16384, 2 ** 40] },
        { name: 'N', datatype: 'INT64', shape: [-1] },
        { name: '', datatype: '', shape: [1] },
      ],
      raw_output_contents: [new Uint8Array(0), new Uint8Array(0), new Uint8Array(300000).fill(3), withPrefix([1, 2, 3, 4, 5, 6, 7, 8]), new Uint8Array(0)],
    },
  },
];

for (const c of responseCases) {
  test(`encode ModelInferResponse decodes as protobufjs' own encoding: ${c.name}`, () => {
    const mine = encodeModelInferResponseBytes(c.r);
    const theirs = ResponseType.encode(ResponseType.fromObject(c.r as unknown as Record<string, unknown>)).finish();
    assert.deepStrictEqual(decodeWith(ResponseType, mine), decodeWith(ResponseType, theirs));
  });
  const streams: { label: string; s: ModelStreamInferResponseOut }[] = [
    { label: 'ok', s: { error_message: '', infer_response: c.r } },
    { label: 'error', s: { error_message: 'in error: ✗', infer_response: c.r } },
  ];
  for (const { label, s } of streams) {
    test(`encode ModelStreamInferResponse (${label}) decodes as protobufjs' own encoding: ${c.name}`, () => {
      const mine = encodeModelStreamInferResponseBytes(s);
      const theirs = StreamType.encode(StreamType.fromObject(s as unknown as Record<string, unknown>)).finish();
      assert.deepStrictEqual(decodeWith(StreamType, mine), decodeWith(StreamType, theirs));
    });
  }
}

test('encode ModelStreamInferResponse without infer_response', () => {
  const mine = encodeModelStreamInferResponseBytes({ error_message: 'boom', infer_response: null });
  assert.deepStrictEqual(decodeWith(StreamType, mine), { error_message: 'boom', infer_response: null });
  assert.equal(encodeModelStreamInferResponseBytes({ error_message: '', infer_response: null }).length, 0);
});

test('encoded raw_output_contents are copies (the arena is freed after encoding)', () => {
  const data = new Uint8Array([1, 2, 3, 4]);
  const bytes = encodeModelInferResponseBytes({ model_name: 'm', model_version: '1', id: '', parameters: {}, outputs: [], raw_output_contents: [data] });
  data.fill(0);
  const decoded = decodeWith(ResponseType, bytes) as { raw_output_contents: Buffer[] };
  assert.deepEqual([...decoded.raw_output_contents[0]], [1, 2, 3, 4]);
});
