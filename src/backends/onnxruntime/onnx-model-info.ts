/**
 * Reads an .onnx file's graph inputs and outputs (name, element type, dims)
 * without loading onnxruntime: a minimal protobuf wire-format walk over
 * ModelProto.graph, so the main thread can auto-complete and check configs
 * cheaply. Large tensors (initializer data) are skipped by offset, never read:
 * the file is read through a small window, so a multi-GB model costs a few
 * reads.
 *
 * Field numbers (onnx.proto): ModelProto.graph = 7; GraphProto.initializer =
 * 5, input = 11, output = 12, sparse_initializer = 15; TensorProto.name = 8;
 * SparseTensorProto.values = 1; ValueInfoProto name = 1, type = 2; TypeProto
 * tensor_type = 1, sequence_type = 4, map_type = 5, sparse_tensor_type = 8,
 * optional_type = 9; TypeProto.Tensor elem_type = 1, shape = 2;
 * TensorShapeProto.dim = 1; Dimension dim_value = 1, dim_param = 2.
 */
import fs from 'node:fs';
import type { DataType } from '../../core/datatypes';
import { onnxElemTypeToDataType } from './ort-types';

export type OnnxValueKind = 'tensor' | 'sparse_tensor' | 'sequence' | 'map' | 'optional' | 'unknown';

export interface OnnxTensorInfo {
  name: string;
  kind: OnnxValueKind;
  /** ONNX TensorProto.DataType number; 0 when not a (sparse) tensor or not given. */
  elemType: number;
  /** Triton datatype of elemType; null when Triton has none. */
  datatype: DataType | null;
  /** Dims with symbolic or unknown dims as -1; null when the model gives no shape (unknown rank). */
  dims: number[] | null;
}

export interface OnnxModelInfo {
  /** Graph inputs that are not initializers, in graph order: the inputs a caller must feed. */
  inputs: OnnxTensorInfo[];
  /** Graph inputs backed by an initializer: a caller may feed them (overriding the weight) or not. */
  overridableInitializers: OnnxTensorInfo[];
  outputs: OnnxTensorInfo[];
}

/** The bytes are not a well-formed ONNX ModelProto. */
export class OnnxParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OnnxParseError';
  }
}

/** Random access to the bytes of a model. */
interface ByteSource {
  readonly length: number;
  /** `len` bytes from `pos`; the view may be reused by the next call. */
  read(pos: number, len: number): Uint8Array;
}

class MemorySource implements ByteSource {
  constructor(private readonly data: Uint8Array) {}
  get length(): number {
    return this.data.length;
  }
  read(pos: number, len: number): Uint8Array {
    return this.data.subarray(pos, pos + len);
  }
}

/** Reads a file through a window, so skipped regions (weights) are never read. */
class FileSource implements ByteSource {
  private window = Buffer.alloc(64 * 1024);
  private winStart = 0;
  private winLen = 0;
  constructor(
    private readonly fd: number,
    readonly length: number,
  ) {}
  read(pos: number, len: number): Uint8Array {
    if (pos >= this.winStart && pos + len <= this.winStart + this.winLen) {
      return this.window.subarray(pos - this.winStart, pos - this.winStart + len);
    }
    if (len > this.window.length) this.window = Buffer.alloc(len);
    const want = Math.min(this.window.length, this.length - pos);
    let got = 0;
    while (got < want) {
      const n = fs.readSync(this.fd, this.window, got, want - got, pos + got);
      if (n === 0) break;
      got += n;
    }
    this.winStart = pos;
    this.winLen = got;
    return this.window.subarray(0, Math.min(len, got));
  }
}

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LEN = 2;
const WIRE_FIXED32 = 5;

/** One message's fields, between [pos, end) of the source. */
class FieldReader {
  field = 0;
  wire = 0;
  constructor(
    private readonly src: ByteSource,
    private pos: number,
    private readonly end: number,
  ) {}

  /** Advances to the next field's tag; false at the end of the message. */
  next(): boolean {
    if (this.pos >= this.end) return false;
    const tag = this.varint();
    this.field = Math.floor(tag / 8);
    this.wire = tag % 8;
    if (this.field === 0) throw new OnnxParseError(`invalid field number 0 at byte ${this.pos}`);
    return true;
  }

  /** A varint as a number; int64 values are sign-corrected (negative dims). */
  varint(): number {
    const bytes = this.src.read(this.pos, Math.min(10, this.end - this.pos));
    let value = 0;
    let i = 0;
    for (; i < bytes.length; i++) {
      const b = bytes[i];
      if (i < 7) value += (b & 0x7f) * 2 ** (7 * i);
      if ((b & 0x80) === 0) break;
    }
    if (i === bytes.length) throw new OnnxParseError(`truncated varint at byte ${this.pos}`);
    if (i >= 7) {
      // Beyond 49 bits: redo exactly with BigInt (negative int64s are 10 bytes).
      let big = 0n;
      for (let j = i; j >= 0; j--) big = (big << 7n) | BigInt(bytes[j] & 0x7f);
      value = Number(BigInt.asIntN(64, big));
    }
    this.pos += i + 1;
    return value;
  }

  /** The [start, end) of a length-delimited value, consumed. */
  span(): [number, number] {
    const len = this.varint();
    const start = this.pos;
    if (len < 0 || start + len > this.end) {
      throw new OnnxParseError(`field ${this.field} of length ${len} at byte ${start} runs past its message`);
    }
    this.pos = start + len;
    return [start, start + len];
  }

  string(): string {
    const [start, end] = this.span();
    return Buffer.from(this.src.read(start, end - start)).toString('utf8');
  }

  sub(): FieldReader {
    const [start, end] = this.span();
    return new FieldReader(this.src, start, end);
  }

  skip(): void {
    switch (this.wire) {
      case WIRE_VARINT:
        this.varint();
        return;
      case WIRE_FIXED64:
        this.advance(8);
        return;
      case WIRE_LEN:
        this.span();
        return;
      case WIRE_FIXED32:
        this.advance(4);
        return;
      default:
        throw new OnnxParseError(`unsupported wire type ${this.wire} for field ${this.field}`);
    }
  }

  /** Reads the current field as `wire`, or fails: a mismatched wire type means a corrupt file. */
  expect(wire: number): void {
    if (this.wire !== wire) {
      throw new OnnxParseError(`field ${this.field} has wire type ${this.wire}, expected ${wire}`);
    }
  }

  private advance(n: number): void {
    if (this.pos + n > this.end) throw new OnnxParseError(`truncated field ${this.field} at byte ${this.pos}`);
    this.pos += n;
  }
}

/** Parses ModelProto bytes held in memory. */
export function parseOnnxModelInfo(bytes: Uint8Array): OnnxModelInfo {
  return parseModel(new MemorySource(bytes));
}

/** Reads the graph inputs/outputs of an .onnx file. Throws OnnxParseError if it is not an ONNX model; fs errors as-is. */
export function readOnnxModelInfo(file: string): OnnxModelInfo {
  const fd = fs.openSync(file, 'r');
  try {
    return parseModel(new FileSource(fd, fs.fstatSync(fd).size));
  } finally {
    fs.closeSync(fd);
  }
}

function parseModel(src: ByteSource): OnnxModelInfo {
  const model = new FieldReader(src, 0, src.length);
  let info: OnnxModelInfo | null = null;
  while (model.next()) {
    if (model.field === 7) {
      model.expect(WIRE_LEN);
      info = parseGraph(model.sub());
    } else {
      model.skip();
    }
  }
  if (info === null) throw new OnnxParseError('the model has no graph');
  return info;
}

function parseGraph(graph: FieldReader): OnnxModelInfo {
  const inputs: OnnxTensorInfo[] = [];
  const outputs: OnnxTensorInfo[] = [];
  const initializers = new Set<string>();
  while (graph.next()) {
    switch (graph.field) {
      case 5:
        graph.expect(WIRE_LEN);
        initializers.add(tensorName(graph.sub()));
        break;
      case 15: {
        graph.expect(WIRE_LEN);
        const sparse = graph.sub();
        while (sparse.next()) {
          if (sparse.field === 1 && sparse.wire === WIRE_LEN) initializers.add(tensorName(sparse.sub()));
          else sparse.skip();
        }
        break;
      }
      case 11:
      case 12:
        graph.expect(WIRE_LEN);
        (graph.field === 11 ? inputs : outputs).push(parseValueInfo(graph.sub()));
        break;
      default:
        graph.skip();
    }
  }
  return {
    inputs: inputs.filter((i) => !initializers.has(i.name)),
    overridableInitializers: inputs.filter((i) => initializers.has(i.name)),
    outputs,
  };
}

function tensorName(tensor: FieldReader): string {
  let name = '';
  while (tensor.next()) {
    if (tensor.field === 8 && tensor.wire === WIRE_LEN) name = tensor.string();
    else tensor.skip();
  }
  return name;
}

function parseValueInfo(vi: FieldReader): OnnxTensorInfo {
  const info: OnnxTensorInfo = { name: '', kind: 'unknown', elemType: 0, datatype: null, dims: null };
  while (vi.next()) {
    if (vi.field === 1 && vi.wire === WIRE_LEN) info.name = vi.string();
    else if (vi.field === 2 && vi.wire === WIRE_LEN) parseType(vi.sub(), info);
    else vi.skip();
  }
  info.datatype = onnxElemTypeToDataType(info.elemType);
  return info;
}

const TYPE_KINDS: Record<number, OnnxValueKind> = { 1: 'tensor', 4: 'sequence', 5: 'map', 8: 'sparse_tensor', 9: 'optional' };

function parseType(type: FieldReader, info: OnnxTensorInfo): void {
  while (type.next()) {
    const kind = TYPE_KINDS[type.field];
    if (kind === undefined || type.wire !== WIRE_LEN) {
      type.skip();
      continue;
    }
    info.kind = kind;
    if (kind !== 'tensor' && kind !== 'sparse_tensor') {
      type.skip();
      continue;
    }
    // TypeProto.Tensor and TypeProto.SparseTensor share field numbers.
    const tensor = type.sub();
    while (tensor.next()) {
      if (tensor.field === 1 && tensor.wire === WIRE_VARINT) info.elemType = tensor.varint();
      else if (tensor.field === 2 && tensor.wire === WIRE_LEN) info.dims = parseShape(tensor.sub());
      else tensor.skip();
    }
  }
}

function parseShape(shape: FieldReader): number[] {
  const dims: number[] = [];
  while (shape.next()) {
    if (shape.field !== 1 || shape.wire !== WIRE_LEN) {
      shape.skip();
      continue;
    }
    const dim = shape.sub();
    let value = -1;
    while (dim.next()) {
      if (dim.field === 1 && dim.wire === WIRE_VARINT) {
        const v = dim.varint();
        value = v >= 0 ? v : -1;
      } else {
        // dim_param (symbolic) or denotation: the size stays variable.
        dim.skip();
      }
    }
    dims.push(value);
  }
  return dims;
}
