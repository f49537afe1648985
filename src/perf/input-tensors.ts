/**
 * The request tensors of a perf run, built once from the model's metadata and
 * the options: shape (batch dimension + `--shape` for variable dims) and
 * values (`zero`, `random`, or perf_analyzer's JSON data file, first entry).
 * Each tensor carries both its JSON values and its little-endian bytes.
 */
import fs from 'node:fs';

/** An input as the model metadata describes it. */
export interface InputInfo {
  name: string;
  datatype: string;
  /** Metadata shape, batch dimension included for batching models (-1). */
  shape: number[];
}

export interface PerfTensor {
  name: string;
  datatype: string;
  shape: number[];
  /** Flat values for JSON tensors. */
  values: (number | string | boolean)[];
  /** Raw bytes for the binary extension and gRPC raw_input_contents (BYTES: 4-byte length prefixes). */
  bytes: Buffer;
}

const SIZES: Record<string, number> = {
  BOOL: 1,
  UINT8: 1,
  INT8: 1,
  UINT16: 2,
  INT16: 2,
  FP16: 2,
  BF16: 2,
  UINT32: 4,
  INT32: 4,
  FP32: 4,
  UINT64: 8,
  INT64: 8,
  FP64: 8,
};

/** float32 → IEEE half bits, for values the tool generates ([0, 100)). */
function toHalf(v: number): number {
  if (v === 0) return 0;
  const f = new Float32Array([v]);
  const bits = new Uint32Array(f.buffer)[0]!;
  const exp = ((bits >>> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return 0;
  return ((bits >>> 16) & 0x8000) | (Math.min(exp, 30) << 10) | ((bits >>> 13) & 0x3ff);
}

function encode(datatype: string, values: (number | string | boolean)[]): Buffer {
  if (datatype === 'BYTES') {
    const parts = values.map((v) => Buffer.from(String(v)));
    const out = Buffer.alloc(parts.reduce((n, p) => n + 4 + p.length, 0));
    let o = 0;
    for (const p of parts) {
      out.writeUInt32LE(p.length, o);
      p.copy(out, o + 4);
      o += 4 + p.length;
    }
    return out;
  }
  const size = SIZES[datatype];
  if (size === undefined) throw new Error(`datatype ${datatype} is not supported by the perf tool`);
  const out = Buffer.alloc(values.length * size);
  values.forEach((raw, i) => {
    const v = Number(raw);
    const o = i * size;
    switch (datatype) {
      case 'BOOL':
      case 'UINT8':
        out.writeUInt8(v ? (datatype === 'BOOL' ? 1 : v) : 0, o);
        break;
      case 'INT8':
        out.writeInt8(v, o);
        break;
      case 'UINT16':
        out.writeUInt16LE(v, o);
        break;
      case 'INT16':
        out.writeInt16LE(v, o);
        break;
      case 'FP16':
        out.writeUInt16LE(toHalf(v), o);
        break;
      case 'BF16':
        out.writeUInt16LE(new Uint32Array(new Float32Array([v]).buffer)[0]! >>> 16, o);
        break;
      case 'UINT32':
        out.writeUInt32LE(v, o);
        break;
      case 'INT32':
        out.writeInt32LE(v, o);
        break;
      case 'FP32':
        out.writeFloatLE(v, o);
        break;
      case 'UINT64':
        out.writeBigUInt64LE(BigInt(Math.trunc(v)), o);
        break;
      case 'INT64':
        out.writeBigInt64LE(BigInt(Math.trunc(v)), o);
        break;
      case 'FP64':
        out.writeDoubleLE(v, o);
        break;
    }
  });
  return out;
}

function generate(datatype: string, count: number, mode: 'zero' | 'random'): (number | string | boolean)[] {
  const isFloat = datatype.startsWith('FP') || datatype === 'BF16';
  return Array.from({ length: count }, () => {
    if (datatype === 'BOOL') return mode === 'random' ? Math.random() < 0.5 : false;
    if (datatype === 'BYTES') return mode === 'random' ? String(Math.floor(Math.random() * 1000)) : '0';
    if (mode === 'zero') return 0;
    return isFloat ? Math.random() : Math.floor(Math.random() * 100);
  });
}

interface FileEntry {
  content?: unknown[];
  shape?: number[];
}

function fileData(file: string): Record<string, unknown> {
  let json: { data?: unknown[] };
  try {
    json = JSON.parse(fs.readFileSync(file, 'utf8')) as { data?: unknown[] };
  } catch (err) {
    throw new Error(`--input-data: cannot read ${file}: ${(err as Error).message}`);
  }
  const first = json.data?.[0];
  if (first === undefined || typeof first !== 'object') throw new Error(`--input-data: ${file} has no "data": [ {...} ] entry`);
  return first as Record<string, unknown>;
}

/**
 * `inputs` from metadata; `maxBatchSize` > 0 means the first metadata dim is
 * the batch dim. Variable dims must come from `--shape` or the data file.
 */
export function buildTensors(
  inputs: InputInfo[],
  maxBatchSize: number,
  opts: { batchSize: number; shapes: Map<string, number[]>; inputData: string },
): PerfTensor[] {
  if (maxBatchSize === 0 && opts.batchSize !== 1) throw new Error(`-b ${opts.batchSize}: the model does not support batching (max_batch_size 0)`);
  if (maxBatchSize > 0 && opts.batchSize > maxBatchSize) throw new Error(`-b ${opts.batchSize}: over the model's max_batch_size ${maxBatchSize}`);
  for (const name of opts.shapes.keys()) {
    if (!inputs.some((i) => i.name === name)) throw new Error(`--shape: the model has no input '${name}' (inputs: ${inputs.map((i) => i.name).join(', ')})`);
  }
  const file = opts.inputData === 'zero' || opts.inputData === 'random' ? undefined : fileData(opts.inputData);
  return inputs.map((info) => {
    const entry = file?.[info.name];
    if (file !== undefined && entry === undefined) throw new Error(`--input-data: no data for input '${info.name}' in ${opts.inputData}`);
    const fromFile: FileEntry | undefined = entry === undefined ? undefined : Array.isArray(entry) ? { content: entry } : (entry as FileEntry);
    const dims = maxBatchSize > 0 ? info.shape.slice(1) : info.shape;
    const shape = opts.shapes.get(info.name) ?? fromFile?.shape ?? dims;
    if (shape.length !== dims.length)
      throw new Error(`input '${info.name}': shape [${shape.join(',')}] has ${shape.length} dims, the model has ${dims.length} ([${dims.join(',')}])`);
    if (shape.some((d) => d < 0)) throw new Error(`input '${info.name}' has variable dims [${dims.join(',')}]; give them with --shape ${info.name}:d1,d2,...`);
    const sample = shape.reduce((a, b) => a * b, 1);
    let values: (number | string | boolean)[];
    if (fromFile !== undefined) {
      const content = ((fromFile.content ?? []) as unknown[]).flat(Infinity) as (number | string | boolean)[];
      if (content.length !== sample)
        throw new Error(`--input-data: input '${info.name}' has ${content.length} values, shape [${shape.join(',')}] needs ${sample}`);
      values = Array.from({ length: opts.batchSize }, () => content).flat();
    } else {
      values = generate(info.datatype, sample * opts.batchSize, opts.inputData as 'zero' | 'random');
    }
    const full = maxBatchSize > 0 ? [opts.batchSize, ...shape] : shape;
    return { name: info.name, datatype: info.datatype, shape: full, values, bytes: encode(info.datatype, values) };
  });
}
