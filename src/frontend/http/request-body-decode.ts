/**
 * The CPU-heavy half of an HTTP inference request as one function, run
 * either inline on the HTTP thread or in that thread's codec pool
 * (codec-pool.ts, codec-worker.ts): inflate the body when Content-Encoding
 * says so (compression.ts), read Inference-Header-Content-Length, decode the
 * JSON header and tensor data (infer-request-decode.ts). A task is plain
 * data, so it crosses to a pool thread by structured clone (the body by
 * transfer).
 */
import type { DecodedRequest } from '../../request/decoded-request';
import type { ShmRegionTable } from '../../request/shm-regions';
import type { ValidationPlan } from '../../request/validation-plan';
import { decompressRequest } from './compression';
import { decodeInferRequest, parseHeaderLength } from './infer-request-decode';

export interface BodyDecodeTask {
  /** The body as received (arrives in a pool thread as a plain Uint8Array). */
  body: Uint8Array;
  /** Content-Encoding header, '' when absent. */
  contentEncoding: string;
  /** Inference-Header-Content-Length header text, '' when absent. */
  headerLength: string;
  plan: ValidationPlan;
  maxInputSize: number;
  regions?: ShmRegionTable;
}

export function decodeRequestBody(task: BodyDecodeTask): DecodedRequest {
  const raw = Buffer.isBuffer(task.body) ? task.body : Buffer.from(task.body.buffer, task.body.byteOffset, task.body.byteLength);
  const body = decompressRequest(raw, task.contentEncoding, task.maxInputSize);
  const headerLength = parseHeaderLength(task.headerLength === '' ? undefined : task.headerLength, body.length);
  return decodeInferRequest(body, headerLength, task.plan, task.maxInputSize, task.regions);
}

/**
 * A compressed byte counts as this many body bytes: it inflates to several
 * (gzip shrinks JSON tensor text 2-4x, repetitive data far more), which are
 * then inflated and parsed.
 */
const COMPRESSED_WEIGHT = 16;

/**
 * The work of a decode in bytes of JSON to parse, known before decoding:
 * for a compressed body its size, weighted; else its JSON part (the header
 * length when it is a valid one, 0 for a raw binary request; the whole body
 * when the header is absent or invalid, which then fails fast anyway).
 */
export function decodeWorkBytes(bodyLength: number, contentEncoding: string, headerLength: string): number {
  if (contentEncoding !== '' && contentEncoding !== 'identity') return COMPRESSED_WEIGHT * bodyLength;
  if (headerLength === '') return bodyLength;
  const n = Number(headerLength);
  return Number.isInteger(n) && n >= 0 && n <= bodyLength ? n : bodyLength;
}
