/**
 * One table for the three names a tensor element type has here: the ONNX
 * `TensorProto.DataType` number (onnx.proto), the Triton datatype, and the
 * onnxruntime-node tensor type string. Types Triton has no datatype for
 * (complex, float8, 4-bit) map to null; so does BF16 on the ORT side, which
 * the Node binding cannot feed or fetch.
 */
import type { DataType } from '../../core/datatypes';

/** Tensor type strings of onnxruntime-node (`Tensor.Type`) that nodetron uses. */
export type OrtTensorType =
  'bool' | 'uint8' | 'uint16' | 'uint32' | 'uint64' | 'int8' | 'int16' | 'int32' | 'int64' | 'float16' | 'float32' | 'float64' | 'string';

interface ElemType {
  /** onnx.proto enum name, for messages. */
  onnxName: string;
  triton: DataType | null;
  ort: OrtTensorType | null;
}

const ONNX_ELEM_TYPES: Record<number, ElemType> = {
  1: { onnxName: 'FLOAT', triton: 'FP32', ort: 'float32' },
  2: { onnxName: 'UINT8', triton: 'UINT8', ort: 'uint8' },
  3: { onnxName: 'INT8', triton: 'INT8', ort: 'int8' },
  4: { onnxName: 'UINT16', triton: 'UINT16', ort: 'uint16' },
  5: { onnxName: 'INT16', triton: 'INT16', ort: 'int16' },
  6: { onnxName: 'INT32', triton: 'INT32', ort: 'int32' },
  7: { onnxName: 'INT64', triton: 'INT64', ort: 'int64' },
  8: { onnxName: 'STRING', triton: 'BYTES', ort: 'string' },
  9: { onnxName: 'BOOL', triton: 'BOOL', ort: 'bool' },
  10: { onnxName: 'FLOAT16', triton: 'FP16', ort: 'float16' },
  11: { onnxName: 'DOUBLE', triton: 'FP64', ort: 'float64' },
  12: { onnxName: 'UINT32', triton: 'UINT32', ort: 'uint32' },
  13: { onnxName: 'UINT64', triton: 'UINT64', ort: 'uint64' },
  14: { onnxName: 'COMPLEX64', triton: null, ort: null },
  15: { onnxName: 'COMPLEX128', triton: null, ort: null },
  16: { onnxName: 'BFLOAT16', triton: 'BF16', ort: null },
  17: { onnxName: 'FLOAT8E4M3FN', triton: null, ort: null },
  18: { onnxName: 'FLOAT8E4M3FNUZ', triton: null, ort: null },
  19: { onnxName: 'FLOAT8E5M2', triton: null, ort: null },
  20: { onnxName: 'FLOAT8E5M2FNUZ', triton: null, ort: null },
  21: { onnxName: 'UINT4', triton: null, ort: null },
  22: { onnxName: 'INT4', triton: null, ort: null },
  23: { onnxName: 'FLOAT4E2M1', triton: null, ort: null },
};

const DATATYPE_TO_ORT: Record<DataType, OrtTensorType | null> = {
  BOOL: 'bool',
  UINT8: 'uint8',
  UINT16: 'uint16',
  UINT32: 'uint32',
  UINT64: 'uint64',
  INT8: 'int8',
  INT16: 'int16',
  INT32: 'int32',
  INT64: 'int64',
  FP16: 'float16',
  FP32: 'float32',
  FP64: 'float64',
  BYTES: 'string',
  BF16: null,
};

/** Triton datatype of an ONNX elem type; null when Triton has none. */
export function onnxElemTypeToDataType(elemType: number): DataType | null {
  return ONNX_ELEM_TYPES[elemType]?.triton ?? null;
}

/** `FLOAT`, `INT64`, ...; `UNDEFINED` / `<elem type N>` for 0 and unknown numbers. */
export function onnxElemTypeName(elemType: number): string {
  if (elemType === 0) return 'UNDEFINED';
  return ONNX_ELEM_TYPES[elemType]?.onnxName ?? `<elem type ${elemType}>`;
}

/** Config enum name for an ONNX elem type (`TYPE_FP32`, `TYPE_STRING`); `TYPE_INVALID` when Triton has none. */
export function onnxElemTypeToConfigType(elemType: number): string {
  const dt = onnxElemTypeToDataType(elemType);
  if (dt === null) return 'TYPE_INVALID';
  return dt === 'BYTES' ? 'TYPE_STRING' : `TYPE_${dt}`;
}

/** onnxruntime-node tensor type for a Triton datatype; null where the Node binding has none (BF16). */
export function dataTypeToOrtType(dt: DataType): OrtTensorType | null {
  return DATATYPE_TO_ORT[dt];
}

/** Triton datatype of an onnxruntime-node tensor type string; null for types nodetron does not map. */
export function ortTypeToDataType(t: string): DataType | null {
  for (const [dt, ort] of Object.entries(DATATYPE_TO_ORT)) {
    if (ort === t) return dt as DataType;
  }
  return null;
}
