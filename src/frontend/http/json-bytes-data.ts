/**
 * A BYTES input's JSON `data` (strings, nested arrays flattened in order,
 * depth <= 100) → Triton's serialized BYTES layout (each element a 4-byte
 * little-endian length, then its UTF-8 bytes), in one pass: each string is
 * written straight into one growing buffer, with no array of the strings
 * and no second pass to size them. Short ASCII strings (the usual element)
 * are copied char by char; others go through Buffer.write (tensor-view.ts
 * writeUtf8).
 *
 * Past `limit` bytes nothing more is written, only counted, so the caller
 * can name the whole byte size in its error (--http-max-input-size) without
 * the server holding more than the limit.
 */
import { ServerError } from '../../core/errors';
import { jsonDepthError, MAX_JSON_DEPTH } from '../../core/json-depth';
import { utf8Length, writeElementLength, writeUtf8 } from '../../request/tensor-view';

/** The first buffer's size at most; it doubles as it fills. */
const FIRST_BUFFER_MAX = 1 << 20;

// Fill state of the one conversion running on this thread (conversions are synchronous).
let out: Buffer = Buffer.alloc(0);
let pos = 0;
/** Bytes of the serialized tensor so far, written or (past the limit) only counted. */
let size = 0;
let cap = 0;

export interface SerializedJsonBytes {
  /** The serialized elements; empty once `byteSize` passed the limit. */
  data: Uint8Array;
  /** The serialized tensor's byte size (lengths included). */
  byteSize: number;
}

/**
 * `data` → serialized BYTES; throws the frontend's error for a leaf that is
 * not a string. `count`: the shape's element count, the first buffer's guess.
 */
export function serializeJsonStrings(data: unknown[], count: number, limit: number): SerializedJsonBytes {
  out = Buffer.allocUnsafe(Math.max(64, Math.min(FIRST_BUFFER_MAX, count * 8, limit + 1)));
  pos = 0;
  size = 0;
  cap = limit;
  try {
    writeStrings(data, 1);
    return { data: size > limit ? new Uint8Array(0) : out.subarray(0, pos), byteSize: size };
  } finally {
    out = Buffer.alloc(0); // nothing of the request stays reachable from here
  }
}

function writeStrings(arr: unknown[], depth: number): void {
  for (let i = 0, n = arr.length; i < n; i++) {
    const v = arr[i];
    if (Array.isArray(v)) {
      if (depth >= MAX_JSON_DEPTH) throw jsonDepthError();
      writeStrings(v, depth + 1);
      continue;
    }
    if (typeof v !== 'string') {
      throw new ServerError('INTERNAL', "Unable to parse 'data': attempt to access JSON non-string as string");
    }
    writeString(v);
  }
}

function writeString(s: string): void {
  if (size > cap) {
    size += 4 + utf8Length(s);
    return;
  }
  // UTF-8 takes at most 3 bytes per UTF-16 unit.
  if (pos + 4 + 3 * s.length > out.length) grow(4 + 3 * s.length);
  const n = writeUtf8(out, pos + 4, s);
  writeElementLength(out, pos, n);
  pos += 4 + n;
  size = pos;
}

/** A buffer with room for `need` more bytes after `pos`, the bytes so far copied over. */
function grow(need: number): void {
  let length = Math.max(64, out.length * 2);
  while (length < pos + need) length *= 2;
  const next = Buffer.allocUnsafe(length);
  out.copy(next, 0, 0, pos);
  out = next;
}
