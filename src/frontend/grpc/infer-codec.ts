/**
 * ModelInferRequest → DecodedRequest (the shape the HTTP decoder also
 * produces, so validate.ts and the scheduler path are shared), and a
 * scheduler response → ModelInferResponse with every output's bytes in
 * `raw_output_contents`, one entry per output in order (protocol.md §2.3,
 * §8 item 1). No arena; the only I/O is reading inputs from client shared
 * memory (shm-regions.ts).
 */
import type { DataType } from '../../core/datatypes';
import { ServerError } from '../../core/errors';
import type { ParamValue } from '../../core/request';
import { classify } from '../classification';
import type { DecodedInput, DecodedRequest, RequestedOutput } from '../../request/decoded-request';
import { encodeBytesTensor } from '../../request/tensor-view';
import { checkSharedMemory, int64ToNumber, parseRequestParameters, tensorParameters } from './grpc-parameters';
import type { InferParameterOut, ModelInferRequestMsg, ModelInferResponseOut } from './proto-types';
import { contentsToBytes, hasContents } from './typed-contents';
import { readShm, type ShmRef, type ShmRegionTable } from '../../request/shm-regions';

const EMPTY = new Uint8Array(0);

export interface DecodedGrpcRequest {
  decoded: DecodedRequest;
  enableEmptyFinalResponse: boolean;
}

function invalid(message: string): ServerError {
  return new ServerError('INVALID_ARG', message);
}

/** `model` is the resolved model name (used in error texts). */
export function decodeModelInferRequest(msg: ModelInferRequestMsg, model: string, regions?: ShmRegionTable): DecodedGrpcRequest {
  const { parameters, enableEmptyFinalResponse } = parseRequestParameters(msg.parameters ?? {});
  const raw = msg.raw_input_contents ?? [];
  let nextRaw = 0;
  const inputs: DecodedInput[] = [];
  for (const t of msg.inputs ?? []) {
    const params = t.parameters ?? {};
    const typed = hasContents(t.contents);
    const shm = checkSharedMemory(params, t.name, typed, model, regions);
    let data: Uint8Array;
    if (shm !== undefined) {
      data = readShm(shm);
    } else if (typed) {
      if (raw.length > 0) {
        throw invalid(`contents field must not be specified when using raw_input_contents for '${t.name}' for model '${model}'`);
      }
      data = contentsToBytes(t.contents!, t.datatype, t.name, model);
    } else if (nextRaw < raw.length) {
      data = raw[nextRaw++];
    } else {
      throw invalid(`unable to find data for input tensor '${t.name}' for model '${model}' in request.`);
    }
    inputs.push({
      name: t.name,
      datatype: t.datatype,
      shape: (t.shape ?? []).map((d) => int64ToNumber(d, `shape of input '${t.name}'`)),
      data,
      parameters: tensorParameters(params),
    });
  }
  // Surplus raw_input_contents entries are ignored, as Triton does.

  let outputs: RequestedOutput[] | null = null;
  if ((msg.outputs ?? []).length > 0) {
    outputs = msg.outputs.map((o) => {
      const params = o.parameters ?? {};
      const shm = checkOutputSharedMemory(params, o.name, regions);
      let classification = 0;
      const c = params.classification;
      if (c !== undefined) {
        if (c.parameter_choice !== 'int64_param') {
          throw invalid(`invalid value type for 'classification' parameter for tensor '${o.name}', expected int64_param.`);
        }
        classification = int64ToNumber(c.int64_param!, 'classification');
      }
      return { name: o.name, binary: true, classification, parameters: tensorParameters(params), ...(shm !== undefined ? { shm } : {}) };
    });
  }
  return {
    decoded: { id: msg.id ?? '', inputs, outputs, parameters, binaryDataOutput: true },
    enableEmptyFinalResponse,
  };
}

function checkOutputSharedMemory(
  params: ModelInferRequestMsg['outputs'][number]['parameters'],
  name: string,
  regions: ShmRegionTable | undefined,
): ShmRef | undefined {
  // Outputs have no contents; the same region checks apply.
  if (params.shared_memory_region !== undefined || params.shared_memory_offset !== undefined || params.shared_memory_byte_size !== undefined) {
    return checkSharedMemory(params, name, false, '', regions);
  }
  return undefined;
}

export interface ResponseTensor {
  name: string;
  datatype: DataType;
  shape: number[];
  /** May be a view into the shared arena. */
  data: Uint8Array;
}

export interface BuildResponseArgs {
  id: string;
  modelName: string;
  modelVersion: string;
  parameters?: Record<string, ParamValue>;
  /** In the order the backend produced them. */
  outputs: ResponseTensor[];
  requested: RequestedOutput[] | null;
  batched: boolean;
  labels?: (outputName: string) => readonly string[] | undefined;
}

/** The response message; `raw_output_contents` entries are views of the given data, not copies. */
export function buildInferResponse(args: BuildResponseArgs): ModelInferResponseOut {
  const out: ModelInferResponseOut = {
    model_name: args.modelName,
    model_version: args.modelVersion,
    id: args.id,
    parameters: toInferParameters(args.parameters),
    outputs: [],
    raw_output_contents: [],
  };
  for (const o of args.outputs) {
    let req: RequestedOutput | undefined;
    if (args.requested !== null) {
      req = args.requested.find((r) => r.name === o.name);
      if (req === undefined) continue; // only the listed outputs are returned
    }
    if (req?.shm !== undefined) {
      // Written into the client's region (writeShmOutputs); the entry stays, empty (protocol.md §8 item 1).
      out.outputs.push({ name: o.name, datatype: o.datatype, shape: o.shape });
      out.raw_output_contents.push(EMPTY);
    } else if (req !== undefined && req.classification > 0) {
      const c = classify(o, req.classification, args.batched, args.labels?.(o.name));
      out.outputs.push({ name: o.name, datatype: 'BYTES', shape: c.shape });
      out.raw_output_contents.push(encodeBytesTensor(c.elements));
    } else {
      out.outputs.push({ name: o.name, datatype: o.datatype, shape: o.shape });
      out.raw_output_contents.push(o.data);
    }
  }
  return out;
}

export function toInferParameters(params: Record<string, ParamValue> | undefined): Record<string, InferParameterOut> {
  const out: Record<string, InferParameterOut> = {};
  if (params === undefined) return out;
  for (const key of Object.keys(params)) {
    const v = params[key];
    if (typeof v === 'boolean') out[key] = { bool_param: v };
    else if (typeof v === 'string') out[key] = { string_param: v };
    else if (typeof v === 'bigint')
      out[key] = { int64_param: v.toString() }; // past 2^63: wraps, as a C++ cast to int64 does
    else if (Number.isInteger(v)) out[key] = { int64_param: v };
    else out[key] = { double_param: v };
  }
  return out;
}
