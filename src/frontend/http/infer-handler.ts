/**
 * The HTTP inference path on a uWS thread:
 * body → decode → validate → copy tensors into the arena → ring to the main
 * thread's scheduler … response ring → encode → client, then free the arena
 * blocks of the request and its outputs.
 */
import { HTTP_STATUS, ServerError, toErrorInfo } from '../../core/errors';
import type { Arena } from '../../dataplane/arena';
import type { FrontendToMain } from '../../dataplane/protocol';
import type { RingWriter } from '../../dataplane/ring';
import { nowNs } from '../../core/clock';
import type { InferResponse, TensorRef } from '../../core/request';
import { admitRequest } from '../../request/admit-request';
import type { DecodedRequest } from '../../request/decoded-request';
import { lookupModel } from '../../request/model-lookup';
import type { ModelView, ServerSnapshot } from '../../request/server-snapshot';
import { writeShmOutputs } from '../../request/shm-regions';
import { validateRequest } from '../../request/validate';
import { compressResponse, decompressRequest, negotiateEncoding } from './compression';
import { decodeInferRequest, parseHeaderLength } from './infer-request-decode';
import { encodeInferResponse } from './infer-response-encode';
import { readBody } from './uws-adapter';
import type { Reply, RequestHead } from './uws-adapter';

interface PendingInfer {
  reply: Reply;
  head: RequestHead;
  decoded: DecodedRequest;
  view: ModelView;
  version: number;
  inputs: TensorRef[];
}

export class InferHandler {
  private nextKey = 1;
  private readonly pending = new Map<number, PendingInfer>();

  constructor(
    private readonly arena: Arena,
    private readonly toMain: RingWriter,
    private readonly maxInputSize: number,
    private readonly snapshot: () => ServerSnapshot,
  ) {}

  handle(reply: Reply, head: RequestHead, model: string, versionText: string | undefined): void {
    const arrivalNs = nowNs();
    let resolved: { view: ModelView; version: number };
    try {
      // Once the server is stopping, in-flight requests finish but new ones
      // are refused, so the drain ends even on busy keep-alive connections.
      if (this.snapshot().exiting) throw new ServerError('UNAVAILABLE', 'Server exiting');
      resolved = lookupModel(this.snapshot(), model, versionText);
      if (resolved.view.plan?.decoupled) {
        throw new ServerError('UNSUPPORTED', "HTTP end point doesn't support models with decoupled transaction policy");
      }
    } catch (err) {
      // Answer after the upload is in: closing a connection (at shutdown)
      // while the client still sends makes it see EPIPE instead of the error.
      readBody(reply, head, this.maxInputSize, () => sendError(reply, err));
      return;
    }
    readBody(reply, head, this.maxInputSize, (r) => {
      if (!r.ok) {
        reply.error(400, `request size of ${r.size} bytes exceeds the maximum allowed input size of ${this.maxInputSize} bytes. Use --http-max-input-size to increase the limit.`, true);
        return;
      }
      try {
        this.admit(reply, head, r.body, resolved.view, resolved.version, arrivalNs);
      } catch (err) {
        sendError(reply, err);
      }
    });
  }

  private admit(reply: Reply, head: RequestHead, raw: Buffer, view: ModelView, version: number, arrivalNs: number): void {
    const plan = view.plan;
    if (!plan) throw new ServerError('UNAVAILABLE', `Request for unknown model: '${view.name}' version ${version} is not at ready state`);
    const body = decompressRequest(raw, head.contentEncoding, this.maxInputSize);
    const headerLength = parseHeaderLength(head.headerLength === '' ? undefined : head.headerLength, body.length);
    const decoded = decodeInferRequest(body, headerLength, plan, this.maxInputSize, this.snapshot().shmRegions);
    const { batchSize } = validateRequest(plan, decoded);
    const request = admitRequest(this.arena, decoded, { model: view.name, version, batchSize, arrivalNs });
    const inputs = request.inputs;
    const key = this.nextKey++;
    this.pending.set(key, { reply, head, decoded, view, version, inputs });
    const msg: FrontendToMain = { t: 'infer', key, request };
    this.toMain.send(msg);
  }

  /** A response from the main thread (ring message). */
  onResponse(key: number, response: InferResponse): void {
    const p = this.pending.get(key);
    if (!p) {
      for (const o of response.outputs) this.arena.free(o);
      return;
    }
    if (response.final) this.pending.delete(key);
    try {
      if (response.error) {
        sendError(p.reply, new ServerError(response.error.code, response.error.message));
      } else {
        this.reply(p, response);
      }
    } catch (err) {
      sendError(p.reply, err);
    } finally {
      for (const o of response.outputs) this.arena.free(o);
      if (response.final) for (const t of p.inputs) this.arena.free(t);
    }
  }

  private reply(p: PendingInfer, response: InferResponse): void {
    if (p.reply.aborted) return;
    const outputs = response.outputs.map((o) => ({ name: o.name, datatype: o.datatype, shape: o.shape, data: this.arena.bytes(o.offset, o.byteSize) }));
    writeShmOutputs(outputs, p.decoded.outputs);
    const encoded = encodeInferResponse({
      id: p.decoded.id,
      modelName: p.view.name,
      modelVersion: String(p.version),
      parameters: response.parameters,
      outputs,
      requested: p.decoded.outputs,
      binaryDataOutput: p.decoded.binaryDataOutput,
      batched: (p.view.plan?.maxBatchSize ?? 0) > 0,
      labels: (name) => p.view.labels[name],
    });
    const headers: Record<string, string> = { 'Content-Type': encoded.contentType };
    if (encoded.headerLength !== undefined) headers['Inference-Header-Content-Length'] = String(encoded.headerLength);
    let body: Uint8Array = encoded.binary.length === 0 ? Buffer.from(encoded.json) : Buffer.concat([Buffer.from(encoded.json), ...encoded.binary]);
    const encoding = negotiateEncoding(p.head.acceptEncoding);
    if (encoding !== 'identity') {
      const compressed = compressResponse(body, encoding);
      if (compressed) {
        body = compressed;
        headers['Content-Encoding'] = encoding;
      }
    }
    p.reply.send(200, headers, body);
  }
}

export function sendError(reply: Reply, err: unknown): void {
  const info = toErrorInfo(err);
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  if (info.code === 'UNSUPPORTED' && info.message === 'Unsupported compression type') headers['Accept-Encoding'] = 'gzip, deflate';
  reply.send(HTTP_STATUS[info.code], headers, JSON.stringify({ error: info.message }));
}
