/**
 * The shapes @grpc/proto-loader hands us for the inference messages, with the
 * loader options of grpc-protos.ts: snake_case names, every field present
 * (`defaults`), 64-bit integers as decimal strings (`longs: String`, so no
 * precision is lost), enums as names, `bytes` as Buffers that are views into
 * the received message (no copy), and each oneof's set member named by its
 * oneof field (`parameter_choice`).
 */

export type InferParameterChoice = 'bool_param' | 'int64_param' | 'string_param' | 'double_param' | 'uint64_param';

export interface InferParameterMsg {
  parameter_choice?: InferParameterChoice;
  bool_param?: boolean;
  int64_param?: string;
  string_param?: string;
  double_param?: number;
  uint64_param?: string;
}

export interface InferTensorContentsMsg {
  bool_contents: boolean[];
  int_contents: number[];
  int64_contents: string[];
  uint_contents: number[];
  uint64_contents: string[];
  fp32_contents: number[];
  fp64_contents: number[];
  bytes_contents: Uint8Array[];
  /**
   * bytes_contents already in the serialized BYTES layout (each element a
   * 4-byte little-endian length, then its bytes) with its element count:
   * what the server's wire decoder (infer-request-wire.ts) gives instead of
   * one Buffer per element in bytes_contents, which it leaves empty. Not in
   * proto-loader's objects.
   */
  bytes_serialized?: SerializedBytesContents;
}

export interface SerializedBytesContents {
  data: Uint8Array;
  count: number;
}

export interface InferInputTensorMsg {
  name: string;
  datatype: string;
  shape: string[];
  parameters: Record<string, InferParameterMsg>;
  contents: InferTensorContentsMsg | null;
}

export interface InferRequestedOutputTensorMsg {
  name: string;
  parameters: Record<string, InferParameterMsg>;
}

export interface ModelInferRequestMsg {
  model_name: string;
  model_version: string;
  id: string;
  parameters: Record<string, InferParameterMsg>;
  inputs: InferInputTensorMsg[];
  outputs: InferRequestedOutputTensorMsg[];
  raw_input_contents: Uint8Array[];
}

/** What we encode (protobufjs fromObject accepts numbers for 64-bit fields). */
export interface InferParameterOut {
  bool_param?: boolean;
  int64_param?: number | string;
  string_param?: string;
  double_param?: number;
}

export interface InferOutputTensorOut {
  name: string;
  datatype: string;
  shape: number[];
}

export interface ModelInferResponseOut {
  model_name: string;
  model_version: string;
  id: string;
  parameters: Record<string, InferParameterOut>;
  outputs: InferOutputTensorOut[];
  raw_output_contents: Uint8Array[];
}

export interface ModelStreamInferResponseOut {
  error_message: string;
  infer_response: ModelInferResponseOut | null;
}

/** Name + version requests (ModelReady, ModelMetadata, ModelConfig, ModelStatistics). */
export interface ModelRefMsg {
  name: string;
  version: string;
}
