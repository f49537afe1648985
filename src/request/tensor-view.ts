/**
 * Typed views over tensor bytes. The bytes may live in a SharedArrayBuffer
 * (the arena) at any byte offset; typed arrays need an offset aligned to the
 * element size, so unaligned data is copied into a fresh buffer first.
 * Tensors are little-endian, as is every platform Node runs on here.
 */
import type { DataType } from '../core/datatypes';

export type NumericView =
  Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array | Float32Array | Float64Array | BigInt64Array | BigUint64Array;

interface TypedCtor<T> {
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): T;
  readonly BYTES_PER_ELEMENT: number;
}

function view<T>(ctor: TypedCtor<T>, data: Uint8Array, count: number): T {
  if (data.byteOffset % ctor.BYTES_PER_ELEMENT === 0) return new ctor(data.buffer, data.byteOffset, count);
  const copy = new Uint8Array(count * ctor.BYTES_PER_ELEMENT);
  copy.set(data.subarray(0, copy.byteLength));
  return new ctor(copy.buffer, 0, count);
}

/**
 * A typed array of `count` elements over `data` (which must hold at least
 * count × element size bytes); undefined for BOOL, BYTES, FP16 and BF16.
 */
export function numericView(datatype: DataType, data: Uint8Array, count: number): NumericView | undefined {
  switch (datatype) {
    case 'UINT8':
      return view(Uint8Array, data, count);
    case 'INT8':
      return view(Int8Array, data, count);
    case 'UINT16':
      return view(Uint16Array, data, count);
    case 'INT16':
      return view(Int16Array, data, count);
    case 'UINT32':
      return view(Uint32Array, data, count);
    case 'INT32':
      return view(Int32Array, data, count);
    case 'UINT64':
      return view(BigUint64Array, data, count);
    case 'INT64':
      return view(BigInt64Array, data, count);
    case 'FP32':
      return view(Float32Array, data, count);
    case 'FP64':
      return view(Float64Array, data, count);
    default:
      return undefined;
  }
}

/**
 * The elements of a BYTES tensor as [offset, length] pairs into `data`, or
 * undefined when fewer than `count` whole elements are present.
 */
export function bytesElements(data: Uint8Array, count: number): Int32Array | undefined {
  const spans = new Int32Array(2 * count);
  const len = data.byteLength;
  let off = 0;
  for (let e = 0; e < count; e++) {
    if (off + 4 > len) return undefined;
    const n = (data[off] | (data[off + 1] << 8) | (data[off + 2] << 16) | (data[off + 3] << 24)) >>> 0;
    off += 4;
    if (off + n > len) return undefined;
    spans[2 * e] = off;
    spans[2 * e + 1] = n;
    off += n;
  }
  return spans;
}

/** Strings up to this many chars are tried as ASCII in a JS loop before calling into Buffer. */
const SHORT_STRING = 64;

/** True when `s` is at most SHORT_STRING chars, all ASCII (its UTF-8 length is its length). */
function shortAscii(s: string): boolean {
  const n = s.length;
  if (n > SHORT_STRING) return false;
  for (let k = 0; k < n; k++) if (s.charCodeAt(k) >= 0x80) return false;
  return true;
}

/** UTF-8 byte length of `s` (short ASCII strings without a call out of JS). */
export function utf8Length(s: string): number {
  return shortAscii(s) ? s.length : Buffer.byteLength(s, 'utf8');
}

/** Writes `s` as UTF-8 into `buf` at `at` (the room is there); returns the bytes written. */
export function writeUtf8(buf: Buffer, at: number, s: string): number {
  if (!shortAscii(s)) return buf.write(s, at, 'utf8');
  const n = s.length;
  for (let k = 0; k < n; k++) buf[at + k] = s.charCodeAt(k);
  return n;
}

/** Writes a BYTES element's 4-byte little-endian length at `at`. */
export function writeElementLength(buf: Uint8Array, at: number, n: number): void {
  buf[at] = n & 0xff;
  buf[at + 1] = (n >>> 8) & 0xff;
  buf[at + 2] = (n >>> 16) & 0xff;
  buf[at + 3] = n >>> 24;
}

/** Serialize strings as a BYTES tensor: 4-byte little-endian length + UTF-8 bytes each. */
export function encodeBytesTensor(elements: readonly string[]): Buffer {
  let size = 0;
  for (const s of elements) size += 4 + utf8Length(s);
  const out = Buffer.allocUnsafe(size);
  let off = 0;
  for (const s of elements) {
    const n = writeUtf8(out, off + 4, s);
    writeElementLength(out, off, n);
    off += 4 + n;
  }
  return out;
}

/** Tensors up to this size are decoded through one latin1 string of them (V8 strings stop at ~2^29 chars). */
const LATIN1_MAX_BYTES = 1 << 28;

/**
 * The elements of a serialized BYTES tensor as UTF-8-decoded strings,
 * appended to `out`; `invalid(what)` makes the error for a malformed stream.
 * An ASCII element is cut from one latin1 string of the whole tensor (its
 * byte offsets are char offsets there) instead of decoded by a call of its
 * own; other elements are decoded as UTF-8 one by one.
 */
export function decodeBytesElements(bytes: Uint8Array, out: string[], invalid: (what: 'length' | 'element') => Error): void {
  const len = bytes.byteLength;
  const view = new DataView(bytes.buffer, bytes.byteOffset, len);
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, len);
  const text = len <= LATIN1_MAX_BYTES ? buf.toString('latin1') : undefined;
  let pos = 0;
  while (pos < len) {
    if (pos + 4 > len) throw invalid('length');
    const n = view.getUint32(pos, true);
    pos += 4;
    const end = pos + n;
    if (end > len) throw invalid('element');
    let ascii = text !== undefined;
    for (let k = pos; ascii && k < end; k++) if (bytes[k] >= 0x80) ascii = false;
    out.push(ascii ? text!.substring(pos, end) : buf.toString('utf8', pos, end));
    pos = end;
  }
}
