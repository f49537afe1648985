/**
 * The generate extension on an HTTP thread (Triton's extension_generate.md):
 * `POST /v2/models/<m>[/versions/<v>]/generate` and `.../generate_stream`.
 * body → generate-request-decode.ts → validate → arena → the thread's ring
 * (InferHandler.submit, the same key space and cancel path as inference) …
 * each response → generate-response-encode.ts → client:
 * - generate: exactly one response (Triton's rule, decoupled models
 *   included), answered as one JSON object with its status;
 * - generate_stream: Server-Sent Events, one `data: {...}` per response of
 *   the model (an error as `data: {"error": ...}`), the status that of the
 *   first response, the stream ended by the final one.
 * A client that goes away (the SSE connection closed) cancels the request
 * in the scheduler and the model (`is_cancelled()`); its blocks are freed
 * with its final response, as for any request.
 */
import { HTTP_STATUS, ServerError, toErrorInfo } from '../../core/errors';
import { nowNs } from '../../core/clock';
import type { InferResponse, RefusedRequest, TensorRef } from '../../core/request';
import type { Arena } from '../../dataplane/arena';
import { admitRequest, releaseInputs, releaseOutputs } from '../../request/admit-request';
import { lookupModel, type Resolved } from '../../request/model-lookup';
import type { ServerSnapshot } from '../../request/server-snapshot';
import { validateRequest } from '../../request/validate';
import { forwardHeaders } from '../../request/header-forward';
import { decodeGenerateRequest } from './generate-request-decode';
import { encodeGenerateResponse, errorJson, sseEvent } from './generate-response-encode';
import { JSON_HEADERS, SSE_HEADERS, bodyTooLarge, readBody, type Reply, type ReplyStream, type RequestHead } from './http-reply';
import { type InferHandler, sendError } from './infer-handler';

/** Triton's text for a generate request whose model did not answer exactly once. */
export const NOT_ONE_RESPONSE =
  'generate expects model to produce exactly 1 response, use generate stream for model that generates various number of responses';

/** One generate request between its admission and its final response. */
interface Exchange {
  reply: Reply;
  stream: boolean;
  decoupled: boolean;
  id: string;
  model: string;
  inputs: TensorRef[];
  /** Responses counted as Triton counts them (a decoupled model's empty final one is only a flag). */
  count: number;
  /** generate: the first response, answered at the final one. */
  first?: { status: number; json: string };
  /** generate_stream: opened by the first response. */
  sse?: ReplyStream;
}

export class GenerateHandler {
  constructor(
    private readonly arena: Arena,
    private readonly infer: InferHandler,
    private readonly maxInputSize: number,
    /** --http-max-json-response-size. */
    private readonly maxJsonResponseSize: number,
    private readonly snapshot: () => ServerSnapshot,
    /** --http-header-forward-pattern (absent: no header is forwarded). */
    private readonly forward?: RegExp,
    /** --log-access: how a request this thread refuses itself is reported (absent: the log is off). */
    private readonly access?: (r: RefusedRequest) => void,
  ) {}

  handle(reply: Reply, head: RequestHead, model: string, versionText: string | undefined, stream: boolean): void {
    const arrivalNs = nowNs();
    // A request refused here, before any scheduler: answered, and for --log-access reported as this thread's own line.
    const refused = (status: number, inBytes: number): void =>
      this.access?.({ protocol: 'HTTP', client: reply.client, model, version: versionText ?? '', status, inBytes, id: '' });
    const refuse = (err: unknown): void => {
      sendError(reply, err);
      refused(HTTP_STATUS[toErrorInfo(err).code], Number(head.contentLength) || 0);
    };
    let resolved: Resolved;
    try {
      resolved = lookupModel(this.snapshot(), model, versionText, 'loaded');
    } catch (err) {
      // Answered after the upload is in, as inference does.
      readBody(reply, head, this.maxInputSize, () => refuse(err));
      return;
    }
    readBody(reply, head, this.maxInputSize, (r) => {
      if (!r.ok) {
        bodyTooLarge(reply, r.size, this.maxInputSize);
        refused(400, r.size);
        return;
      }
      try {
        this.start(reply, head, r.body, resolved, arrivalNs, stream);
      } catch (err) {
        refuse(err);
      }
    });
  }

  private start(reply: Reply, head: RequestHead, body: Buffer, resolved: Resolved, arrivalNs: number, stream: boolean): void {
    const { view, version, latest } = resolved;
    const plan = view.plan;
    if (!plan) throw new ServerError('UNAVAILABLE', `Request for unknown model: '${view.name}' version ${version} is not at ready state`);
    const decoded = decodeGenerateRequest(body, head.contentEncoding, plan, this.maxInputSize);
    if (this.forward !== undefined) forwardHeaders(this.forward, head.headers, decoded.parameters);
    const { batchSize } = validateRequest(plan, decoded);
    const request = admitRequest(this.arena, decoded, { model: view.name, version, latest, batchSize, arrivalNs });
    if (this.access !== undefined) request.client = reply.client;
    const x: Exchange = { reply, stream, decoupled: plan.decoupled, id: decoded.id, model: view.name, inputs: request.inputs, count: 0 };
    this.infer.submit(request, reply, (response, v) => this.onResponse(x, response, v));
  }

  private onResponse(x: Exchange, response: InferResponse, version: number): void {
    try {
      const flagOnly = x.decoupled && response.final && response.outputs.length === 0 && response.error === undefined;
      if (!flagOnly && !x.reply.aborted) this.take(x, response, version);
      if (response.final && !x.reply.aborted) this.finish(x);
    } catch (err) {
      // Nothing of one response stops the request's end: its blocks are freed below.
      if (x.sse !== undefined) x.sse.end(sseEvent(errorJson(toErrorInfo(err).message)));
      else sendError(x.reply, err);
    } finally {
      releaseOutputs(this.arena, response.outputs);
      if (response.final) releaseInputs(this.arena, x.inputs);
    }
  }

  /** One response of the model: an event of the stream, or the answer kept for the final one. */
  private take(x: Exchange, response: InferResponse, version: number): void {
    let status = 200;
    let json: string;
    if (response.error !== undefined) {
      status = HTTP_STATUS[response.error.code];
      json = errorJson(response.error.message);
    } else {
      try {
        json = encodeGenerateResponse({
          id: x.id,
          modelName: x.model,
          modelVersion: String(version),
          parameters: response.parameters,
          outputs: response.outputs.map((o) => ({ name: o.name, datatype: o.datatype, shape: o.shape, data: this.arena.bytes(o.offset, o.byteSize) })),
          maxJsonChars: this.maxJsonResponseSize,
        });
      } catch (err) {
        const info = toErrorInfo(err);
        status = HTTP_STATUS[info.code];
        json = errorJson(info.message);
      }
    }
    x.count++;
    if (x.stream) {
      // The first response sets the status (Triton's rule: later errors come as events of a 200 stream).
      x.sse ??= x.reply.stream(status, SSE_HEADERS);
      x.sse.write(sseEvent(json));
    } else if (x.count === 1) {
      x.first = { status, json };
    }
  }

  private finish(x: Exchange): void {
    if (x.stream) {
      (x.sse ?? x.reply.stream(200, SSE_HEADERS)).end();
      return;
    }
    if (x.count === 1 && x.first !== undefined) {
      x.reply.send(x.first.status, JSON_HEADERS, x.first.json);
      return;
    }
    // The client asked generate of a model that answered 0 or several times: it should use generate_stream.
    x.reply.send(400, JSON_HEADERS, errorJson(`${NOT_ONE_RESPONSE} (model '${x.model}' produced ${x.count})`));
  }
}
