import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { DataType } from '../../src/core/datatypes';
import { ServerError } from '../../src/core/errors';
import { formatFixed6 } from '../../src/frontend/classification';
import type { RequestedOutput } from '../../src/request/decoded-request';
import { encodeInferResponse } from '../../src/frontend/http/infer-response-encode';
import { encodeBytesTensor as bytesTensor } from '../../src/request/tensor-view';
import type { EncodeResponseArgs, ResponseOutput } from '../../src/frontend/http/infer-response-encode';

function bytes(view: ArrayBufferView): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/** The same bytes placed at `offset` inside a SharedArrayBuffer (like the arena). */
function inArena(data: Uint8Array, offset: number): Uint8Array {
  const sab = new SharedArrayBuffer(offset + data.byteLength + 8);
  const view = new Uint8Array(sab, offset, data.byteLength);
  view.set(data);
  return view;
}

function o(name: string, datatype: DataType, shape: number[], data: Uint8Array): ResponseOutput {
  return { name, datatype, shape, data };
}

function req(name: string, binary?: boolean, classification = 0): RequestedOutput {
  return { name, binary, classification, parameters: {} };
}

function encode(outputs: ResponseOutput[], extra: Partial<EncodeResponseArgs> = {}) {
  return encodeInferResponse({ id: '', modelName: 'm', modelVersion: '1', outputs, requested: null, binaryDataOutput: false, ...extra });
}

test('Appendix A response, byte for byte', () => {
  const out0 = new Int32Array(16).map((_, i) => i + 1);
  const out1 = new Int32Array(16).map((_, i) => i - 1);
  const r = encodeInferResponse({
    id: '',
    modelName: 'simple',
    modelVersion: '1',
    outputs: [o('OUTPUT0', 'INT32', [1, 16], bytes(out0)), o('OUTPUT1', 'INT32', [1, 16], bytes(out1))],
    requested: [req('OUTPUT0', true), req('OUTPUT1', true)],
    binaryDataOutput: false,
  });
  const expected =
    '{"model_name":"simple","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1,16],' +
    '"parameters":{"binary_data_size":64}},{"name":"OUTPUT1","datatype":"INT32","shape":[1,16],"parameters":{"binary_data_size":64}}]}';
  assert.equal(r.json, expected);
  assert.equal(r.headerLength, 235);
  assert.equal(r.contentType, 'application/octet-stream');
  const body = Buffer.concat([Buffer.from(r.json), ...r.binary]);
  assert.equal(body.length, 363);
  assert.deepEqual(body.subarray(235, 299), Buffer.from(bytes(out0)));
  assert.deepEqual(body.subarray(299), Buffer.from(bytes(out1)));
});

const jsonRows: { name: string; datatype: DataType; shape: number[]; data: Uint8Array; json: string }[] = [
  {
    name: 'FP32 widened, shortest round trip',
    datatype: 'FP32',
    shape: [3],
    data: bytes(new Float32Array([0.1, 1, -2.5])),
    json: '[0.10000000149011612,1,-2.5]',
  },
  {
    name: 'FP32 NaN and infinities bare',
    datatype: 'FP32',
    shape: [3],
    data: bytes(new Float32Array([NaN, Infinity, -Infinity])),
    json: '[NaN,Infinity,-Infinity]',
  },
  { name: 'FP64', datatype: 'FP64', shape: [2], data: bytes(new Float64Array([0.1, 1e300])), json: '[0.1,1e+300]' },
  {
    name: 'INT64 exact beyond 2^53',
    datatype: 'INT64',
    shape: [2],
    data: bytes(new BigInt64Array([9007199254740993n, -9223372036854775808n])),
    json: '[9007199254740993,-9223372036854775808]',
  },
  { name: 'UINT64 max', datatype: 'UINT64', shape: [1], data: bytes(new BigUint64Array([18446744073709551615n])), json: '[18446744073709551615]' },
  { name: 'INT8 / UINT8', datatype: 'INT8', shape: [2], data: Uint8Array.from([255, 1]), json: '[-1,1]' },
  { name: 'UINT16', datatype: 'UINT16', shape: [1], data: bytes(new Uint16Array([65535])), json: '[65535]' },
  { name: 'BOOL', datatype: 'BOOL', shape: [3], data: Uint8Array.from([1, 0, 2]), json: '[true,false,true]' },
  { name: 'BYTES', datatype: 'BYTES', shape: [3], data: Buffer.from('0500000068656c6c6f0000000003000000616263', 'hex'), json: '["hello","","abc"]' },
  { name: 'BYTES escapes', datatype: 'BYTES', shape: [1], data: Buffer.concat([Buffer.from([3, 0, 0, 0]), Buffer.from('a"\n')]), json: '["a\\"\\n"]' },
  { name: 'empty tensor', datatype: 'FP32', shape: [0, 4], data: new Uint8Array(0), json: '[]' },
];

for (const row of jsonRows) {
  test(`JSON data: ${row.name}`, () => {
    const r = encode([o('Y', row.datatype, row.shape, row.data)]);
    assert.equal(
      r.json,
      `{"model_name":"m","model_version":"1","outputs":[{"name":"Y","datatype":"${row.datatype}","shape":[${row.shape.join(',')}],"data":${row.json}}]}`,
    );
    assert.equal(r.contentType, 'application/json');
    assert.equal(r.headerLength, undefined);
    assert.deepEqual(r.binary, []);
    // Same result from an unaligned view into a SharedArrayBuffer.
    assert.equal(encode([o('Y', row.datatype, row.shape, inArena(row.data, 3))]).json, r.json);
  });
}

test('id and response parameters', () => {
  const r = encode([], { id: '42', parameters: { a: 1, b: 'x', c: true, d: 0.5 } });
  assert.equal(r.json, '{"id":"42","model_name":"m","model_version":"1","parameters":{"a":1,"b":"x","c":true,"d":0.5},"outputs":[]}');
  assert.equal(encode([], { parameters: {} }).json, '{"model_name":"m","model_version":"1","outputs":[]}');
});

test('output kind selection (§1.8.3)', () => {
  const a = o('A', 'UINT8', [1], Uint8Array.from([7]));
  const b = o('B', 'UINT8', [1], Uint8Array.from([8]));
  const c = o('C', 'UINT8', [1], Uint8Array.from([9]));
  // Not listed: binary_data_output decides.
  let r = encode([a, b], { binaryDataOutput: true });
  assert.equal(
    r.json,
    '{"model_name":"m","model_version":"1","outputs":[{"name":"A","datatype":"UINT8","shape":[1],"parameters":{"binary_data_size":1}},{"name":"B","datatype":"UINT8","shape":[1],"parameters":{"binary_data_size":1}}]}',
  );
  assert.deepEqual(
    r.binary.map((x) => [...x]),
    [[7], [8]],
  );
  // Listed: only those, in backend order; no binary_data means JSON even with binary_data_output.
  r = encode([a, b, c], { requested: [req('C', true), req('A')], binaryDataOutput: true });
  assert.equal(
    r.json,
    '{"model_name":"m","model_version":"1","outputs":[{"name":"A","datatype":"UINT8","shape":[1],"data":[7]},{"name":"C","datatype":"UINT8","shape":[1],"parameters":{"binary_data_size":1}}]}',
  );
  assert.deepEqual(
    r.binary.map((x) => [...x]),
    [[9]],
  );
  assert.equal(r.headerLength, Buffer.byteLength(r.json));
  // A zero-size binary output still makes the response binary, with nothing after the JSON.
  r = encode([o('Z', 'FP32', [0], new Uint8Array(0))], { requested: [req('Z', true)] });
  assert.equal(r.contentType, 'application/octet-stream');
  assert.deepEqual(r.binary, []);
  assert.match(r.json, /"parameters":\{"binary_data_size":0\}/);
});

const errorRows: { name: string; out: ResponseOutput; code: string; message: string }[] = [
  {
    name: 'FP16 as JSON',
    out: o('H', 'FP16', [1], new Uint8Array(2)),
    code: 'INVALID_ARG',
    message: 'sending FP16 data via JSON is not supported. Please use the binary data format for output',
  },
  {
    name: 'BF16 as JSON',
    out: o('H', 'BF16', [1], new Uint8Array(2)),
    code: 'INVALID_ARG',
    message: 'sending BF16 data via JSON is not supported. Please use the binary data format for output',
  },
  {
    name: 'size mismatch',
    out: o('S', 'INT32', [2], new Uint8Array(4)),
    code: 'INTERNAL',
    message: "output tensor shape does not match size of output for 'S'",
  },
  {
    name: 'BYTES truncated',
    out: o('S', 'BYTES', [1], Uint8Array.from([5, 0, 0, 0, 1])),
    code: 'INTERNAL',
    message: "output tensor shape does not match size of output for 'S'",
  },
];

for (const row of errorRows) {
  test(`encode rejects: ${row.name}`, () => {
    assert.throws(
      () => encode([row.out]),
      (e: unknown) => e instanceof ServerError && e.code === row.code && e.message === row.message,
    );
  });
}

test('FP16 is fine as binary', () => {
  const r = encode([o('H', 'FP16', [1], Uint8Array.from([0, 60]))], { binaryDataOutput: true });
  assert.deepEqual(
    r.binary.map((x) => [...x]),
    [[0, 60]],
  );
});

test('classification (§1.8.9): per batch item, labels, %f values', () => {
  const probs = o('P', 'FP32', [2, 3], bytes(new Float32Array([0.1, 0.7, 0.2, 5, 1, 3])));
  const r = encode([probs], { requested: [req('P', undefined, 2)], batched: true, labels: () => ['cat', 'dog'] });
  assert.equal(
    r.json,
    '{"model_name":"m","model_version":"1","outputs":[{"name":"P","datatype":"BYTES","shape":[2,2],' +
      '"data":["0.700000:1:dog","0.200000:2","5.000000:0:cat","3.000000:2"]}]}',
  );
  const ints = o('I', 'INT32', [4], bytes(new Int32Array([3, 10, -1, 4])));
  const b = encode([ints], { requested: [req('I', true, 9)] });
  assert.match(b.json, /"datatype":"BYTES","shape":\[4\],"parameters":\{"binary_data_size":\d+\}/);
  const elements: string[] = [];
  const blob = Buffer.concat(b.binary);
  for (let off = 0; off < blob.length;) {
    const n = blob.readUInt32LE(off);
    elements.push(blob.toString('utf8', off + 4, off + 4 + n));
    off += 4 + n;
  }
  assert.deepEqual(elements, ['10:1', '4:3', '3:0', '-1:2']);
  assert.throws(
    () => encode([o('B', 'BOOL', [1], new Uint8Array(1))], { requested: [req('B', false, 1)] }),
    (e: unknown) =>
      e instanceof ServerError && e.code === 'INVALID_ARG' && e.message === "class result not available for output due to unsupported type 'BOOL'",
  );
});

test('formatFixed6 prints like C %f', () => {
  const rows: [number, string][] = [
    [11.548583, '11.548583'],
    [0, '0.000000'],
    [-0, '-0.000000'],
    [Math.fround(0.1), '0.100000'],
    [1e22, '10000000000000000000000.000000'],
    [NaN, 'nan'],
    [-Infinity, '-inf'],
  ];
  for (const [v, s] of rows) assert.equal(formatFixed6(v), s);
});

test('chunked JSON text is the same text: tensors longer than one chunk, every kind of element', () => {
  const n = 65536 * 2 + 3;
  const ints = new Int32Array(n).map((_, i) => i - 5);
  const bools = new Uint8Array(n).map((_, i) => (i % 3 === 0 ? 1 : 0));
  const strs = Array.from({ length: n }, (_, i) => (i % 7 === 0 ? 'é"\\' : `s${i}`));
  const cases: [DataType, Uint8Array, string][] = [
    ['INT32', bytes(ints), `[${ints.join(',')}]`],
    ['BOOL', bools, JSON.stringify(Array.from(bools, (b) => b === 1))],
    ['BYTES', bytesTensor(strs), JSON.stringify(strs)],
  ];
  for (const [datatype, data, expected] of cases) {
    const r = encode([o('X', datatype, [n], data)]);
    assert.equal(
      r.json,
      `{"model_name":"m","model_version":"1","outputs":[{"name":"X","datatype":"${datatype}","shape":[${n}],"data":${expected}}]}`,
      datatype,
    );
  }
});

test('an output whose JSON would pass the response bound is refused, naming the output, the model and the fix', () => {
  const big = new Uint8Array(1000).fill(1); // BOOL: 1000 × `true,`
  const message = (name: string, elements: number, max: number): string =>
    `the JSON of output '${name}' (${elements} elements) of model 'm' would make the response larger than ${max} bytes, ` +
    'the most an HTTP inference response may carry as JSON (--http-max-json-response-size). Request the output in binary: "parameters":{"binary_data":true} ' +
    'on the output, or "binary_data_output":true in the request parameters (the tritonclient default).';
  const fits = encode([o('B', 'BOOL', [1000], big)]).json.length;
  // A bound the response meets exactly is fine; one character less is not.
  assert.equal(encode([o('B', 'BOOL', [1000], big)], { maxJsonChars: fits }).json.length, fits);
  const rows: { name: string; outputs: ResponseOutput[]; max: number; extra?: Partial<EncodeResponseArgs>; refused?: [string, number] }[] = [
    { name: 'one character short', outputs: [o('B', 'BOOL', [1000], big)], max: fits - 1, refused: ['B', 1000] },
    { name: 'far too small: refused before any formatting', outputs: [o('B', 'BOOL', [1000], big)], max: 100, refused: ['B', 1000] },
    {
      name: 'many chunks: given up part way',
      outputs: [o('I', 'INT32', [300_000], bytes(new Int32Array(300_000).fill(123456)))],
      max: 1_000_000,
      refused: ['I', 300_000],
    },
    {
      name: 'the bound is for the whole response: the second output does not fit',
      outputs: [o('A', 'UINT8', [400], new Uint8Array(400)), o('C', 'UINT8', [400], new Uint8Array(400))],
      max: 1200,
      refused: ['C', 400],
    },
    { name: 'BYTES', outputs: [o('S', 'BYTES', [3], bytesTensor(['x'.repeat(500), 'y', 'z']))], max: 300, refused: ['S', 3] },
    {
      name: 'classification strings count too',
      outputs: [o('P', 'FP32', [1000], bytes(new Float32Array(1000).fill(0.5)))],
      max: 1000,
      extra: { requested: [req('P', false, 1000)] },
      refused: ['P', 1000],
    },
    { name: 'binary outputs are not counted', outputs: [o('B', 'BOOL', [1000], big)], max: 200, extra: { binaryDataOutput: true } },
    {
      name: 'nor outputs written into shared memory',
      outputs: [o('B', 'BOOL', [1000], big)],
      max: 200,
      extra: { requested: [{ ...req('B'), shm: { region: { name: 'r', key: '/k', offset: 0, byteSize: 1000 }, offset: 0, byteSize: 1000 } }] },
    },
  ];
  for (const row of rows) {
    const run = (): unknown => encode(row.outputs, { maxJsonChars: row.max, ...row.extra });
    if (row.refused === undefined) {
      assert.doesNotThrow(run, row.name);
      continue;
    }
    assert.throws(run, (e: unknown) => {
      assert.ok(e instanceof ServerError, row.name);
      assert.equal(e.code, 'INVALID_ARG', row.name);
      assert.equal(e.message, message(row.refused![0], row.refused![1], row.max), row.name);
      return true;
    });
  }
});
