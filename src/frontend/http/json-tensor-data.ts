/**
 * JSON tensor `data` → little-endian tensor bytes (protocol.md §1.8.4), with
 * the HTTP frontend's texts: nested arrays are flattened in order (depth <=
 * 100), each leaf must have the JSON type of the datatype, and the number of
 * leaves must equal the shape's element count (BYTES: counted later by
 * validate.ts). Numbers go straight into a typed array, strings straight
 * into the serialized BYTES layout (json-bytes-data.ts); no per-element
 * allocation beyond JSON.parse's own.
 *
 * Integers are exact over the whole int64/uint64 range: request-json.ts
 * gives an integer literal that a double cannot hold as a bigint, so an
 * integer element is a safe-integer number or a bigint, as rapidjson's
 * IsInt64 / IsUint64 see it (json-integers.ts); any other value for an
 * integer datatype is refused with Triton's text. An integral value written
 * with a fraction or exponent (`1.0`, `1e2`), which JSON.parse gives as the
 * number it equals, reaches the integer fill as a DoubleLiteral and is
 * refused too (infer-request-decode.ts markDoubleLiterals), as rapidjson
 * holds it as a double.
 */
import { ELEMENT_SIZE, isDataType, wireDataTypeHint } from '../../core/datatypes';
import type { DataType } from '../../core/datatypes';
import { ServerError } from '../../core/errors';
import { jsonDepthError, MAX_JSON_DEPTH } from '../../core/json-depth';
import { serializeJsonStrings, type SerializedJsonBytes } from './json-bytes-data';
import { isJsonInteger } from './json-integers';

const TWO_32 = 4294967296;

// Fill state of the one conversion running on this thread (conversions are synchronous).
let cursor = 0;
let expected = 0;

function internal(message: string): ServerError {
  return new ServerError('INTERNAL', message);
}

function tooMany(): ServerError {
  return internal("Unable to parse 'data': Shape does not match true shape of 'data' field");
}

function wrongType(kind: string): ServerError {
  return internal(`Unable to parse 'data': attempt to access JSON non-${kind} as ${kind}`);
}

/**
 * `data` (the JSON array of one input) → tensor bytes. `count` is the element
 * count of the request shape (> 0). Throws the frontend's errors in Triton's
 * order: byte-size limit, FP16/BF16/invalid datatype, then per element.
 */
export function jsonTensorBytes(name: string, datatype: string, data: unknown[], count: number, maxInputSize: number): Uint8Array {
  const dt: DataType | undefined = isDataType(datatype) ? datatype : undefined;
  let strings: SerializedJsonBytes | undefined;
  let byteSize: number;
  if (dt === 'BYTES') {
    strings = serializeJsonStrings(data, count, maxInputSize);
    byteSize = strings.byteSize;
  } else {
    byteSize = dt === undefined ? 0 : count * ELEMENT_SIZE[dt];
  }
  if (byteSize > maxInputSize) {
    throw new ServerError(
      'INVALID_ARG',
      `JSON input '${name}' has a byte_size (${byteSize} bytes) that exceeds the maximum allowed value of ${maxInputSize} bytes. Use --http-max-input-size to increase the limit.`,
    );
  }
  if (dt === 'FP16' || dt === 'BF16') {
    throw new ServerError('INVALID_ARG', `receiving ${dt} data via JSON is not supported. Please use the binary data format for input ${name}`);
  }
  if (dt === undefined) throw new ServerError('INVALID_ARG', `invalid datatype for input ${name}. ${wireDataTypeHint(datatype)}`);
  if (strings !== undefined) return strings.data;

  const buffer = new ArrayBuffer(byteSize);
  cursor = 0;
  expected = count;
  switch (dt) {
    case 'BOOL':
      fillBool(data, new Uint8Array(buffer), 1);
      break;
    case 'UINT8':
      fillInt(data, new Uint8Array(buffer), true, 1);
      break;
    case 'INT8':
      fillInt(data, new Int8Array(buffer), false, 1);
      break;
    case 'UINT16':
      fillInt(data, new Uint16Array(buffer), true, 1);
      break;
    case 'INT16':
      fillInt(data, new Int16Array(buffer), false, 1);
      break;
    case 'UINT32':
      fillInt(data, new Uint32Array(buffer), true, 1);
      break;
    case 'INT32':
      fillInt(data, new Int32Array(buffer), false, 1);
      break;
    case 'UINT64':
      fillInt64(data, new Uint32Array(buffer), true, 1);
      break;
    case 'INT64':
      fillInt64(data, new Uint32Array(buffer), false, 1);
      break;
    case 'FP32':
      fillFloat(data, new Float32Array(buffer), 1);
      break;
    case 'FP64':
      fillFloat(data, new Float64Array(buffer), 1);
      break;
    default:
      throw new ServerError('INVALID_ARG', `invalid datatype for input ${name}`);
  }
  if (cursor !== count) throw internal("Failed to parse 'data' field: shape does not match true shape");
  return new Uint8Array(buffer);
}

function fillBool(arr: unknown[], out: Uint8Array, depth: number): void {
  for (let i = 0, n = arr.length; i < n; i++) {
    const v = arr[i];
    if (Array.isArray(v)) {
      if (depth >= MAX_JSON_DEPTH) throw jsonDepthError();
      fillBool(v, out, depth + 1);
      continue;
    }
    if (cursor >= expected) throw tooMany();
    if (typeof v !== 'boolean') throw wrongType('boolean');
    out[cursor++] = v ? 1 : 0;
  }
}

type IntArray = Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array;

/** Typed-array stores wrap modulo 2^width, as Triton's C casts do (a bigint: its low 32 bits first). */
function fillInt(arr: unknown[], out: IntArray, unsigned: boolean, depth: number): void {
  for (let i = 0, n = arr.length; i < n; i++) {
    const v = arr[i];
    if (Array.isArray(v)) {
      if (depth >= MAX_JSON_DEPTH) throw jsonDepthError();
      fillInt(v, out, unsigned, depth + 1);
      continue;
    }
    if (cursor >= expected) throw tooMany();
    if (!isJsonInteger(v, unsigned)) throw wrongType(unsigned ? 'unsigned-integer' : 'signed-integer');
    out[cursor++] = typeof v === 'number' ? v : Number(BigInt.asUintN(32, v));
  }
}

/** 64-bit integers as two little-endian 32-bit halves: no BigInt per element below 2^53. */
function fillInt64(arr: unknown[], out: Uint32Array, unsigned: boolean, depth: number): void {
  for (let i = 0, n = arr.length; i < n; i++) {
    const v = arr[i];
    if (Array.isArray(v)) {
      if (depth >= MAX_JSON_DEPTH) throw jsonDepthError();
      fillInt64(v, out, unsigned, depth + 1);
      continue;
    }
    if (cursor >= expected) throw tooMany();
    if (!isJsonInteger(v, unsigned)) throw wrongType(unsigned ? 'unsigned-integer' : 'signed-integer');
    const k = 2 * cursor++;
    if (typeof v === 'number') {
      out[k] = v >>> 0;
      out[k + 1] = Math.floor(v / TWO_32); // negative: the store wraps it to the two's complement high word
    } else {
      const u = BigInt.asUintN(64, v);
      out[k] = Number(u & 0xffffffffn);
      out[k + 1] = Number(u >> 32n);
    }
  }
}

function fillFloat(arr: unknown[], out: Float32Array | Float64Array, depth: number): void {
  for (let i = 0, n = arr.length; i < n; i++) {
    const v = arr[i];
    if (Array.isArray(v)) {
      if (depth >= MAX_JSON_DEPTH) throw jsonDepthError();
      fillFloat(v, out, depth + 1);
      continue;
    }
    if (cursor >= expected) throw tooMany();
    if (typeof v === 'number') out[cursor++] = v;
    else if (typeof v === 'bigint')
      out[cursor++] = Number(v); // an int64/uint64 literal read as a double, as rapidjson's GetDouble does
    else throw internal("Unable to parse 'data': attempt to access JSON non-number as double");
  }
}
