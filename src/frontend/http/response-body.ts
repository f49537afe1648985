/**
 * The CPU-heavy half of an HTTP inference response as one function, run
 * either inline on the HTTP thread or in its codec pool (codec-pool.ts):
 * output tensors (read in place from the shared arena) → JSON text and
 * binary blobs (infer-response-encode.ts) → one body, compressed when the
 * client's Accept-Encoding asks for it (compression.ts), with its headers.
 * A task is plain data, so it crosses to a pool thread by structured clone;
 * the tensors stay in the arena, which every thread can read.
 */
import type { Arena } from '../../dataplane/arena';
import type { ParamValue, TensorRef } from '../../core/request';
import type { RequestedOutput } from '../../request/decoded-request';
import { compressResponse, negotiateEncoding } from './compression';
import { encodeInferResponse } from './infer-response-encode';

/** An output as the task needs it: where it is in the arena (its generation is not needed to read it). */
export type ArenaOutput = Omit<TensorRef, 'gen'>;

export interface ResponseEncodeTask {
  id: string;
  modelName: string;
  modelVersion: string;
  parameters?: Record<string, ParamValue>;
  outputs: ArenaOutput[];
  requested: RequestedOutput[] | null;
  binaryDataOutput: boolean;
  batched: boolean;
  /** Classification labels, only of the outputs that ask for classification. */
  labels: Record<string, string[]>;
  /** Accept-Encoding header, '' when absent. */
  acceptEncoding: string;
  /** --http-max-json-response-size. */
  maxJsonChars: number;
}

export interface ResponseBody {
  headers: Record<string, string>;
  body: Uint8Array;
  /**
   * Instead of `body` (then empty): the JSON and the binary outputs as views
   * into the arena, for Reply.sendParts; only when the caller allows it.
   */
  parts?: Uint8Array[];
}

/**
 * Binary outputs at least this large go to the socket straight from the arena
 * (Reply.sendParts) instead of being joined into one body first: for a
 * 64 MiB tensor the join alone is a 64 MiB allocation and copy.
 */
export const STREAM_BINARY_BYTES = 1 << 20;

/**
 * `allowParts`: the caller can write a body in parts that stay views into
 * the arena until sent (the HTTP thread can; a pool thread's result crosses
 * threads as one body).
 */
export function encodeResponseBody(arena: Arena, task: ResponseEncodeTask, allowParts = false): ResponseBody {
  const encoded = encodeInferResponse({
    id: task.id,
    modelName: task.modelName,
    modelVersion: task.modelVersion,
    parameters: task.parameters,
    outputs: task.outputs.map((o) => ({ name: o.name, datatype: o.datatype, shape: o.shape, data: arena.bytes(o.offset, o.byteSize) })),
    requested: task.requested,
    binaryDataOutput: task.binaryDataOutput,
    batched: task.batched,
    labels: (name) => (Object.hasOwn(task.labels, name) ? task.labels[name] : undefined),
    maxJsonChars: task.maxJsonChars,
  });
  const headers: Record<string, string> = { 'Content-Type': encoded.contentType };
  if (encoded.headerLength !== undefined) headers['Inference-Header-Content-Length'] = String(encoded.headerLength);
  const encoding = negotiateEncoding(task.acceptEncoding);
  if (allowParts && encoding === 'identity') {
    let binaryBytes = 0;
    for (const b of encoded.binary) binaryBytes += b.byteLength;
    if (binaryBytes >= STREAM_BINARY_BYTES) return { headers, body: new Uint8Array(0), parts: [Buffer.from(encoded.json), ...encoded.binary] };
  }
  let body: Uint8Array = encoded.binary.length === 0 ? Buffer.from(encoded.json) : Buffer.concat([Buffer.from(encoded.json), ...encoded.binary]);
  if (encoding !== 'identity') {
    const compressed = compressResponse(body, encoding);
    if (compressed) {
      body = compressed;
      headers['Content-Encoding'] = encoding;
    }
  }
  return { headers, body };
}

/**
 * Encoding a tensor byte as JSON text costs about as much CPU as decoding
 * this many bytes of JSON body (measured: FP32 ~165 ns per tensor byte to
 * encode, ~14 ns per body byte to decode; integers are cheaper).
 */
const JSON_ENCODE_WEIGHT = 8;

/**
 * The work of encoding a response, in the unit of decodeWorkBytes (body
 * bytes of JSON): the tensor bytes that go out as JSON text, weighted, plus
 * every output byte when the body is to be compressed.
 */
export function encodeWorkBytes(task: ResponseEncodeTask): number {
  let json = 0;
  let all = 0;
  for (const o of task.outputs) {
    all += o.byteSize;
    let asBinary = task.binaryDataOutput;
    if (task.requested !== null) {
      const req = task.requested.find((r) => r.name === o.name);
      if (req === undefined || req.shm !== undefined) continue;
      asBinary = req.binary === true;
    }
    if (!asBinary) json += o.byteSize;
  }
  return JSON_ENCODE_WEIGHT * json + (negotiateEncoding(task.acceptEncoding) === 'identity' ? 0 : all);
}
