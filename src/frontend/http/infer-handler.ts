/**
 * The HTTP inference path on an HTTP thread:
 * body → decode → validate → copy tensors into the arena → ring to the main
 * thread's scheduler … response ring → encode → client, then free the arena
 * blocks of the request and its outputs. Decode and encode run inline, or in
 * the thread's codec pool when the body is large (codec-pool.ts); either way
 * through the same functions (request-body-decode.ts, response-body.ts).
 * A client that goes away before its response cancels the request
 * (onClientGone: ring message `cancel`); its blocks are still freed only
 * with its final response, as an instance may be reading the inputs.
 */
import { HTTP_STATUS, RETRY_AFTER_SECONDS, ServerError, toErrorInfo } from '../../core/errors';
import type { Arena } from '../../dataplane/arena';
import type { FrontendToMain } from '../../dataplane/protocol';
import type { RingWriter } from '../../dataplane/ring';
import { nowNs } from '../../core/clock';
import type { InferRequest, InferResponse, RefusedRequest, TensorRef } from '../../core/request';
import { admitRequest, releaseInputs, releaseOutputs } from '../../request/admit-request';
import type { DecodedRequest } from '../../request/decoded-request';
import { lookupModel } from '../../request/model-lookup';
import type { Resolved } from '../../request/model-lookup';
import type { ModelView, ServerSnapshot } from '../../request/server-snapshot';
import { writeShmOutputs } from '../../request/shm-regions';
import { validateRequest } from '../../request/validate';
import { forwardHeaders } from '../../request/header-forward';
import type { CodecPool } from './codec-pool';
import type { HostedInstances } from './hosted-instances';
import { decodeRequestBody, type BodyDecodeTask } from './request-body-decode';
import { encodeResponseBody, type ResponseBody, type ResponseEncodeTask } from './response-body';
import { bodyTooLarge, readBody } from './http-reply';
import type { Reply, RequestHead } from './http-reply';

interface PendingInfer {
  reply: Reply;
  head: RequestHead;
  decoded: DecodedRequest;
  view: ModelView;
  /** The version this thread picked; the main thread's choice replaces it when its responses come. */
  version: number;
  inputs: TensorRef[];
}

/** Where the responses of a request another route sent go (submit). */
export type ResponseListener = (response: InferResponse, version: number) => void;

export class InferHandler {
  private nextKey = 1;
  private readonly pending = new Map<number, PendingInfer>();
  /** Requests of other routes on this thread's ring (generate-handler.ts), by key: one key space with `pending`. */
  private readonly listeners = new Map<number, ResponseListener>();
  /** The instances this thread hosts: a request that finds one idle runs here (absent: every request goes to main). */
  hosted: HostedInstances | undefined;

  constructor(
    private readonly arena: Arena,
    private readonly toMain: RingWriter,
    private readonly maxInputSize: number,
    /** --http-max-json-response-size. */
    private readonly maxJsonResponseSize: number,
    private readonly snapshot: () => ServerSnapshot,
    private readonly codec: CodecPool,
    /** --log-access: how a request this thread refuses itself is reported (absent: the log is off). */
    private readonly access?: (r: RefusedRequest) => void,
    /** --http-header-forward-pattern (absent: no header is forwarded). */
    private readonly forward?: RegExp,
  ) {}

  handle(reply: Reply, head: RequestHead, model: string, versionText: string | undefined): void {
    const arrivalNs = nowNs();
    const client = this.access === undefined ? undefined : reply.client;
    // A request refused here, before any scheduler: answered, and for
    // --log-access reported as this thread's own access line.
    const refused = (status: number): void => {
      if (client !== undefined) {
        this.access!({ protocol: 'HTTP', client, model, version: versionText ?? '', status, inBytes: Number(head.contentLength) || 0, id: '' });
      }
    };
    const refuse = (err: unknown): void => {
      sendError(reply, err);
      refused(HTTP_STATUS[toErrorInfo(err).code]);
    };
    let resolved: Resolved;
    try {
      // While the server stops, inferences are served until its grace period
      // ends (server-stop.ts); then the thread refuses them itself (http-thread.ts `close`).
      resolved = lookupModel(this.snapshot(), model, versionText, 'loaded');
      if (resolved.view.plan?.decoupled) {
        throw new ServerError('UNSUPPORTED', "HTTP end point doesn't support models with decoupled transaction policy");
      }
    } catch (err) {
      // Answer after the upload is in: closing a connection (at shutdown)
      // while the client still sends makes it see EPIPE instead of the error.
      readBody(reply, head, this.maxInputSize, () => refuse(err));
      return;
    }
    readBody(reply, head, this.maxInputSize, (r) => {
      if (!r.ok) {
        bodyTooLarge(reply, r.size, this.maxInputSize);
        refused(400);
        return;
      }
      try {
        this.admit(reply, head, r.body, resolved, arrivalNs, client, refuse);
      } catch (err) {
        refuse(err);
      }
    });
  }

  private admit(
    reply: Reply,
    head: RequestHead,
    raw: Buffer,
    resolved: Resolved,
    arrivalNs: number,
    client: string | undefined,
    refuse: (err: unknown) => void,
  ): void {
    const { view, version } = resolved;
    const plan = view.plan;
    if (!plan) throw new ServerError('UNAVAILABLE', `Request for unknown model: '${view.name}' version ${version} is not at ready state`);
    const task: BodyDecodeTask = {
      body: raw,
      contentEncoding: head.contentEncoding,
      headerLength: head.headerLength,
      plan,
      maxInputSize: this.maxInputSize,
      regions: this.snapshot().shmRegions,
    };
    if (!this.codec.offloadsDecode(raw.length, head.contentEncoding, head.headerLength)) {
      this.enqueue(reply, head, decodeRequestBody(task), resolved, arrivalNs, client);
      return;
    }
    // Reply registered onAborted before the body was read; a client gone
    // meanwhile gets nothing admitted, and every later write is corked.
    this.codec.decode(task).then(
      (decoded) => {
        if (reply.aborted) return;
        try {
          this.enqueue(reply, head, decoded, resolved, arrivalNs, client);
        } catch (err) {
          refuse(err);
        }
      },
      (err: unknown) => refuse(err),
    );
  }

  /** Validate, copy the inputs into the arena, send to the scheduler. */
  private enqueue(reply: Reply, head: RequestHead, decoded: DecodedRequest, resolved: Resolved, arrivalNs: number, client: string | undefined): void {
    const { view, version, latest } = resolved;
    if (this.forward !== undefined) forwardHeaders(this.forward, head.headers, decoded.parameters);
    const { batchSize } = validateRequest(view.plan!, decoded);
    const request = admitRequest(this.arena, decoded, { model: view.name, version, latest, batchSize, arrivalNs });
    if (client !== undefined) request.client = client;
    const inputs = request.inputs;
    const key = this.nextKey++;
    this.pending.set(key, { reply, head, decoded, view, version, inputs });
    // No hop: an idle instance hosted here runs it now (its client cannot be gone before the answer, so no cancel).
    const inline = this.hosted?.tryRun(request);
    if (inline !== undefined) {
      inline.then(
        (r) => this.onResponse(key, r, version),
        (err: unknown) => this.onResponse(key, failedInline(err), version),
      );
      return;
    }
    const msg: FrontendToMain = { t: 'infer', key, request };
    this.toMain.send(msg);
    if (reply.aborted)
      this.onClientGone(key); // gone while the request was being admitted
    else reply.onAbort(() => this.onClientGone(key));
  }

  /**
   * Send a request another route admitted (generate-handler.ts) on this
   * thread's ring; each of its responses goes to `listener`, which owns
   * their outputs and, with the final one, the request's inputs. The
   * client going away cancels it, as for an inference. Returns its key
   * (onClientGone cancels it: a stop sequence reached, openai-handler.ts).
   */
  submit(request: InferRequest, reply: Reply, listener: ResponseListener): number {
    const key = this.nextKey++;
    this.listeners.set(key, listener);
    const msg: FrontendToMain = { t: 'infer', key, request };
    this.toMain.send(msg);
    if (reply.aborted) this.onClientGone(key);
    else reply.onAbort(() => this.onClientGone(key));
    return key;
  }

  /**
   * The client of request `key` went away before its response: the main
   * thread cancels it (taken out of its queue, or `is_cancelled()` true in
   * the Python model running it). The request stays pending: its final
   * response still comes and frees its blocks (the reply writes nothing).
   */
  onClientGone(key: number): void {
    if (!this.pending.has(key) && !this.listeners.has(key)) return;
    const msg: FrontendToMain = { t: 'cancel', key };
    this.toMain.send(msg);
  }

  /**
   * Request `key`'s answer is complete before the model finished it (an
   * OpenAI stop sequence reached): it is cancelled as onClientGone does, and
   * its CANCELLED end is counted a success (CancelMessage `answered`).
   */
  endAnswered(key: number): void {
    if (!this.listeners.has(key)) return;
    const msg: FrontendToMain = { t: 'cancel', key, answered: true };
    this.toMain.send(msg);
  }

  /** A response from the main thread (ring message); `version` is the one that ran the request. */
  onResponse(key: number, response: InferResponse, version: number): void {
    const listener = this.listeners.get(key);
    if (listener !== undefined) {
      if (response.final) this.listeners.delete(key);
      listener(response, version);
      return;
    }
    const p = this.pending.get(key);
    if (!p) {
      releaseOutputs(this.arena, response.outputs);
      return;
    }
    if (response.final) this.pending.delete(key);
    p.version = version; // a `latest` request may have run on a newer version than this thread picked
    let offloaded = false;
    try {
      if (response.error) {
        sendError(p.reply, new ServerError(response.error.code, response.error.message));
      } else {
        offloaded = this.reply(p, response);
      }
    } catch (err) {
      sendError(p.reply, err);
    } finally {
      if (!offloaded) this.release(p, response);
    }
  }

  private release(p: PendingInfer, response: InferResponse): void {
    releaseOutputs(this.arena, response.outputs);
    if (response.final) releaseInputs(this.arena, p.inputs);
  }

  /**
   * Sends the response; true when something else now owns the release of its
   * blocks: the pool encoding it, or a large binary body being written to the
   * socket straight from the arena (Reply.sendParts).
   */
  private reply(p: PendingInfer, response: InferResponse): boolean {
    if (p.reply.aborted) return false;
    const views = response.outputs.map((o) => ({ name: o.name, data: this.arena.bytes(o.offset, o.byteSize) }));
    writeShmOutputs(views, p.decoded.outputs);
    const labels: Record<string, string[]> = {};
    for (const r of p.decoded.outputs ?? []) if (r.classification > 0 && Object.hasOwn(p.view.labels, r.name)) labels[r.name] = p.view.labels[r.name];
    const task: ResponseEncodeTask = {
      id: p.decoded.id,
      modelName: p.view.name,
      modelVersion: String(p.version),
      parameters: response.parameters,
      outputs: response.outputs,
      requested: p.decoded.outputs,
      binaryDataOutput: p.decoded.binaryDataOutput,
      batched: (p.view.plan?.maxBatchSize ?? 0) > 0,
      labels,
      acceptEncoding: p.head.acceptEncoding,
      maxJsonChars: this.maxJsonResponseSize,
    };
    const send = (r: ResponseBody): void => p.reply.send(200, r.headers, r.body);
    if (!this.codec.offloadsEncode(task)) {
      const r = encodeResponseBody(this.arena, task, true);
      if (r.parts === undefined) {
        send(r);
        return false;
      }
      p.reply.sendParts(200, r.headers, r.parts, () => this.release(p, response));
      return true;
    }
    // The pool reads the outputs in place: they are freed once it is done.
    this.codec
      .encode(task)
      .then(send)
      .catch((err: unknown) => sendError(p.reply, err))
      .finally(() => this.release(p, response));
    return true;
  }
}

function failedInline(err: unknown): InferResponse {
  return { outputs: [], error: toErrorInfo(err), final: true };
}

export function sendError(reply: Reply, err: unknown): void {
  const info = toErrorInfo(err);
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  if (info.code === 'UNSUPPORTED' && info.message === 'Unsupported compression type') headers['Accept-Encoding'] = 'gzip, deflate';
  if (info.code === 'RESOURCE_EXHAUSTED') headers['Retry-After'] = String(RETRY_AFTER_SECONDS);
  reply.send(HTTP_STATUS[info.code], headers, JSON.stringify({ error: info.message }));
}
