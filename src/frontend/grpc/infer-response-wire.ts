/**
 * ModelInferResponse / ModelStreamInferResponse → protobuf bytes, directly:
 * sizes first, one Buffer allocated, each raw_output_contents entry copied
 * once (it may be a view into the arena that is freed right after). Replaces
 * protobufjs fromObject + encode on the inference path. Empty strings are
 * left out (proto3 defaults); oneof members and every raw_output_contents
 * entry, empty ones included, are always written.
 * Field numbers: proto/grpc_service.proto.
 */
import type { InferOutputTensorOut, InferParameterOut, ModelInferResponseOut, ModelStreamInferResponseOut } from './proto-types';
import { delimitedSize, int64Size, stringFieldSize, WireWriter } from './wire-writer';

// Tags: (field << 3) | wire type.
const TAG_MODEL_NAME = 0x0a; // 1, LEN
const TAG_MODEL_VERSION = 0x12; // 2, LEN
const TAG_ID = 0x1a; // 3, LEN
const TAG_PARAMETERS = 0x22; // 4, LEN (map entry)
const TAG_OUTPUTS = 0x2a; // 5, LEN
const TAG_RAW_OUTPUT = 0x32; // 6, LEN
const TAG_ENTRY_KEY = 0x0a; // map entry key = 1
const TAG_ENTRY_VALUE = 0x12; // map entry value = 2
const TAG_BOOL_PARAM = 0x08; // 1, VARINT
const TAG_INT64_PARAM = 0x10; // 2, VARINT
const TAG_STRING_PARAM = 0x1a; // 3, LEN
const TAG_DOUBLE_PARAM = 0x21; // 4, I64
const TAG_TENSOR_NAME = 0x0a; // InferOutputTensor.name = 1
const TAG_TENSOR_DATATYPE = 0x12; // .datatype = 2
const TAG_TENSOR_SHAPE = 0x1a; // .shape = 3, packed
const TAG_ERROR_MESSAGE = 0x0a; // ModelStreamInferResponse.error_message = 1
const TAG_INFER_RESPONSE = 0x12; // .infer_response = 2

function optionalStringSize(s: string): number {
  return s.length === 0 ? 0 : stringFieldSize(s);
}

function parameterSize(p: InferParameterOut): number {
  if (p.bool_param !== undefined) return 2;
  if (p.int64_param !== undefined) return 1 + int64Size(p.int64_param);
  if (p.string_param !== undefined) return stringFieldSize(p.string_param);
  if (p.double_param !== undefined) return 9;
  return 0;
}

function entrySize(key: string, p: InferParameterOut): number {
  return stringFieldSize(key) + delimitedSize(parameterSize(p));
}

function parametersSize(params: Record<string, InferParameterOut>): number {
  let n = 0;
  for (const key in params) n += delimitedSize(entrySize(key, params[key]));
  return n;
}

function shapeSize(shape: readonly number[]): number {
  let n = 0;
  for (const d of shape) n += int64Size(d);
  return n;
}

function tensorSize(t: InferOutputTensorOut): number {
  const shape = shapeSize(t.shape);
  return optionalStringSize(t.name) + optionalStringSize(t.datatype) + (shape > 0 ? delimitedSize(shape) : 0);
}

function responseSize(r: ModelInferResponseOut): number {
  let n = optionalStringSize(r.model_name) + optionalStringSize(r.model_version) + optionalStringSize(r.id) + parametersSize(r.parameters);
  for (const t of r.outputs) n += delimitedSize(tensorSize(t));
  for (const b of r.raw_output_contents) n += delimitedSize(b.byteLength);
  return n;
}

function writeOptionalString(w: WireWriter, tag: number, s: string): void {
  if (s.length > 0) w.stringField(tag, s);
}

function writeParameters(w: WireWriter, params: Record<string, InferParameterOut>): void {
  for (const key in params) {
    const p = params[key];
    w.byte(TAG_PARAMETERS);
    w.varint(entrySize(key, p));
    w.stringField(TAG_ENTRY_KEY, key);
    w.byte(TAG_ENTRY_VALUE);
    w.varint(parameterSize(p));
    if (p.bool_param !== undefined) {
      w.byte(TAG_BOOL_PARAM);
      w.byte(p.bool_param ? 1 : 0);
    } else if (p.int64_param !== undefined) {
      w.byte(TAG_INT64_PARAM);
      w.int64(p.int64_param);
    } else if (p.string_param !== undefined) {
      w.stringField(TAG_STRING_PARAM, p.string_param);
    } else if (p.double_param !== undefined) {
      w.byte(TAG_DOUBLE_PARAM);
      w.double(p.double_param);
    }
  }
}

function writeResponse(w: WireWriter, r: ModelInferResponseOut): void {
  writeOptionalString(w, TAG_MODEL_NAME, r.model_name);
  writeOptionalString(w, TAG_MODEL_VERSION, r.model_version);
  writeOptionalString(w, TAG_ID, r.id);
  writeParameters(w, r.parameters);
  for (const t of r.outputs) {
    w.byte(TAG_OUTPUTS);
    w.varint(tensorSize(t));
    writeOptionalString(w, TAG_TENSOR_NAME, t.name);
    writeOptionalString(w, TAG_TENSOR_DATATYPE, t.datatype);
    const shape = shapeSize(t.shape);
    if (shape > 0) {
      w.byte(TAG_TENSOR_SHAPE);
      w.varint(shape);
      for (const d of t.shape) w.int64(d);
    }
  }
  for (const b of r.raw_output_contents) w.bytesField(TAG_RAW_OUTPUT, b);
}

function finish(w: WireWriter): Buffer {
  if (w.pos !== w.buf.length) throw new Error(`internal: encoded ${w.pos} bytes, sized ${w.buf.length}`);
  return w.buf;
}

export function encodeModelInferResponseBytes(r: ModelInferResponseOut): Buffer {
  const w = new WireWriter(Buffer.allocUnsafe(responseSize(r)));
  writeResponse(w, r);
  return finish(w);
}

export function encodeModelStreamInferResponseBytes(r: ModelStreamInferResponseOut): Buffer {
  const inner = r.infer_response === null ? -1 : responseSize(r.infer_response);
  const total = optionalStringSize(r.error_message) + (inner < 0 ? 0 : delimitedSize(inner));
  const w = new WireWriter(Buffer.allocUnsafe(total));
  writeOptionalString(w, TAG_ERROR_MESSAGE, r.error_message);
  if (r.infer_response !== null) {
    w.byte(TAG_INFER_RESPONSE);
    w.varint(inner);
    writeResponse(w, r.infer_response);
  }
  return finish(w);
}
