/**
 * A request as a frontend decoded it, before validation against the model's
 * plan (validate.ts) and before its tensors are copied into the arena. Both
 * the HTTP (KServe JSON + binary extension) and gRPC decoders produce this
 * shape, so validation is written once.
 */
import type { ParamValue } from '../core/request';
import type { ShmRef } from './shm-regions';

export interface DecodedInput {
  name: string;
  /** The request's datatype string; may be invalid (validate.ts reports it as '<invalid>'). */
  datatype: string;
  /** Full request shape, batch dimension included. */
  shape: number[];
  /** Little-endian raw bytes; BYTES tensors hold 4-byte-length-prefixed elements. May be a view into the request body. */
  data: Uint8Array;
  parameters: Record<string, ParamValue>;
}

export interface RequestedOutput {
  name: string;
  /** `binary_data` as the client gave it; undefined when not given (then JSON). */
  binary: boolean | undefined;
  /** Number of classes asked for (classification extension); 0 = none. */
  classification: number;
  parameters: Record<string, ParamValue>;
  /** The output goes into this client shared-memory place (shm-regions.ts); the response then carries its metadata only. */
  shm?: ShmRef;
}

export interface DecodedRequest {
  /** '' when the request had no id. */
  id: string;
  inputs: DecodedInput[];
  /** Outputs the client listed, in request order; null = every output of the model. */
  outputs: RequestedOutput[] | null;
  /** Reserved (sequence_id, sequence_start, sequence_end, priority, timeout) and custom request parameters. */
  parameters: Record<string, ParamValue>;
  /** HTTP `binary_data_output`: binary for outputs not listed in `outputs`. */
  binaryDataOutput: boolean;
}
