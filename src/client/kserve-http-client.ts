/**
 * A small KServe v2 HTTP client (JSON and binary tensor extension), used by
 * the integration tests and the benchmarks. It speaks the protocol the way
 * tritonclient does: binary inputs with Inference-Header-Content-Length, and
 * binary outputs read back by `binary_data_size`.
 */
import zlib from 'node:zlib';

export interface ClientTensor {
  name: string;
  datatype: string;
  shape: number[];
  /** JSON data (flat or nested), or raw little-endian bytes for the binary extension. */
  data: unknown[] | Uint8Array;
}

export interface InferOptions {
  id?: string;
  outputs?: { name: string; binary?: boolean }[];
  parameters?: Record<string, unknown>;
  version?: string;
  /** Ask for binary outputs when `outputs` is not given. */
  binaryDataOutput?: boolean;
  headers?: Record<string, string>;
  compressRequest?: 'gzip' | 'deflate';
}

export interface InferResult {
  status: number;
  headers: Headers;
  /** Parsed JSON part of the body (or the error object). */
  json: Record<string, unknown>;
  /** Output bytes by name, for binary outputs. */
  binary: Map<string, Buffer>;
}

export function buildInferBody(inputs: ClientTensor[], opts: InferOptions = {}): { body: Buffer; headerLength: number | undefined } {
  const blobs: Buffer[] = [];
  const jsonInputs = inputs.map((t) => {
    if (t.data instanceof Uint8Array) {
      blobs.push(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
      return { name: t.name, datatype: t.datatype, shape: t.shape, parameters: { binary_data_size: t.data.byteLength } };
    }
    return { name: t.name, datatype: t.datatype, shape: t.shape, data: t.data };
  });
  const header: Record<string, unknown> = { inputs: jsonInputs };
  if (opts.id !== undefined) header.id = opts.id;
  const parameters: Record<string, unknown> = { ...(opts.parameters ?? {}) };
  if (opts.binaryDataOutput !== undefined) parameters.binary_data_output = opts.binaryDataOutput;
  if (Object.keys(parameters).length > 0) header.parameters = parameters;
  if (opts.outputs) {
    header.outputs = opts.outputs.map((o) => (o.binary === undefined ? { name: o.name } : { name: o.name, parameters: { binary_data: o.binary } }));
  }
  const json = Buffer.from(JSON.stringify(header));
  if (blobs.length === 0) return { body: json, headerLength: undefined };
  return { body: Buffer.concat([json, ...blobs]), headerLength: json.length };
}

/** `body` is the decoded body (fetch already undoes Content-Encoding). */
export function parseInferResponse(status: number, headers: Headers, body: Buffer): InferResult {
  const hl = headers.get('inference-header-content-length');
  const jsonLen = hl === null ? body.length : Number(hl);
  const json = JSON.parse(body.subarray(0, jsonLen).toString('utf8')) as Record<string, unknown>;
  const binary = new Map<string, Buffer>();
  let offset = jsonLen;
  const outputs = (json.outputs ?? []) as { name: string; parameters?: { binary_data_size?: number } }[];
  for (const o of outputs) {
    const size = o.parameters?.binary_data_size;
    if (size === undefined) continue;
    binary.set(o.name, body.subarray(offset, offset + size));
    offset += size;
  }
  return { status, headers, json, binary };
}

export async function infer(baseUrl: string, model: string, inputs: ClientTensor[], opts: InferOptions = {}): Promise<InferResult> {
  const { body, headerLength } = buildInferBody(inputs, opts);
  // fetch would otherwise ask for gzip on every call; compression is opt-in here.
  const headers: Record<string, string> = {
    'Accept-Encoding': 'identity',
    'Content-Type': headerLength === undefined ? 'application/json' : 'application/octet-stream',
    ...(opts.headers ?? {}),
  };
  if (headerLength !== undefined) headers['Inference-Header-Content-Length'] = String(headerLength);
  let payload: Buffer = body;
  if (opts.compressRequest) {
    payload = opts.compressRequest === 'gzip' ? zlib.gzipSync(body) : zlib.deflateSync(body);
    headers['Content-Encoding'] = opts.compressRequest;
  }
  const path = opts.version ? `/v2/models/${encodeURIComponent(model)}/versions/${opts.version}/infer` : `/v2/models/${encodeURIComponent(model)}/infer`;
  const res = await fetch(baseUrl + path, { method: 'POST', headers, body: payload });
  const raw = Buffer.from(await res.arrayBuffer());
  return parseInferResponse(res.status, res.headers, raw);
}
