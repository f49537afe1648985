/**
 * `nodetron infer`'s tensors (pure): an --input's VALUE made into a request
 * tensor against the model's metadata (its datatype; its shape, with the
 * batch dimension added when the value leaves it out), and the response's
 * binary outputs decoded and printed, numpy-like for long ones.
 */
import { readNpy } from './npy';

export interface MetaTensor {
  name: string;
  datatype: string;
  shape: number[];
}

export interface InputTensor {
  name: string;
  datatype: string;
  shape: number[];
  /** JSON data, or raw little-endian bytes. */
  data: unknown[] | Uint8Array;
}

/** A file's bytes, by path (the caller reads files; this file stays pure). */
export type ReadFile = (path: string) => Uint8Array;

export function makeInput(model: string, meta: MetaTensor | undefined, name: string, value: string, readFile: ReadFile): InputTensor {
  if (meta === undefined) throw new Error(`model '${model}' has no input '${name}'`);
  if (value.startsWith('@')) {
    const file = value.slice(1);
    const bytes = readFile(file);
    if (file.endsWith('.npy')) {
      const a = readNpy(file, bytes);
      if (a.datatype !== meta.datatype) {
        throw new Error(
          `input '${name}' of model '${model}' is ${meta.datatype}, but ${file} holds ${a.datatype} (numpy ${a.descr}): convert it with a.astype(...)`,
        );
      }
      return { name, datatype: a.datatype, shape: withBatch(a.shape, meta), data: a.data };
    }
    if (meta.datatype !== 'BYTES') {
      throw new Error(
        `input '${name}' of model '${model}' is ${meta.datatype}: give a JSON literal or a .npy file (a file's raw bytes go only to a BYTES input)`,
      );
    }
    const data = new Uint8Array(4 + bytes.length);
    new DataView(data.buffer).setUint32(0, bytes.length, true);
    data.set(bytes, 4);
    return { name, datatype: 'BYTES', shape: withBatch([1], meta), data };
  }
  let literal: unknown;
  try {
    literal = JSON.parse(value);
  } catch {
    // A bare word for a BYTES input is its text.
    if (meta.datatype === 'BYTES') literal = value;
    else throw new Error(`--input ${name}=${value}: not a JSON literal (e.g. [1,2,3]), @file.npy or @file`);
  }
  const { flat, shape } = flatten(literal, name);
  return { name, datatype: meta.datatype, shape: withBatch(shape.length === 0 ? [1] : shape, meta), data: flat };
}

/** A value without the model's batch dimension gets one of 1. */
function withBatch(shape: number[], meta: MetaTensor): number[] {
  return meta.shape.length === shape.length + 1 && meta.shape[0] === -1 ? [1, ...shape] : shape;
}

function flatten(v: unknown, name: string): { flat: unknown[]; shape: number[] } {
  if (!Array.isArray(v)) return { flat: [v], shape: [] };
  if (v.length === 0) return { flat: [], shape: [0] };
  const parts = v.map((x) => flatten(x, name));
  const inner = JSON.stringify(parts[0]!.shape);
  if (parts.some((p) => JSON.stringify(p.shape) !== inner)) throw new Error(`--input ${name}: the nested lists are not all the same length`);
  return { flat: parts.flatMap((p) => p.flat), shape: [v.length, ...parts[0]!.shape] };
}

export interface OutputTensor {
  name: string;
  datatype: string;
  shape: number[];
  data: (number | bigint | boolean | string)[];
}

/** A binary output's bytes as values. */
export function decodeOutput(name: string, datatype: string, shape: number[], b: Uint8Array): OutputTensor {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const data: (number | bigint | boolean | string)[] = [];
  const each = (size: number, read: (at: number) => number | bigint | boolean): void => {
    for (let at = 0; at + size <= b.length; at += size) data.push(read(at));
  };
  switch (datatype) {
    case 'BOOL':
      each(1, (at) => b[at] !== 0);
      break;
    case 'UINT8':
      each(1, (at) => view.getUint8(at));
      break;
    case 'INT8':
      each(1, (at) => view.getInt8(at));
      break;
    case 'UINT16':
      each(2, (at) => view.getUint16(at, true));
      break;
    case 'INT16':
      each(2, (at) => view.getInt16(at, true));
      break;
    case 'UINT32':
      each(4, (at) => view.getUint32(at, true));
      break;
    case 'INT32':
      each(4, (at) => view.getInt32(at, true));
      break;
    case 'UINT64':
      each(8, (at) => view.getBigUint64(at, true));
      break;
    case 'INT64':
      each(8, (at) => view.getBigInt64(at, true));
      break;
    case 'FP16':
      each(2, (at) => half(view.getUint16(at, true)));
      break;
    case 'BF16':
      each(2, (at) => new Float32Array(new Uint32Array([view.getUint16(at, true) << 16]).buffer)[0]!);
      break;
    case 'FP32':
      each(4, (at) => view.getFloat32(at, true));
      break;
    case 'FP64':
      each(8, (at) => view.getFloat64(at, true));
      break;
    case 'BYTES':
      for (let at = 0; at + 4 <= b.length;) {
        const n = view.getUint32(at, true);
        data.push(Buffer.from(b.subarray(at + 4, at + 4 + n)).toString('utf8'));
        at += 4 + n;
      }
      break;
    default:
      break;
  }
  return { name, datatype, shape, data };
}

function half(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * 2 ** -14 * (f / 1024);
  if (e === 31) return f === 0 ? s * Infinity : NaN;
  return s * 2 ** (e - 15) * (1 + f / 1024);
}

function show(v: number | bigint | boolean | string): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' && !Number.isInteger(v)) return String(Number(v.toPrecision(6)));
  return String(v);
}

/** The values, whole up to 16 of them, else numpy-like: the first and last three, with the count and range of numbers. */
export function valuesText(t: OutputTensor): string {
  const d = t.data;
  if (d.length <= 16) return `[${d.map(show).join(', ')}]`;
  const head = `[${d.slice(0, 3).map(show).join(', ')}, ..., ${d.slice(-3).map(show).join(', ')}]`;
  const nums = d.filter((x): x is number => typeof x === 'number');
  if (nums.length !== d.length) return `${head} (${d.length} elements)`;
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  for (const x of nums) {
    if (x < min) min = x;
    if (x > max) max = x;
    sum += x;
  }
  return `${head} (${d.length} elements, min ${show(min)}, max ${show(max)}, mean ${show(sum / nums.length)})`;
}

export function outputsTable(outputs: readonly OutputTensor[]): string {
  const rows = [['output', 'datatype', 'shape', 'values'], ...outputs.map((o) => [o.name, o.datatype, `[${o.shape.join(',')}]`, valuesText(o)])];
  const widths = [0, 1, 2].map((c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => r.map((cell, c) => (c < 3 ? cell.padEnd(widths[c]!) : cell)).join('  ')).join('\n') + '\n';
}
