/**
 * gRPC typed tensor contents (`InferTensorContents`) → the binary layout the
 * rest of the server uses: little-endian elements, BYTES elements each with
 * a 4-byte little-endian length prefix (protocol.md §2.3, input rule 3).
 * 8/16-bit integer types keep the low bytes of their 32-bit field values.
 * BYTES from the server's wire decoder arrive already in that layout
 * (`bytes_serialized`) and pass through as they are.
 */
import { isDataType, wireDataTypeHint } from '../../core/datatypes';
import { ServerError } from '../../core/errors';
import type { InferTensorContentsMsg } from './proto-types';

type ContentsField = Exclude<keyof InferTensorContentsMsg, 'bytes_serialized'>;

/** The datatype each typed field natively holds (named in errors), and the datatypes it may carry. */
const FIELDS: readonly { field: ContentsField; native: string; accepts: readonly string[] }[] = [
  { field: 'bool_contents', native: 'BOOL', accepts: ['BOOL'] },
  { field: 'int_contents', native: 'INT32', accepts: ['INT8', 'INT16', 'INT32'] },
  { field: 'int64_contents', native: 'INT64', accepts: ['INT64'] },
  { field: 'uint_contents', native: 'UINT32', accepts: ['UINT8', 'UINT16', 'UINT32'] },
  { field: 'uint64_contents', native: 'UINT64', accepts: ['UINT64'] },
  { field: 'fp32_contents', native: 'FP32', accepts: ['FP32'] },
  { field: 'fp64_contents', native: 'FP64', accepts: ['FP64'] },
  { field: 'bytes_contents', native: 'BYTES', accepts: ['BYTES'] },
];

/** Elements a typed field holds; BYTES either as per-element Buffers (proto-loader) or already serialized (our wire decoder). */
function elementCount(c: InferTensorContentsMsg, field: ContentsField): number {
  if (field === 'bytes_contents') return c.bytes_serialized?.count ?? c.bytes_contents?.length ?? 0;
  return c[field]?.length ?? 0;
}

/** True when any typed field holds elements (proto3 cannot tell an empty list from an absent one). */
export function hasContents(contents: InferTensorContentsMsg | null | undefined): contents is InferTensorContentsMsg {
  if (!contents) return false;
  return FIELDS.some((f) => elementCount(contents, f.field) > 0);
}

/** Serializes the one typed field that is set; errors name the input and model. */
export function contentsToBytes(contents: InferTensorContentsMsg, datatype: string, input: string, model: string): Uint8Array {
  const what = `for input tensor '${input}' for model '${model}'`;
  let chosen: (typeof FIELDS)[number] | undefined;
  for (const f of FIELDS) {
    if (elementCount(contents, f.field) === 0) continue;
    if (chosen !== undefined) {
      throw new ServerError('INVALID_ARG', `unexpected explicit tensor data ${what}, binary data was already supplied.`);
    }
    chosen = f;
  }
  if (chosen === undefined) return new Uint8Array(0);
  if (!chosen.accepts.includes(datatype)) {
    throw new ServerError(
      'INVALID_ARG',
      `unexpected explicit tensor data ${what} of type '${chosen.native}', expected datatype '${datatype}'${isDataType(datatype) ? '' : `. ${wireDataTypeHint(datatype)}`}`,
    );
  }
  return serialize(contents, chosen.field, datatype);
}

function serialize(c: InferTensorContentsMsg, field: ContentsField, datatype: string): Uint8Array {
  switch (field) {
    case 'bool_contents':
      return Uint8Array.from(c.bool_contents, (b) => (b ? 1 : 0));
    case 'int_contents':
    case 'uint_contents': {
      const values = c[field];
      const size = datatype.endsWith('8') ? 1 : datatype.endsWith('16') ? 2 : 4;
      const out = new Uint8Array(values.length * size);
      const view = new DataView(out.buffer);
      for (let k = 0; k < values.length; k++) {
        const v = values[k];
        if (size === 1) out[k] = v & 0xff;
        else if (size === 2) view.setUint16(k * 2, v & 0xffff, true);
        else view.setUint32(k * 4, v >>> 0, true);
      }
      return out;
    }
    case 'int64_contents':
    case 'uint64_contents': {
      const values = c[field];
      const out = new Uint8Array(values.length * 8);
      const view = new DataView(out.buffer);
      for (let k = 0; k < values.length; k++) view.setBigUint64(k * 8, BigInt.asUintN(64, BigInt(values[k])), true);
      return out;
    }
    case 'fp32_contents': {
      const out = new Uint8Array(c.fp32_contents.length * 4);
      const view = new DataView(out.buffer);
      c.fp32_contents.forEach((v, k) => view.setFloat32(k * 4, v, true));
      return out;
    }
    case 'fp64_contents': {
      const out = new Uint8Array(c.fp64_contents.length * 8);
      const view = new DataView(out.buffer);
      c.fp64_contents.forEach((v, k) => view.setFloat64(k * 8, v, true));
      return out;
    }
    case 'bytes_contents': {
      if (c.bytes_serialized !== undefined) return c.bytes_serialized.data;
      let total = 0;
      for (const b of c.bytes_contents) total += 4 + b.byteLength;
      const out = new Uint8Array(total);
      const view = new DataView(out.buffer);
      let pos = 0;
      for (const b of c.bytes_contents) {
        view.setUint32(pos, b.byteLength, true);
        out.set(b, pos + 4);
        pos += 4 + b.byteLength;
      }
      return out;
    }
    default:
      return new Uint8Array(0);
  }
}
