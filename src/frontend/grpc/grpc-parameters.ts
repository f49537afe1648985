/**
 * `InferParameter` maps of a ModelInferRequest → our ParamValue records, with
 * the gRPC frontend's accepted types and texts (protocol.md §2.3 "Request
 * parameters", tensor parameters). 64-bit values arrive as decimal strings
 * and stay exact (a bigint past 2^53) where their value matters.
 */
import { ServerError } from '../../core/errors';
import type { ParamValue } from '../../core/request';
import { resolveShm, type ShmRef, type ShmRegionTable } from '../../request/shm-regions';
import type { InferParameterMsg } from './proto-types';

const ALLOWED_TRITON_KEYS = ['triton_enable_empty_final_response'];

function invalid(message: string): ServerError {
  return new ServerError('INVALID_ARG', message);
}

/** An int64/uint64 decimal string as a JS number; values past 2^53 are refused rather than rounded. */
export function int64ToNumber(text: string, what: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw invalid(`value ${text} of '${what}' is outside the range nodetron supports (|v| <= 2^53-1)`);
  return n;
}

/** An int64/uint64 decimal string as a parameter value: a number while safe, else an exact bigint. */
export function int64Param(text: string): number | bigint {
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : BigInt(text);
}

/**
 * sequence_id's int64_param as Triton sets it: the correlation id is a
 * uint64, so the int64 is taken as its 64 bits (-1 is 2^64-1; a client
 * sends an id past 2^63 that way, as protobuf has no other int64 for it).
 */
function correlationIdOfInt64(text: string): number | bigint {
  const n = Number(text);
  if (Number.isSafeInteger(n) && n >= 0) return n;
  const u = BigInt.asUintN(64, BigInt(text));
  return u <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(u) : u;
}

/** A size-like uint64 (priority, timeout): past 2^53 the nearest double says the same. */
function sizeOf(text: string): number {
  return Number(text);
}

export interface RequestParameters {
  parameters: Record<string, ParamValue>;
  /** `triton_enable_empty_final_response` (ModelStreamInfer of decoupled models). */
  enableEmptyFinalResponse: boolean;
}

export function parseRequestParameters(params: Record<string, InferParameterMsg>): RequestParameters {
  const parameters: Record<string, ParamValue> = {};
  let enableEmptyFinalResponse = false;
  for (const key of Object.keys(params)) {
    const p = params[key];
    const choice = p.parameter_choice;
    switch (key) {
      case 'sequence_id':
        if (choice === 'int64_param') parameters.sequence_id = correlationIdOfInt64(p.int64_param!);
        else if (choice === 'string_param') {
          if (Buffer.byteLength(p.string_param!, 'utf8') > 128) {
            throw new ServerError('UNSUPPORTED', 'string correlation ID cannot be longer than 128 characters');
          }
          parameters.sequence_id = p.string_param!;
        } else throw invalid("invalid value type for 'sequence_id' parameter, expected int64_param or string_param.");
        break;
      case 'sequence_start':
      case 'sequence_end':
        if (choice !== 'bool_param') throw invalid(`invalid value type for '${key}' parameter, expected bool_param.`);
        parameters[key] = p.bool_param!;
        break;
      case 'priority':
        if (choice === 'int64_param') {
          const v = sizeOf(p.int64_param!);
          if (v < 0) throw invalid("invalid value for 'priority', expected value >= 0.");
          parameters.priority = v;
        } else if (choice === 'uint64_param') parameters.priority = sizeOf(p.uint64_param!);
        else throw invalid("invalid value type for 'priority' parameter, expected int64_param or uint64_param.");
        break;
      case 'timeout':
        if (choice !== 'int64_param') throw invalid("invalid value type for 'timeout' parameter, expected int64_param.");
        parameters.timeout = sizeOf(p.int64_param!);
        break;
      case 'triton_enable_empty_final_response':
        if (choice !== 'bool_param') throw invalid(`invalid value type for '${key}' parameter, expected bool_param.`);
        enableEmptyFinalResponse = p.bool_param!;
        break;
      case 'binary_data_output':
        // An HTTP notion: gRPC outputs are always raw (protocol.md §2.3), so it is accepted and has no effect.
        break;
      default:
        if (key.startsWith('triton_')) {
          throw invalid(
            "parameter keys starting with 'triton_' are reserved for Triton usage. Only the following keys starting " +
              `with 'triton_' are allowed: ${ALLOWED_TRITON_KEYS.join(' ')}`,
          );
        }
        parameters[key] = customValue(key, p);
    }
  }
  return { parameters, enableEmptyFinalResponse };
}

function customValue(key: string, p: InferParameterMsg): ParamValue {
  switch (p.parameter_choice) {
    case 'bool_param':
      return p.bool_param!;
    case 'string_param':
      return p.string_param!;
    case 'double_param':
      return p.double_param!;
    case 'int64_param':
      return int64Param(p.int64_param!);
    default:
      throw invalid(`invalid value type for '${key}' parameter, expected int64_param, bool_param, or string_param.`);
  }
}

/** Scalar tensor parameters as given (int64 as numbers); the shm ones are checked by checkSharedMemory. */
export function tensorParameters(params: Record<string, InferParameterMsg>): Record<string, ParamValue> {
  const out: Record<string, ParamValue> = {};
  for (const key of Object.keys(params)) {
    const p = params[key];
    if (p.parameter_choice === undefined) continue;
    const v = p[p.parameter_choice];
    if (v === undefined) continue;
    out[key] = typeof v === 'string' && (p.parameter_choice === 'int64_param' || p.parameter_choice === 'uint64_param') ? int64Param(v) : v;
  }
  return out;
}

/**
 * The shared-memory parameters of a tensor (protocol.md §2.3), resolved
 * against the registered regions (404/400 texts in shm-regions.ts);
 * undefined when the tensor names no region.
 */
export function checkSharedMemory(
  params: Record<string, InferParameterMsg>,
  tensor: string,
  hasContents: boolean,
  model: string,
  regions?: ShmRegionTable,
): ShmRef | undefined {
  const region = params.shared_memory_region;
  const offset = params.shared_memory_offset;
  const size = params.shared_memory_byte_size;
  if (region === undefined) {
    if (offset !== undefined) {
      throw invalid(`'shared_memory_offset' can not be specified without 'shared_memory_region' parameter for tensor '${tensor}'`);
    }
    if (size !== undefined) {
      throw invalid(`'shared_memory_byte_size' can not be specified without 'shared_memory_region' parameter for tensor '${tensor}'`);
    }
    return undefined;
  }
  if (region.parameter_choice !== 'string_param') {
    throw invalid(`invalid value type for 'shared_memory_region' parameter for tensor '${tensor}', expected string_param.`);
  }
  if (offset !== undefined && offset.parameter_choice !== 'int64_param') {
    throw invalid(`invalid value type for 'shared_memory_offset' parameter for tensor '${tensor}', expected int64_param.`);
  }
  if (size === undefined) {
    throw invalid(`'shared_memory_byte_size' must be specified along with 'shared_memory_region' parameter for tensor '${tensor}'`);
  }
  if (size.parameter_choice !== 'int64_param') {
    throw invalid(`invalid value type for 'shared_memory_byte_size' parameter for tensor '${tensor}', expected int64_param.`);
  }
  if (hasContents) {
    throw invalid(`unexpected 'content' provided when using shared memory for input tensor '${tensor}' for model '${model}'`);
  }
  const at = offset === undefined ? 0 : int64ToNumber(offset.int64_param!, 'shared_memory_offset');
  return resolveShm(regions, region.string_param ?? '', at, int64ToNumber(size.int64_param!, 'shared_memory_byte_size'));
}
