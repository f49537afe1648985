/**
 * Triton datatypes: the protocol strings (HTTP/gRPC `datatype`), the config
 * enum names (`TYPE_*`), and element sizes (protocol.md §3.1).
 */
export type DataType = 'BOOL' | 'UINT8' | 'UINT16' | 'UINT32' | 'UINT64' | 'INT8' | 'INT16' | 'INT32' | 'INT64' | 'FP16' | 'FP32' | 'FP64' | 'BYTES' | 'BF16';

export const DATATYPES: readonly DataType[] = [
  'BOOL',
  'UINT8',
  'UINT16',
  'UINT32',
  'UINT64',
  'INT8',
  'INT16',
  'INT32',
  'INT64',
  'FP16',
  'FP32',
  'FP64',
  'BYTES',
  'BF16',
];

/** Bytes per element; 0 for BYTES (variable: 4-byte LE length + data per element). */
export const ELEMENT_SIZE: Record<DataType, number> = {
  BOOL: 1,
  UINT8: 1,
  UINT16: 2,
  UINT32: 4,
  UINT64: 8,
  INT8: 1,
  INT16: 2,
  INT32: 4,
  INT64: 8,
  FP16: 2,
  FP32: 4,
  FP64: 8,
  BYTES: 0,
  BF16: 2,
};

const CONFIG_TO_PROTOCOL: Record<string, DataType> = {
  TYPE_BOOL: 'BOOL',
  TYPE_UINT8: 'UINT8',
  TYPE_UINT16: 'UINT16',
  TYPE_UINT32: 'UINT32',
  TYPE_UINT64: 'UINT64',
  TYPE_INT8: 'INT8',
  TYPE_INT16: 'INT16',
  TYPE_INT32: 'INT32',
  TYPE_INT64: 'INT64',
  TYPE_FP16: 'FP16',
  TYPE_FP32: 'FP32',
  TYPE_FP64: 'FP64',
  TYPE_STRING: 'BYTES',
  TYPE_BF16: 'BF16',
};

export function isDataType(s: string): s is DataType {
  return Object.prototype.hasOwnProperty.call(ELEMENT_SIZE, s);
}

/** `TYPE_FP32` → `FP32`; `TYPE_STRING` → `BYTES`; anything else → `<invalid>`. */
export function configTypeToDataType(t: string): DataType | '<invalid>' {
  return CONFIG_TO_PROTOCOL[t] ?? '<invalid>';
}

/** `FP32` → `TYPE_FP32`; `BYTES` → `TYPE_STRING`. */
export function dataTypeToConfigType(d: DataType): string {
  return d === 'BYTES' ? 'TYPE_STRING' : `TYPE_${d}`;
}

/** Number of elements of a shape (1 for a rank-0 shape). */
export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Byte size of a fixed-size tensor; -1 for BYTES (size depends on data). */
export function fixedByteSize(datatype: DataType, shape: readonly number[]): number {
  const size = ELEMENT_SIZE[datatype];
  return size === 0 ? -1 : size * elementCount(shape);
}

/** Other names people write for a datatype (numpy's, ONNX's, C's), upper-cased. */
const DATATYPE_ALIASES: Record<string, DataType> = {
  FLOAT: 'FP32',
  FLOAT32: 'FP32',
  FLOAT16: 'FP16',
  HALF: 'FP16',
  FLOAT64: 'FP64',
  DOUBLE: 'FP64',
  BFLOAT16: 'BF16',
  STRING: 'BYTES',
  BOOLEAN: 'BOOL',
};

/**
 * The datatype a misspelt one most likely means, whichever way it was
 * written: `TYPE_FP32`, `fp32`, `float32` → `FP32`; `TYPE_STRING` → `BYTES`.
 * Undefined when nothing fits.
 */
export function guessDataType(text: string): DataType | undefined {
  const upper = text.toUpperCase();
  const bare = upper.startsWith('TYPE_') ? upper.slice(5) : upper;
  if (bare === 'STRING') return 'BYTES';
  if (isDataType(bare)) return bare;
  return DATATYPE_ALIASES[bare];
}

/**
 * The sentence after "invalid datatype" errors of a request: the protocol's
 * spelling of what the client meant, or the list of datatypes.
 */
export function wireDataTypeHint(text: string): string {
  const meant = guessDataType(text);
  if (meant !== undefined && meant !== text) {
    const why = /^type_/i.test(text) ? ' is how config.pbtxt spells it;' : ' is not a protocol datatype;';
    return `'${text}'${why} in a request write '${meant}'.`;
  }
  return `'${text}' is not a datatype; use one of ${DATATYPES.join(', ')}.`;
}

/** The sentence after a config's unknown `data_type` value: config.pbtxt's spelling (`TYPE_FP32`), or undefined. */
export function configDataTypeHint(text: string): string | undefined {
  const meant = guessDataType(text);
  if (meant === undefined) return undefined;
  const spelling = dataTypeToConfigType(meant);
  if (spelling === text) return undefined;
  const why = isDataType(text) ? ` ('${text}' is how requests spell it)` : '';
  return `config.pbtxt spells it ${spelling}${why}.`;
}
