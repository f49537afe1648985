/**
 * Typed views over tensor bytes. The bytes may live in a SharedArrayBuffer
 * (the arena) at any byte offset; typed arrays need an offset aligned to the
 * element size, so unaligned data is copied into a fresh buffer first.
 * Tensors are little-endian, as is every platform Node runs on here.
 */
import type { DataType } from '../core/datatypes';

export type NumericView =
  | Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array
  | Float32Array | Float64Array | BigInt64Array | BigUint64Array;

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

/** Serialize strings as a BYTES tensor: 4-byte little-endian length + UTF-8 bytes each. */
export function encodeBytesTensor(elements: readonly string[]): Buffer {
  let size = 0;
  for (const s of elements) size += 4 + Buffer.byteLength(s, 'utf8');
  const out = Buffer.allocUnsafe(size);
  let off = 0;
  for (const s of elements) {
    const n = out.write(s, off + 4, 'utf8');
    out.writeUInt32LE(n, off);
    off += 4 + n;
  }
  return out;
}
