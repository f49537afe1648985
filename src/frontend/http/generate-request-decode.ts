/**
 * The generate extension's request body (Triton's extension_generate.md) →
 * a DecodedRequest, as Triton's HTTP frontend maps it: each top-level key
 * that names a model input becomes that input (a value or a 1-D array of
 * values; BYTES from strings), `parameters` is an object whose keys map the
 * same way, every other key is a request parameter (string, number or
 * bool), `id` is the request id. The input's shape is the model metadata's
 * (the batch dimension -1 first when max_batch_size > 0), its fixed
 * dimensions dividing the element count and the innermost variable one
 * taking what is left (the others 1). Every output comes back, as JSON.
 * Pure, so it is table-tested.
 */
import type { ParamValue } from '../../core/request';
import { ServerError, toErrorInfo } from '../../core/errors';
import type { DecodedInput, DecodedRequest } from '../../request/decoded-request';
import type { PlanInput, ValidationPlan } from '../../request/validation-plan';
import { parseRequestJson } from './request-json';
import { jsonTensorBytes } from './json-tensor-data';

type JsonObject = Record<string, unknown>;

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function invalid(message: string): ServerError {
  return new ServerError('INVALID_ARG', message);
}

export function decodeGenerateRequest(body: Buffer, contentEncoding: string, plan: ValidationPlan, maxInputSize: number): DecodedRequest {
  if (contentEncoding !== '' && contentEncoding.toLowerCase() !== 'identity') {
    throw invalid("Unsupported content-encoding, only 'identity' is supported.");
  }
  let doc: unknown;
  try {
    // Exact: integers past 2^53 stay bigints, as Triton's rapidjson keeps them (generate bodies are small).
    doc = parseRequestJson(body, body.length, true).doc;
  } catch (err) {
    throw invalid(`${toErrorInfo(err).message}: the generate request body must be one JSON object`);
  }
  if (!isObject(doc)) throw invalid(`the generate request body must be one JSON object, got ${jsonKind(doc)}`);
  let id = '';
  if (doc.id !== undefined) {
    if (typeof doc.id !== 'string') throw invalid(`Unable to parse 'id': the generate request's 'id' must be a string, got ${jsonKind(doc.id)}`);
    id = doc.id;
  }
  const byName = new Map(plan.inputs.map((i) => [i.name, i]));
  const inputs: DecodedInput[] = [];
  const parameters: Record<string, ParamValue> = {};
  const map = (key: string, value: unknown): void => {
    const input = byName.get(key);
    if (input === undefined) parameters[key] = parameterValue(key, value);
    else inputs.push(generateInput(input, value, plan, maxInputSize));
  };
  for (const key of Object.keys(doc)) {
    if (key === 'id' && !byName.has('id')) continue;
    if (key === 'parameters') {
      if (byName.has(key)) throw invalid("Keyword 'parameters' for nested schema also given as input tensor name");
      const nested = doc.parameters;
      if (!isObject(nested)) throw invalid(`Expected JSON object for keyword: 'parameters', got ${jsonKind(nested)}`);
      for (const k of Object.keys(nested)) map(k, nested[k]);
      continue;
    }
    map(key, doc[key]);
  }
  return { id, inputs, outputs: null, parameters, binaryDataOutput: false };
}

function parameterValue(key: string, v: unknown): ParamValue {
  if (typeof v === 'string' || typeof v === 'boolean' || typeof v === 'bigint' || (typeof v === 'number' && Number.isFinite(v))) return v;
  throw invalid(
    `parameter '${key}' has invalid type. It should be either 'int', 'bool', or 'string'. (It is ${jsonKind(v)}; a key of the generate request that names no model input is a request parameter.)`,
  );
}

/** One input from its key's value: a scalar is one element, an array its elements. */
function generateInput(input: PlanInput, value: unknown, plan: ValidationPlan, maxInputSize: number): DecodedInput {
  const name = input.name;
  const data = Array.isArray(value) ? value : [value];
  for (const v of data) {
    if (Array.isArray(v) || isObject(v) || v === null) {
      throw invalid(
        `input '${name}' of model '${plan.modelName}' takes a value or a 1-D array of values in a generate request, got an array holding ${jsonKind(v)}`,
      );
    }
  }
  const shape = generateShape(name, plan.maxBatchSize > 0 ? [-1, ...input.dims] : [...input.dims], data.length);
  let bytes: Uint8Array;
  try {
    bytes = data.length === 0 ? new Uint8Array(0) : jsonTensorBytes(name, input.datatype, data, data.length, maxInputSize);
  } catch (err) {
    const info = toErrorInfo(err);
    if (info.code !== 'INTERNAL') throw err;
    throw invalid(`${info.message}: input '${name}' of model '${plan.modelName}' is ${input.datatype}, give ${expected(input.datatype)}`);
  }
  return { name, datatype: input.datatype, shape, data: bytes, parameters: {} };
}

/**
 * Triton's two passes over the metadata shape: the fixed dimensions divide
 * the element count, the innermost -1 takes what remains, other -1s are 1.
 */
export function generateShape(name: string, dims: readonly number[], count: number): number[] {
  const shape = [...dims];
  const cannot = (): ServerError =>
    invalid(`The schema can not convert input '${name}' to tensor with proper shape: ${count} element(s) do not fill shape [${dims.join(',')}]`);
  let left = count;
  for (const d of shape) {
    if (d === -1) continue;
    if (d === 0 ? left !== 0 : left % d !== 0) throw cannot();
    if (d !== 0) left /= d;
  }
  for (let k = shape.length - 1; k >= 0; k--) {
    if (shape[k] !== -1) continue;
    shape[k] = left;
    left = 1;
  }
  if (left !== 1 && !(count === 0 && left === 0)) throw cannot();
  return shape;
}

function expected(datatype: string): string {
  if (datatype === 'BYTES') return 'a string or an array of strings';
  if (datatype === 'BOOL') return 'true/false or an array of them';
  return 'a number or an array of numbers';
}

function jsonKind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'number' && !Number.isFinite(v)) return 'a non-finite number';
  return `a ${typeof v}`;
}
