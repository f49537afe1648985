/**
 * Exact 64-bit integers in HTTP JSON (request-json.ts, json-integers.ts,
 * json-tensor-data.ts, infer-request-decode.ts): which bodies take the exact
 * parser, what each integer literal becomes, the INT64/UINT64 tensor bytes
 * over the whole range, Triton's texts for values rapidjson's IsInt64 /
 * IsUint64 refuse, and a numeric sequence_id past 2^53.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ServerError } from '../../src/core/errors';
import { paramsJson, type ParamValue } from '../../src/core/request';
import { decodeInferRequest } from '../../src/frontend/http/infer-request-decode';
import { parseControlJson, parseRequestJson } from '../../src/frontend/http/request-json';
import { compileValidationPlan } from '../../src/request/validation-plan';
import type { ModelConfig } from '../../src/core/model-config';

function parse(text: string): unknown {
  const b = Buffer.from(text);
  const parsed = parseRequestJson(b, b.length, true);
  assert.equal(parsed.exact, true);
  return parsed.doc;
}

test('JSON.parse first (doubles), the exact parser when asked or when JSON.parse refuses the text', () => {
  const plain = Buffer.from('[9007199254740993]');
  assert.deepEqual(parseRequestJson(plain, plain.length), { doc: [9007199254740992], exact: false });
  const nan = Buffer.from('[NaN,9007199254740993]');
  const r = parseRequestJson(nan, nan.length);
  assert.equal(r.exact, true);
  assert.deepEqual(r.doc, [NaN, 9007199254740993n]);
});

// [JSON text, the value the exact parse gives]
const literalRows: [string, unknown][] = [
  ['[9007199254740991]', [9007199254740991]], // 2^53-1: 16 digits, still safe: a number
  ['[9007199254740992]', [9007199254740992n]], // 2^53: not safe
  ['[9007199254740993]', [9007199254740993n]],
  ['[-9007199254740993]', [-9007199254740993n]],
  ['[1234567890123456]', [1234567890123456]], // 16 digits, safe
  ['[9223372036854775807,-9223372036854775808]', [9223372036854775807n, -9223372036854775808n]],
  ['[18446744073709551615]', [18446744073709551615n]],
  ['[18446744073709551616]', [18446744073709551616]], // past uint64: a double, as in rapidjson
  ['[-9223372036854775809]', [-9223372036854775809]], // past int64: a double
  ['[12345678901234567.0]', [12345678901234567.0]], // a fraction: a double
  ['[12345678901234567e0]', [12345678901234567]], // an exponent: a double
  ['[0.12345678901234567, 1e-12345678901234567]', [0.12345678901234567, 0]], // fraction digits are no integer
  ['{"a":"12345678901234567","b":12345678901234567}', { a: '12345678901234567', b: 12345678901234567n }], // a string stays a string
  ['{"n":[1,2,3],"x":-0}', { n: [1, 2, 3], x: -0 }],
];

for (const [text, want] of literalRows) {
  test(`parseRequestJson ${text}`, () => {
    assert.deepEqual(parse(text), want);
  });
}

test('control bodies keep plain numbers (no bigint reaches a control handler)', () => {
  assert.deepEqual(parseControlJson('{"byte_size":9007199254740993}'), { byte_size: 9007199254740992 });
});

test("the exact path keeps the fallback parser's rapidjson texts", () => {
  const huge = `[1${'0'.repeat(400)}]`;
  assert.throws(() => parse(huge), { code: 'INTERNAL', message: 'failed to parse the request JSON buffer: Number too big to be stored in double. at 1' });
  assert.throws(() => parse('[12345678901234567,]'), { code: 'INTERNAL', message: 'failed to parse the request JSON buffer: Invalid value. at 19' });
});

const plan = compileValidationPlan({
  name: 'm',
  max_batch_size: 0,
  input: [
    { name: 'I', data_type: 'TYPE_INT64', dims: [-1] },
    { name: 'U', data_type: 'TYPE_UINT64', dims: [-1] },
    { name: 'S', data_type: 'TYPE_INT32', dims: [-1] },
    { name: 'F', data_type: 'TYPE_FP64', dims: [-1] },
  ].map((i) => ({ ...i, optional: true, is_shape_tensor: false })),
  output: [{ name: 'O', data_type: 'TYPE_INT64', dims: [-1] }],
} as unknown as ModelConfig);

function decode(body: string) {
  return decodeInferRequest(Buffer.from(body), undefined, plan, 1 << 20);
}

function input(name: string, datatype: string, data: string, parameters = ''): string {
  return `{${parameters}"inputs":[{"name":"${name}","datatype":"${datatype}","shape":[${data.split(',').length}],"data":[${data}]}]}`;
}

function bytesOf(ctor: { from(a: ArrayLike<bigint>): ArrayBufferView }, values: bigint[]): number[] {
  const v = ctor.from(values);
  return [...new Uint8Array(v.buffer, v.byteOffset, v.byteLength)];
}

// [name, input, datatype, JSON data, expected tensor bytes]
const tensorRows: [string, string, string, string, number[]][] = [
  ['INT64 past 2^53', 'I', 'INT64', '9007199254740993,-9007199254740993', bytesOf(BigInt64Array, [9007199254740993n, -9007199254740993n])],
  ['INT64 min and max', 'I', 'INT64', '-9223372036854775808,9223372036854775807', bytesOf(BigInt64Array, [-9223372036854775808n, 9223372036854775807n])],
  ['INT64 small and past 2^53 mixed', 'I', 'INT64', '1,-1,9007199254740992', bytesOf(BigInt64Array, [1n, -1n, 9007199254740992n])],
  ['UINT64 max', 'U', 'UINT64', '18446744073709551615,9223372036854775808,0', bytesOf(BigUint64Array, [18446744073709551615n, 9223372036854775808n, 0n])],
  [
    'INT32 from a 64-bit literal: its low 32 bits, as a C cast',
    'S',
    'INT32',
    '9007199254740993,-9007199254740993',
    bytesOf(BigInt64Array, [1n]).slice(0, 4).concat([255, 255, 255, 255]),
  ],
  ['FP64 from a 64-bit literal: the nearest double', 'F', 'FP64', '9007199254740993', [...new Uint8Array(new Float64Array([9007199254740992]).buffer)]],
];

for (const [name, inputName, datatype, data, bytes] of tensorRows) {
  test(`JSON data exact: ${name}`, () => {
    const r = decode(input(inputName, datatype, data));
    assert.deepEqual([...r.inputs[0]!.data], bytes);
  });
}

const SIGNED = "Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer";
const UNSIGNED = "Unable to parse 'data': attempt to access JSON non-unsigned-integer as unsigned-integer";

// [name, body, Triton's text]
const errorRows: [string, string, string][] = [
  ['INT64 1.5', input('I', 'INT64', '1.5'), SIGNED],
  ['INT64 2^63', input('I', 'INT64', '9223372036854775808'), SIGNED],
  ['INT64 -2^63-1', input('I', 'INT64', '-9223372036854775809'), SIGNED],
  ['INT64 written with an exponent past 2^53', input('I', 'INT64', '1e18'), SIGNED],
  ['UINT64 2^64', input('U', 'UINT64', '18446744073709551616'), UNSIGNED],
  ['UINT64 -1', input('U', 'UINT64', '-1'), UNSIGNED],
  ['UINT64 -2^63', input('U', 'UINT64', '-9223372036854775808'), UNSIGNED],
  ['UINT64 1.5', input('U', 'UINT64', '1.5'), UNSIGNED],
  ['INT32 2^63 (past int64)', input('S', 'INT32', '9223372036854775808'), SIGNED],
  [
    'sequence_id 2^64',
    input('I', 'INT64', '1', '"parameters":{"sequence_id":18446744073709551616},'),
    "Unable to parse 'sequence_id': attempt to access JSON non-string as string",
  ],
  [
    'sequence_id -2^63',
    input('I', 'INT64', '1', '"parameters":{"sequence_id":-9223372036854775808},'),
    "Unable to parse 'sequence_id': attempt to access JSON non-string as string",
  ],
  [
    'priority -2^63',
    input('I', 'INT64', '1', '"parameters":{"priority":-9223372036854775808},'),
    "Unable to parse 'priority': attempt to access JSON non-unsigned-integer as unsigned-integer",
  ],
];

for (const [name, body, message] of errorRows) {
  test(`JSON data refused: ${name}`, () => {
    assert.throws(
      () => decode(body),
      (e: unknown) => e instanceof ServerError && e.code === 'INTERNAL' && e.message === message,
    );
  });
}

// [name, parameters JSON, the decoded parameters]
const parameterRows: [string, string, Record<string, ParamValue>][] = [
  ['sequence_id 2^63+5', '{"sequence_id":9223372036854775813,"sequence_start":true}', { sequence_id: 9223372036854775813n, sequence_start: true }],
  ['sequence_id uint64 max', '{"sequence_id":18446744073709551615}', { sequence_id: 18446744073709551615n }],
  ['sequence_id 2^53-1 stays a number', '{"sequence_id":9007199254740991}', { sequence_id: 9007199254740991 }],
  [
    'custom int64 exact, custom past int64 a double',
    '{"a":-9223372036854775808,"b":18446744073709551615}',
    { a: -9223372036854775808n, b: 18446744073709551615 },
  ],
  [
    'priority and timeout past 2^53 read as sizes',
    '{"priority":9007199254740993,"timeout":18446744073709551615}',
    { priority: 9007199254740992, timeout: 18446744073709551616 },
  ],
];

for (const [name, params, want] of parameterRows) {
  test(`request parameters exact: ${name}`, () => {
    assert.deepEqual(decode(input('I', 'INT64', '1', `"parameters":${params},`)).parameters, want);
  });
}

test('paramsJson writes bigints as exact literals', () => {
  assert.equal(paramsJson({ sequence_id: 9223372036854775813n, s: 'x', n: 1.5, b: true }), '{"sequence_id":9223372036854775813,"s":"x","n":1.5,"b":true}');
});
