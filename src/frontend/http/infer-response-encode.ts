/**
 * Inference response → KServe v2 HTTP body (protocol.md §1.8.3, §1.8.6,
 * §1.8.9): compact JSON `{"id","model_name","model_version","parameters",
 * "outputs"}` plus, when any output is binary, the binary blobs in output
 * order after it. JSON outputs never carry a `parameters` object (the C++
 * client would read them as binary). Pure: no I/O.
 */
import { MAX_JSON_RESPONSE_BYTES } from '../../cli-options';
import type { DataType } from '../../core/datatypes';
import { elementCount } from '../../core/datatypes';
import { ServerError } from '../../core/errors';
import { paramsJson, type ParamValue } from '../../core/request';
import { classify } from '../classification';
import type { RequestedOutput } from '../../request/decoded-request';
import { encodeBytesTensor } from '../../request/tensor-view';
import { tensorDataJson } from './tensor-json';

export interface ResponseOutput {
  name: string;
  datatype: DataType;
  shape: number[];
  /** May be a view into the shared arena, at any byte offset. */
  data: Uint8Array;
}

export interface EncodeResponseArgs {
  id: string;
  modelName: string;
  modelVersion: string;
  parameters?: Record<string, ParamValue>;
  /** In the order the backend produced them. */
  outputs: ResponseOutput[];
  /** The outputs the request listed; null = all outputs, kind from binaryDataOutput. */
  requested: RequestedOutput[] | null;
  binaryDataOutput: boolean;
  /** Classification labels of an output (label_filename lines). */
  labels?: (outputName: string) => readonly string[] | undefined;
  /** The model batches (max_batch_size > 0): classification then works per batch item. */
  batched?: boolean;
  /** The most characters the JSON part may take (default --http-max-json-response-size's). */
  maxJsonChars?: number;
}

/*
 * The bound, --http-max-json-response-size, is in characters (bytes, for the
 * ASCII of numbers and booleans). JSON multiplies an output's size (a BOOL
 * byte becomes `false,`, an FP32 up to 25 characters) and is built in memory
 * before it is sent, so without a bound one request for a large output as
 * JSON holds gigabytes and minutes of a thread (or passes V8's longest
 * string and fails with an out-of-memory). Binary outputs are not counted:
 * they are sent from the tensor arena as they are.
 */

/** Why the response cannot be sent: its JSON would pass the bound at output `name` (INVALID_ARG, as gRPC's size limit). */
function jsonTooLarge(model: string, name: string, elements: number, max: number): ServerError {
  return new ServerError(
    'INVALID_ARG',
    `the JSON of output '${name}' (${elements} elements) of model '${model}' would make the response larger than ` +
      `${max} bytes, the most an HTTP inference response may carry as JSON (--http-max-json-response-size). Request the output in binary: ` +
      `"parameters":{"binary_data":true} on the output, or "binary_data_output":true in the request parameters ` +
      '(the tritonclient default).',
  );
}

export interface EncodedResponse {
  json: string;
  /** Blobs to send after the JSON, in order; views of the given data, not copies. */
  binary: Uint8Array[];
  contentType: 'application/json' | 'application/octet-stream';
  /** Byte length of `json` (Inference-Header-Content-Length) when any output is binary. */
  headerLength: number | undefined;
}

export function encodeInferResponse(args: EncodeResponseArgs): EncodedResponse {
  const maxChars = args.maxJsonChars ?? MAX_JSON_RESPONSE_BYTES;
  let json = '{';
  if (args.id !== '') json += `"id":${JSON.stringify(args.id)},`;
  json += `"model_name":${JSON.stringify(args.modelName)},"model_version":${JSON.stringify(args.modelVersion)}`;
  if (args.parameters !== undefined) json += parametersJson(args.parameters);

  json += ',"outputs":[';
  const binary: Uint8Array[] = [];
  let anyBinary = false;
  let first = true;
  for (const out of args.outputs) {
    let req: RequestedOutput | undefined;
    if (args.requested !== null) {
      req = args.requested.find((r) => r.name === out.name);
      if (req === undefined) continue; // only listed outputs are returned
    }
    // Listed outputs follow their own binary_data (absent = JSON); binary_data_output
    // only decides for outputs the request did not list.
    const asBinary = req !== undefined ? req.binary === true : args.binaryDataOutput;

    let datatype = out.datatype;
    let shape = out.shape;
    let classes: string[] | undefined;
    if (req !== undefined && req.classification > 0) {
      const c = classify(out, req.classification, args.batched === true, args.labels?.(out.name));
      datatype = 'BYTES';
      shape = c.shape;
      classes = c.elements;
    }

    json += `${first ? '' : ','}{"name":${JSON.stringify(out.name)},"datatype":"${datatype}","shape":[${shape.join(',')}]`;
    first = false;
    if (req?.shm !== undefined) {
      json += '}'; // written into the client's shared memory: metadata only (§1.8.6)
    } else if (asBinary) {
      const bytes = classes !== undefined ? encodeBytesTensor(classes) : out.data;
      json += `,"parameters":{"binary_data_size":${bytes.byteLength}}}`;
      anyBinary = true;
      if (bytes.byteLength > 0) binary.push(bytes);
    } else {
      const count = elementCount(shape);
      const room = maxChars - json.length - ',"data":}]}'.length;
      const data = classes !== undefined ? JSON.stringify(classes) : tensorDataJson(out.name, datatype, out.data, count, room);
      if (data === undefined || data.length > room) throw jsonTooLarge(args.modelName, out.name, count, maxChars);
      json += `,"data":${data}}`;
    }
  }
  json += ']}';

  if (!anyBinary) return { json, binary, contentType: 'application/json', headerLength: undefined };
  return { json, binary, contentType: 'application/octet-stream', headerLength: Buffer.byteLength(json, 'utf8') };
}

/** `,"parameters":{...}` when the backend set any (bool, int, double, string; 64-bit ints exact). */
function parametersJson(params: Record<string, ParamValue>): string {
  return Object.keys(params).length === 0 ? '' : `,"parameters":${paramsJson(params)}`;
}
