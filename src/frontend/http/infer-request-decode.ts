/**
 * KServe v2 HTTP inference request body → DecodedRequest (protocol.md §1.8.1,
 * §1.8.2, §1.8.4, §1.8.5, §1.8.7), in the order Triton's HTTP frontend reads
 * it: `id`, `parameters`, `inputs` (binary blobs consumed in input order),
 * leftover bytes, `outputs`. Texts and codes are Triton's; failures of its
 * JSON helper are INTERNAL (500) on purpose (§1.2).
 * No I/O except reading inputs from client shared memory (shm-regions.ts).
 * Binary input data are views into `body` (no copy).
 */
import { ELEMENT_SIZE, isDataType } from '../../core/datatypes';
import { ServerError, requestIdPrefix } from '../../core/errors';
import type { ParamValue } from '../../core/request';
import type { DecodedInput, DecodedRequest, RequestedOutput } from '../../request/decoded-request';
import { dimsToString } from '../../request/validate';
import type { ValidationPlan } from '../../request/validation-plan';
import { readShm, resolveShm, type ShmRef, type ShmRegionTable } from '../../request/shm-regions';
import { checkExactNumber, InexactInteger, isJsonInteger, isJsonUInt, readingExact, uintSize } from './json-integers';
import { jsonTensorBytes } from './json-tensor-data';
import { decodeRawRequest } from './raw-request-decode';
import { mayHoldDoubleLiterals, parseLikeRapidjson, parseRequestJson } from './request-json';

type JsonObject = Record<string, unknown>;

const INT64_MAX = 9223372036854775807; // as a double: 2^63
const EMPTY = new Uint8Array(0);

function internal(message: string): ServerError {
  return new ServerError('INTERNAL', message);
}

function invalid(message: string): ServerError {
  return new ServerError('INVALID_ARG', message);
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** rapidjson IsUint64, read as a size (json-integers.ts); undefined when `v` is not one. */
function uintOf(v: unknown): number | undefined {
  return isJsonUInt(v) ? uintSize(v) : undefined;
}

const NON = {
  string: 'attempt to access JSON non-string as string',
  bool: 'attempt to access JSON non-boolean as boolean',
  uint: 'attempt to access JSON non-unsigned-integer as unsigned-integer',
  array: 'attempt to access JSON non-array as array',
} as const;

function missing(member: string): string {
  return `attempt to access non-existing object member '${member}'`;
}

/**
 * The `Inference-Header-Content-Length` header (§1.8.5): undefined when absent,
 * else an int within [0, bodyLength] (0 = raw binary request).
 */
export function parseHeaderLength(value: string | undefined, bodyLength: number): number | undefined {
  if (value === undefined) return undefined;
  const m = /^\s*([+-]?\d+)/.exec(value); // std::stoi: leading digits, trailing text ignored
  const n = m === null ? NaN : Number(m[1]);
  if (!(n >= -2147483648 && n <= 2147483647)) {
    throw invalid(`Unable to parse Inference-Header-Content-Length, got: ${value}`);
  }
  if (n < 0 || n > bodyLength) {
    throw invalid(`inference header size should be in range (0, ${bodyLength}), got: ${value}`);
  }
  return n;
}

/**
 * Decode an inference request body. `headerLength` is the parsed
 * Inference-Header-Content-Length (undefined when absent: the whole body is
 * JSON; as in Triton, an empty body without the header is a raw request).
 */
export function decodeInferRequest(
  body: Buffer,
  headerLength: number | undefined,
  plan: ValidationPlan,
  maxInputSize: number,
  regions?: ShmRegionTable,
): DecodedRequest {
  const jsonLength = headerLength ?? body.length;
  if (jsonLength === 0) return decodeRawRequest(body, plan, maxInputSize);
  if (jsonLength > body.length) {
    throw invalid(`unexpected size for request JSON, expecting ${jsonLength - body.length} more bytes`);
  }
  if (jsonLength > maxInputSize) {
    throw invalid(
      `request JSON size of ${jsonLength} bytes exceeds the maximum allowed input size of ${maxInputSize} bytes. Use --http-max-input-size to increase the limit.`,
    );
  }
  let parsed = parseRequestJson(body, jsonLength);
  readingExact(parsed.exact);
  markDoubleLiterals(parsed.doc, body, jsonLength);
  try {
    return decodeJsonRequest(parsed.doc, body, jsonLength, plan, maxInputSize, regions);
  } catch (err) {
    if (!(err instanceof InexactInteger)) throw err;
  }
  // An integer past 2^53 where an integer belongs: JSON.parse may have rounded it (json-integers.ts).
  parsed = parseRequestJson(body, jsonLength, true);
  readingExact(true);
  markDoubleLiterals(parsed.doc, body, jsonLength);
  return decodeJsonRequest(parsed.doc, body, jsonLength, plan, maxInputSize, regions);
}

const INTEGER_TYPES = new Set(['INT8', 'INT16', 'INT32', 'INT64', 'UINT8', 'UINT16', 'UINT32', 'UINT64']);

/**
 * Triton refuses `1.0` or `1e2` for an integer tensor (rapidjson holds them
 * as doubles); a parsed number does not say how it was written. When the
 * document has an integer input with JSON data and its text may hold such a
 * literal, those inputs' data are taken from a parse that marks them
 * (DoubleLiteral, which the integer fill refuses with Triton's text). Other
 * inputs and fields keep the first parse. Requests without integer JSON
 * data, or without a `.`/`e` after a digit, pay one check.
 */
function markDoubleLiterals(doc: unknown, body: Buffer, jsonLength: number): void {
  const inputs = isObject(doc) && Array.isArray(doc.inputs) ? doc.inputs : undefined;
  if (inputs === undefined) return;
  const integral = inputs.map((t) => isObject(t) && typeof t.datatype === 'string' && INTEGER_TYPES.has(t.datatype) && Array.isArray(t.data));
  if (!integral.includes(true) || !mayHoldDoubleLiterals(body, jsonLength)) return;
  const marked = parseLikeRapidjson(body.subarray(0, jsonLength), true, true);
  const markedInputs = isObject(marked) && Array.isArray(marked.inputs) ? marked.inputs : [];
  integral.forEach((yes, i) => {
    const m = markedInputs[i];
    if (yes && isObject(m) && Array.isArray(m.data)) (inputs[i] as JsonObject).data = m.data;
  });
}

function decodeJsonRequest(
  doc: unknown,
  body: Buffer,
  jsonLength: number,
  plan: ValidationPlan,
  maxInputSize: number,
  regions: ShmRegionTable | undefined,
): DecodedRequest {
  const root: JsonObject = isObject(doc) ? doc : {};

  let id = '';
  if (root.id !== undefined) {
    if (typeof root.id !== 'string') throw internal(`Unable to parse 'id': ${NON.string}`);
    id = root.id;
  }

  const parameters: Record<string, ParamValue> = {};
  let binaryDataOutput = false;
  if (root.parameters !== undefined) binaryDataOutput = parseRequestParameters(root.parameters, parameters);

  const rid = requestIdPrefix(id);
  const inputs = decodeInputs(root, body, jsonLength, plan, maxInputSize, rid, regions);
  const outputs = decodeOutputs(root, rid, regions);
  return { id, inputs, outputs, parameters, binaryDataOutput };
}

/** Reserved and custom request parameters (§1.8.2); returns `binary_data_output`. */
function parseRequestParameters(params: unknown, out: Record<string, ParamValue>): boolean {
  if (!isObject(params)) throw internal('failed to get request params.: attempt to get members for non-object');
  let binaryDataOutput = false;
  for (const key of Object.keys(params)) {
    const v = params[key];
    switch (key) {
      case 'sequence_id':
        if (isJsonUInt(v)) {
          out.sequence_id = v; // past 2^53 a bigint: the correlation id stays exact
        } else if (typeof v === 'string') {
          if (Buffer.byteLength(v, 'utf8') > 128) {
            throw new ServerError('UNSUPPORTED', 'string correlation ID cannot be longer than 128 characters');
          }
          out.sequence_id = v;
        } else {
          throw internal(`Unable to parse 'sequence_id': ${NON.string}`);
        }
        break;
      case 'sequence_start':
      case 'sequence_end':
        if (typeof v !== 'boolean') throw internal(`Unable to parse '${key}': ${NON.bool}`);
        out[key] = v;
        break;
      case 'priority':
      case 'timeout': {
        const n = uintOf(v);
        if (n === undefined) throw internal(`Unable to parse '${key}': ${NON.uint}`);
        out[key] = n;
        break;
      }
      case 'binary_data_output':
        if (typeof v !== 'boolean') throw internal(`Unable to parse 'binary_data_output': ${NON.bool}`);
        binaryDataOutput = v;
        break;
      default:
        if (key.startsWith('triton_')) {
          throw invalid("parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.");
        }
        if (typeof v === 'bigint') {
          // An int64 stays exact; a uint64 past int64 is no int to Triton, so a double.
          out[key] = isJsonInteger(v, false) ? v : Number(v);
          break;
        }
        if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') {
          throw invalid(`parameter '${key}' has invalid type. It should be either 'int', 'bool', or 'string'.`);
        }
        if (typeof v === 'number') checkExactNumber(v);
        out[key] = v;
    }
  }
  return binaryDataOutput;
}

/** Exactly one of `data`, `binary_data_size`, `shared_memory_region` (INVALID_ARG). */
function checkInputContentType(input: unknown): void {
  const hasData = isObject(input) && input.data !== undefined;
  const params = isObject(input) ? input.parameters : undefined;
  const hasBinary = isObject(params) && params.binary_data_size !== undefined;
  const hasShm = isObject(params) && params.shared_memory_region !== undefined;
  const count = Number(hasData) + Number(hasBinary) + Number(hasShm);
  if (count === 1) return;
  let msg = "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', " + "'shared_memory_region' in 'parameters'. But";
  if (count === 0) msg += ' no field is set';
  else msg += ` set${hasData ? " 'data'" : ''}${hasBinary ? " 'binary_data_size'" : ''}${hasShm ? " 'shared_memory_region'" : ''}`;
  throw invalid(msg);
}

function memberString(obj: JsonObject, member: string): string {
  const v = obj[member];
  if (v === undefined) throw internal(`Unable to parse '${member}': ${missing(member)}`);
  if (typeof v !== 'string') throw internal(`Unable to parse '${member}': ${NON.string}`);
  return v;
}

/** Scalar parameters as given (Triton ignores the ones it does not know). */
function scalarParams(params: unknown): Record<string, ParamValue> {
  const out: Record<string, ParamValue> = {};
  if (!isObject(params)) return out;
  for (const key of Object.keys(params)) {
    const v = params[key];
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') out[key] = v;
  }
  return out;
}

/** Shared-memory parameters of an input or output, resolved against the registered regions (shm-regions.ts). */
function checkSharedMemory(params: unknown, regions: ShmRegionTable | undefined): ShmRef | undefined {
  if (!isObject(params)) return undefined;
  const region = params.shared_memory_region;
  if (region !== undefined && typeof region !== 'string') {
    throw internal(`Unable to parse 'shared_memory_region': ${NON.string}`);
  }
  const sizes: number[] = [];
  for (const key of ['shared_memory_offset', 'shared_memory_byte_size']) {
    // Absent offset and byte size read as 0 (the size check then fails the input).
    const n = params[key] === undefined ? 0 : uintOf(params[key]);
    if (n === undefined) throw internal(`Unable to parse '${key}': ${NON.uint}`);
    sizes.push(n);
  }
  if (typeof region !== 'string') return undefined;
  return resolveShm(regions, region, sizes[0]!, sizes[1]!);
}

function decodeInputs(
  root: JsonObject,
  body: Buffer,
  jsonLength: number,
  plan: ValidationPlan,
  maxInputSize: number,
  rid: string,
  regions: ShmRegionTable | undefined,
): DecodedInput[] {
  const model = plan.modelName;
  const list = root.inputs;
  if (list === undefined) throw internal(`Unable to parse 'inputs': ${missing('inputs')}`);
  if (!Array.isArray(list)) throw internal(`Unable to parse 'inputs': ${NON.array}`);

  let pos = jsonLength; // next unread binary byte
  const inputs: DecodedInput[] = [];
  for (const item of list) {
    checkInputContentType(item);
    const input = item as JsonObject; // an object: checkInputContentType found a member
    const name = memberString(input, 'name');
    const datatype = memberString(input, 'datatype');
    const shape = parseShape(input.shape, name);
    for (const prev of inputs) {
      if (prev.name === name) throw invalid(`${rid}input '${name}' already exists in request`);
    }
    const params = input.parameters;

    let data: Uint8Array;
    const binaryParam = isObject(params) ? params.binary_data_size : undefined;
    if (binaryParam !== undefined) {
      const binarySize = uintOf(binaryParam);
      if (binarySize === undefined) throw internal(`Unable to parse 'binary_data_size': ${NON.uint}`);
      const available = body.length - pos;
      if (binarySize > available) {
        throw invalid(`unexpected size for input '${name}', expecting ${binarySize - available} additional bytes for model '${model}'`);
      }
      data = binarySize === 0 ? EMPTY : body.subarray(pos, pos + binarySize);
      pos += binarySize;
    } else {
      const shm = checkSharedMemory(params, regions);
      data = shm !== undefined ? readShm(shm) : jsonInputData(input, name, datatype, shape, maxInputSize);
    }
    inputs.push({ name, datatype, shape, data, parameters: scalarParams(params) });
  }
  if (pos !== body.length) throw invalid(`unexpected additional input data for model '${model}'`);
  return inputs;
}

function parseShape(v: unknown, name: string): number[] {
  if (v === undefined) throw internal(`Unable to parse 'shape': ${missing('shape')}`);
  if (!Array.isArray(v)) throw internal(`Unable to parse 'shape': ${NON.array}`);
  const shape = new Array<number>(v.length);
  for (let k = 0; k < v.length; k++) {
    const d = uintOf(v[k]);
    if (d === undefined) throw internal(`Unable to parse 'shape': ${NON.uint}`);
    shape[k] = d;
  }
  for (const d of shape) {
    if (d >= INT64_MAX) {
      throw invalid(`invalid shape for input '${name}': shape ${dimsToString(shape)} contains one or more invalid dimensions`);
    }
  }
  return shape;
}

function jsonInputData(input: JsonObject, name: string, datatype: string, shape: number[], maxInputSize: number): Uint8Array {
  let count = 1;
  for (const d of shape) count *= d;
  if (count === 0) return EMPTY; // empty tensor: `data` is not read
  // Overflow guards (≈ Triton's texts): element count, then bytes, within int64.
  if (count > INT64_MAX) {
    throw invalid(`shape ${dimsToString(shape)} of input '${name}' causes total element count to exceed maximum size of 9223372036854775807`);
  }
  if (isDataType(datatype) && count * ELEMENT_SIZE[datatype] > INT64_MAX) {
    throw invalid(`byte size overflow for input '${name}'`);
  }
  const data = input.data;
  if (!Array.isArray(data)) throw internal(`Unable to parse 'data': ${NON.array}`);
  return jsonTensorBytes(name, datatype, data, count, maxInputSize);
}

function decodeOutputs(root: JsonObject, rid: string, regions: ShmRegionTable | undefined): RequestedOutput[] | null {
  const list = root.outputs;
  if (list === undefined) return null;
  if (!Array.isArray(list)) throw internal(`Unable to parse 'outputs': ${NON.array}`);
  const outputs: RequestedOutput[] = [];
  for (const item of list) {
    const params = isObject(item) ? item.parameters : undefined;
    const p = isObject(params) ? params : undefined;
    if (p !== undefined && p.shared_memory_region !== undefined) {
      if (p.classification !== undefined) {
        throw invalid("Output can't set both 'shared_memory_region' and 'classification'");
      }
      if (p.binary_data !== undefined) {
        if (typeof p.binary_data !== 'boolean') throw internal(`Unable to set 'binary_data': ${NON.bool}`);
        if (p.binary_data) throw invalid("Output can't set both 'shared_memory_region' and 'binary_data'");
      }
    }
    if (!isObject(item)) throw internal(`Unable to parse 'name': ${missing('name')}`);
    const name = memberString(item, 'name');
    for (const prev of outputs) {
      if (prev.name === name) throw invalid(`${rid}output '${name}' already exists in request`);
    }
    let classification = 0;
    if (p !== undefined && p.classification !== undefined) {
      const n = uintOf(p.classification);
      if (n === undefined) throw internal(`Unable to set 'classification': ${NON.uint}`);
      classification = n;
    }
    const shm = checkSharedMemory(p, regions);
    let binary: boolean | undefined;
    if (p !== undefined && p.binary_data !== undefined) {
      if (typeof p.binary_data !== 'boolean') throw internal(`Unable to parse 'binary_data': ${NON.bool}`);
      binary = p.binary_data;
    }
    outputs.push({ name, binary, classification, parameters: scalarParams(p), ...(shm !== undefined ? { shm } : {}) });
  }
  // An empty list asks for nothing in particular: every output, as when absent.
  return outputs.length === 0 ? null : outputs;
}
