/**
 * Moving tensor bytes between the shared arena and onnxruntime-node tensors:
 * gather the requests of a batch into one input per name, and scatter each
 * output back to the requests as arena allocations.
 *
 * onnxruntime-node rejects typed arrays over a SharedArrayBuffer ("Invalid
 * argument"), so inputs are always copied once, into a per-input scratch
 * buffer that is reused across executions (one execution at a time). BYTES
 * travel as Triton's serialization in the arena (4-byte LE length + bytes per
 * element) and as JS strings in ORT: element bytes are UTF-8 decoded, so
 * non-UTF-8 bytes do not round-trip through a string tensor.
 */
import { Tensor } from 'onnxruntime-node';
import type { DataType } from '../../core/datatypes';
import { ELEMENT_SIZE, elementCount } from '../../core/datatypes';
import { ServerError } from '../../core/errors';
import type { Arena } from '../../dataplane/arena';
import type { TensorRef } from '../../core/request';
import type { OrtTensorType } from './ort-types';
import { decodeBytesElements, utf8Length, writeElementLength, writeUtf8 } from '../../request/tensor-view';

type TypedArrayCtor = new (buffer: ArrayBufferLike, byteOffset: number, length: number) => Tensor['data'];

const g = globalThis as { Float16Array?: TypedArrayCtor };
/** onnxruntime-common uses Float16Array for float16 where the runtime has it, else Uint16Array (same bytes). */
const FLOAT16_ARRAY: TypedArrayCtor = g.Float16Array ?? (Uint16Array as unknown as TypedArrayCtor);

const TYPED_ARRAYS: Record<Exclude<OrtTensorType, 'string'>, TypedArrayCtor> = {
  bool: Uint8Array as unknown as TypedArrayCtor,
  uint8: Uint8Array as unknown as TypedArrayCtor,
  uint16: Uint16Array as unknown as TypedArrayCtor,
  uint32: Uint32Array as unknown as TypedArrayCtor,
  uint64: BigUint64Array as unknown as TypedArrayCtor,
  int8: Int8Array as unknown as TypedArrayCtor,
  int16: Int16Array as unknown as TypedArrayCtor,
  int32: Int32Array as unknown as TypedArrayCtor,
  int64: BigInt64Array as unknown as TypedArrayCtor,
  float16: FLOAT16_ARRAY,
  float32: Float32Array as unknown as TypedArrayCtor,
  float64: Float64Array as unknown as TypedArrayCtor,
};

/** What the gatherer needs to know about one config input. */
export interface InputSpec {
  name: string;
  datatype: DataType;
  ortType: OrtTensorType;
  /** reshape.shape from the config (without the batch dim), or null. */
  reshape: number[] | null;
}

/** Builds ORT input tensors from a batch's requests; owns the reusable scratch buffers. */
export class InputGatherer {
  private readonly scratch = new Map<string, ArrayBuffer>();

  constructor(
    private readonly model: string,
    private readonly batching: boolean,
  ) {}

  /** One tensor holding every request's `spec.name` input, stacked along the batch dim. */
  gather(spec: InputSpec, refs: TensorRef[], arena: Arena): Tensor {
    const first = refs[0];
    const itemShape = this.batching ? first.shape.slice(1) : first.shape;
    const batch = this.batching ? refs.reduce((n, r) => n + r.shape[0], 0) : 0;
    const modelItemShape = spec.reshape === null ? itemShape : resolveReshape(spec.reshape, elementCount(itemShape));
    const dims = this.batching ? [batch, ...modelItemShape] : modelItemShape;
    if (spec.ortType === 'string') {
      const strings: string[] = [];
      for (const r of refs) decodeBytesTensor(arena.bytes(r.offset, r.byteSize), strings);
      this.checkCount(spec, strings.length, dims);
      return new Tensor('string', strings, dims);
    }
    let total = 0;
    for (const r of refs) total += r.byteSize;
    const buffer = this.scratchFor(spec.name, total);
    const target = new Uint8Array(buffer, 0, total);
    let pos = 0;
    for (const r of refs) {
      target.set(arena.bytes(r.offset, r.byteSize), pos);
      pos += r.byteSize;
    }
    const size = ELEMENT_SIZE[spec.datatype];
    this.checkCount(spec, total / size, dims);
    return new Tensor(spec.ortType, new TYPED_ARRAYS[spec.ortType](buffer, 0, total / size), dims);
  }

  private checkCount(spec: InputSpec, count: number, dims: number[]): void {
    if (count !== elementCount(dims)) {
      throw new ServerError(
        'INVALID_ARG',
        `input '${spec.name}' of model '${this.model}': the batch holds ${count} elements, expected ${elementCount(dims)} for shape [${dims.join(',')}]`,
      );
    }
  }

  private scratchFor(name: string, bytes: number): ArrayBuffer {
    let buffer = this.scratch.get(name);
    if (buffer === undefined || buffer.byteLength < bytes) {
      // Grow geometrically so a batch-size ramp does not reallocate each time.
      buffer = new ArrayBuffer(Math.max(bytes, 2 * (buffer?.byteLength ?? 0), 64));
      this.scratch.set(name, buffer);
    }
    return buffer;
  }
}

/** Fills the one -1 of a reshape from the element count it must hold. */
function resolveReshape(shape: number[], count: number): number[] {
  const known = shape.reduce((n, d) => (d === -1 ? n : n * d), 1);
  return shape.map((d) => (d === -1 ? (known === 0 ? 0 : count / known) : d));
}

/** Appends the elements of a Triton-serialized BYTES tensor to `out` as UTF-8 strings. */
export function decodeBytesTensor(bytes: Uint8Array, out: string[]): void {
  decodeBytesElements(
    bytes,
    out,
    (what) =>
      new ServerError(
        'INVALID_ARG',
        what === 'length' ? 'BYTES tensor data ends inside an element length' : 'BYTES tensor element runs past the end of the tensor data',
      ),
  );
}

/** Bytes Triton's BYTES serialization of these strings needs. */
function serializedSize(strings: readonly string[], from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) n += 4 + utf8Length(strings[i]);
  return n;
}

/**
 * Writes one output's slice for each request into the arena. `rows[i]` is the
 * batch size of request i (null: not batching, the whole tensor goes to the
 * one request). Requests whose `include[i]` is false get null (they did not
 * ask for this output). On failure frees what it allocated.
 */
export function scatterOutput(
  name: string,
  datatype: DataType,
  tensor: Tensor,
  rows: number[] | null,
  include: readonly boolean[],
  itemShapeOverride: number[] | null,
  arena: Arena,
): (TensorRef | null)[] {
  const dims = tensor.dims.map(Number);
  const itemDims = rows === null ? dims : dims.slice(1);
  const shapeOf = (n: number): number[] => (rows === null ? (itemShapeOverride ?? dims) : [n, ...(itemShapeOverride ?? itemDims)]);
  const perRow = elementCount(itemDims);
  const refs: (TensorRef | null)[] = [];
  try {
    let row = 0;
    for (const [i, n] of (rows ?? [1]).entries()) {
      const from = rows === null ? 0 : row * perRow;
      const to = rows === null ? elementCount(dims) : (row + n) * perRow;
      row += n;
      if (!include[i]) {
        refs.push(null);
        continue;
      }
      refs.push(
        datatype === 'BYTES'
          ? writeStrings(name, tensor.data as string[], from, to, shapeOf(n), arena)
          : writeFixed(name, datatype, tensor.data as Exclude<Tensor['data'], string[]>, from, to, shapeOf(n), arena),
      );
    }
  } catch (err) {
    for (const r of refs) if (r !== null) arena.free(r);
    throw err;
  }
  return refs;
}

function writeFixed(name: string, datatype: DataType, data: ArrayBufferView, from: number, to: number, shape: number[], arena: Arena): TensorRef {
  const size = ELEMENT_SIZE[datatype];
  const byteSize = (to - from) * size;
  const src = new Uint8Array(data.buffer, data.byteOffset + from * size, byteSize);
  const { offset, gen } = arena.alloc(byteSize);
  arena.bytes(offset, byteSize).set(src);
  return { name, datatype, shape, offset, gen, byteSize };
}

function writeStrings(name: string, strings: string[], from: number, to: number, shape: number[], arena: Arena): TensorRef {
  const byteSize = serializedSize(strings, from, to);
  const { offset, gen } = arena.alloc(byteSize);
  const out = arena.buffer(offset, byteSize);
  let pos = 0;
  for (let i = from; i < to; i++) {
    const len = writeUtf8(out, pos + 4, strings[i]);
    writeElementLength(out, pos, len);
    pos += 4 + len;
  }
  return { name, datatype: 'BYTES', shape, offset, gen, byteSize };
}
