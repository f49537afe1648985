/**
 * What a codec pool thread does with a task (codec-worker.ts is its entry):
 * the same decode/encode functions the HTTP thread runs inline, with every
 * error caught and returned as its code and message (so the HTTP thread
 * answers exactly what the inline path answers: same text, same status),
 * and the result's buffers listed for transfer (no copy back).
 */
import { toErrorInfo, type ErrorInfo } from '../../core/errors';
import type { Arena } from '../../dataplane/arena';
import type { DecodedRequest } from '../../request/decoded-request';
import { decodeRequestBody, type BodyDecodeTask } from './request-body-decode';
import { encodeResponseBody, type ResponseBody, type ResponseEncodeTask } from './response-body';

export type CodecResult<T> = { ok: true; value: T } | { ok: false; error: ErrorInfo };

export interface Packed<T> {
  result: CodecResult<T>;
  /** The ArrayBuffers to transfer with the result (each listed once). */
  transfer: ArrayBuffer[];
}

/**
 * Smaller Buffers may live in Node's shared pool slab, which must not be
 * transferred (it would detach every other Buffer in it); such a view is
 * copied instead (structured clone would copy its whole backing store).
 */
export const MIN_TRANSFER_BYTES = Buffer.poolSize >>> 1;

/** `bytes` itself when its ArrayBuffer can move, else a copy that owns an exact-sized one; the buffer to transfer is added. */
export function movable(bytes: Uint8Array, transfer: Set<ArrayBuffer>): Uint8Array {
  if (bytes.byteLength < MIN_TRANSFER_BYTES || !(bytes.buffer instanceof ArrayBuffer)) {
    const own = new Uint8Array(bytes);
    if (own.byteLength >= MIN_TRANSFER_BYTES) transfer.add(own.buffer);
    return own;
  }
  transfer.add(bytes.buffer);
  return bytes;
}

export function runDecodeTask(task: BodyDecodeTask): Packed<DecodedRequest> {
  try {
    const decoded = decodeRequestBody(task);
    const transfer = new Set<ArrayBuffer>();
    for (const input of decoded.inputs) input.data = movable(input.data, transfer);
    return { result: { ok: true, value: decoded }, transfer: [...transfer] };
  } catch (err) {
    return { result: { ok: false, error: toErrorInfo(err) }, transfer: [] };
  }
}

export function runEncodeTask(arena: Arena, task: ResponseEncodeTask): Packed<ResponseBody> {
  try {
    const encoded = encodeResponseBody(arena, task);
    const transfer = new Set<ArrayBuffer>();
    encoded.body = movable(encoded.body, transfer);
    return { result: { ok: true, value: encoded }, transfer: [...transfer] };
  } catch (err) {
    return { result: { ok: false, error: toErrorInfo(err) }, transfer: [] };
  }
}
