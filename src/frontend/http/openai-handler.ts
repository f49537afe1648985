/**
 * The OpenAI-compatible frontend on an HTTP thread, in the same process as
 * every other route (Triton's is a separate Python server; this one shares
 * the scheduler): `GET /v1/models`, `POST /v1/completions`,
 * `POST /v1/chat/completions`.
 * body → openai-request.ts → prompt (chat: the model's template,
 * openai-model-text.ts) → Triton's LLM contract (`text_input`, `stream`,
 * sampling fields as request parameters) → validate → arena → the thread's
 * ring (InferHandler.submit, the generate path's) … each response's
 * `text_output` → `stop` cut → one body, or SSE chunks ended by
 * `data: [DONE]` (openai-response.ts). A stop sequence reached, or the
 * client gone, cancels the request in the scheduler and the model.
 */
import { randomUUID } from 'node:crypto';
import { HTTP_STATUS, ServerError, toErrorInfo } from '../../core/errors';
import { nowNs } from '../../core/clock';
import type { InferResponse, TensorRef } from '../../core/request';
import type { Arena } from '../../dataplane/arena';
import { admitRequest, releaseInputs, releaseOutputs } from '../../request/admit-request';
import type { DecodedInput, DecodedRequest } from '../../request/decoded-request';
import { lookupModel, type Resolved } from '../../request/model-lookup';
import type { ServerSnapshot } from '../../request/server-snapshot';
import type { ValidationPlan } from '../../request/validation-plan';
import { validateRequest } from '../../request/validate';
import { generateShape } from './generate-request-decode';
import { bodyTooLarge, readBody, type Reply, type ReplyStream, type RequestHead } from './http-reply';
import type { InferHandler } from './infer-handler';
import { jsonTensorBytes } from './json-tensor-data';
import { ModelTexts, type ModelText } from './openai-model-text';
import { OpenAIError, parseOpenAIRequest, type OpenAIRequest } from './openai-request';
import {
  chatBody, chunkEvent, completionBody, DONE_EVENT, errorBody, modelList, modelObject, sse, stopScan, usage, type FinishReason, type ResponseIds,
} from './openai-response';

const SSE_HEADERS = { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' };
const JSON_HEADERS = { 'Content-Type': 'application/json' };

/** One OpenAI request between its admission and its final response. */
interface Exchange {
  reply: Reply;
  req: OpenAIRequest;
  ids: ResponseIds;
  prompt: string;
  text: ModelText;
  inputs: TensorRef[];
  key: number;
  /** The generated text so far, and how much of it went out (streaming). */
  out: string;
  sent: number;
  /** A stop sequence ended the text: answered then, later responses only free their blocks. */
  stopped: boolean;
  /** The model's error, answered (non-streaming) or sent as an event. */
  error?: OpenAIError;
  sse?: ReplyStream;
}

export class OpenAIHandler {
  private readonly texts = new ModelTexts();

  constructor(
    private readonly arena: Arena,
    private readonly infer: InferHandler,
    private readonly maxInputSize: number,
    private readonly snapshot: () => ServerSnapshot,
  ) {}

  /** `GET /v1/models`, or `GET /v1/models/<model>` (one model object, or 404). */
  models(reply: Reply, model?: string): void {
    const snap = this.snapshot();
    const now = Math.floor(Date.now() / 1000);
    if (model === undefined) {
      reply.send(200, JSON_HEADERS, modelList(Object.keys(snap.models).filter((m) => servable(snap, m)).sort(), now));
      return;
    }
    if (!servable(snap, model)) return sendOpenAIError(reply, unknownModel(model));
    reply.send(200, JSON_HEADERS, JSON.stringify(modelObject(model, now)));
  }

  handle(reply: Reply, head: RequestHead, kind: OpenAIRequest['kind']): void {
    const arrivalNs = nowNs();
    readBody(reply, head, this.maxInputSize, (r) => {
      if (!r.ok) {
        bodyTooLarge(reply, r.size, this.maxInputSize);
        return;
      }
      try {
        this.start(reply, r.body, kind, arrivalNs);
      } catch (err) {
        sendOpenAIError(reply, asOpenAIError(err));
      }
    });
  }

  private start(reply: Reply, body: Buffer, kind: OpenAIRequest['kind'], arrivalNs: number): void {
    const req = parseOpenAIRequest(body, kind);
    let resolved: Resolved;
    try {
      resolved = lookupModel(this.snapshot(), req.model, undefined, 'loaded');
    } catch {
      throw unknownModel(req.model);
    }
    const { view, version, latest } = resolved;
    const plan = view.plan;
    if (plan === undefined) throw new OpenAIError(503, `The model '${view.name}' is not ready.`, 'model');
    const text = this.texts.get(view.dir, view.name);
    const prompt = req.prompt ?? text.renderChat(req.messages ?? []);
    const decoded = llmRequest(plan, prompt, req, this.maxInputSize);
    const { batchSize } = validateRequest(plan, decoded);
    const request = admitRequest(this.arena, decoded, { model: view.name, version, latest, batchSize, arrivalNs });
    const ids: ResponseIds = { id: `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomUUID()}`, created: Math.floor(Date.now() / 1000), model: view.name };
    const x: Exchange = { reply, req, ids, prompt, text, inputs: request.inputs, key: 0, out: req.echo ? prompt : '', sent: 0, stopped: false };
    x.key = this.infer.submit(request, reply, (response) => this.onResponse(x, response));
  }

  private onResponse(x: Exchange, response: InferResponse): void {
    try {
      if (!x.reply.aborted && !x.stopped && x.error === undefined) this.take(x, response);
      if (response.final && !x.reply.aborted && !x.stopped) this.finish(x);
    } catch (err) {
      const e = asOpenAIError(err);
      if (x.sse !== undefined) x.sse.end(sse(errorBody(e)));
      else sendOpenAIError(x.reply, e);
    } finally {
      releaseOutputs(this.arena, response.outputs);
      if (response.final) releaseInputs(this.arena, x.inputs);
    }
  }

  private take(x: Exchange, response: InferResponse): void {
    if (response.error !== undefined) {
      const status = HTTP_STATUS[response.error.code];
      x.error = new OpenAIError(status, `model '${x.ids.model}': ${response.error.message}`, null, response.error.code.toLowerCase(), status >= 500 ? 'server_error' : 'invalid_request_error');
      if (x.sse !== undefined) x.sse.write(sse(errorBody(x.error)));
      // A model error ends the request's text: the model is told to stop.
      this.infer.onClientGone(x.key);
      return;
    }
    const out = response.outputs.find((o) => o.name === 'text_output');
    if (out === undefined) return;
    x.out += bytesText(this.arena.bytes(out.offset, out.byteSize));
    // `echo`'s prompt leads the text; stop sequences are looked for in the generated part only.
    const base = x.req.echo ? x.prompt.length : 0;
    const scan = stopScan(x.out.slice(base), x.req.stop);
    if (scan.stopAt !== undefined) {
      x.out = x.out.slice(0, base + scan.stopAt);
      x.stopped = true;
      this.infer.onClientGone(x.key); // the text is complete: the model stops generating
      this.finish(x); // answered now, not when the model has stopped
      return;
    }
    if (x.req.stream) this.send(x, base + scan.safe);
  }

  /** Stream the text up to `upTo` that has not gone out yet (chat: the first chunk names the role). */
  private send(x: Exchange, upTo: number): void {
    if (x.sse === undefined) {
      x.sse = x.reply.stream(200, SSE_HEADERS);
      if (x.req.kind === 'chat') x.sse.write(chunkEvent('chat', x.ids, { role: true }));
    }
    if (upTo <= x.sent) return;
    x.sse.write(chunkEvent(x.req.kind, x.ids, { text: x.out.slice(x.sent, upTo) }));
    x.sent = upTo;
  }

  private finish(x: Exchange): void {
    // An error before anything went out is the answer, with its status.
    if (x.error !== undefined && x.sse === undefined) return sendOpenAIError(x.reply, x.error);
    const completion = x.text.count(x.req.echo ? x.out.slice(x.prompt.length) : x.out);
    const u = usage(x.text.count(x.prompt), completion);
    const finish: FinishReason = x.stopped ? 'stop' : x.req.maxTokens !== undefined && completion >= x.req.maxTokens ? 'length' : 'stop';
    if (!x.req.stream) {
      const body = x.req.kind === 'chat' ? chatBody(x.ids, x.out, finish, u) : completionBody(x.ids, x.out, finish, u);
      x.reply.send(200, JSON_HEADERS, body);
      return;
    }
    this.send(x, x.out.length);
    const s = x.sse!;
    if (x.error === undefined) s.write(chunkEvent(x.req.kind, x.ids, { finish }));
    if (x.req.includeUsage) s.write(chunkEvent(x.req.kind, x.ids, { usage: u }));
    s.end(DONE_EVENT);
  }
}

function unknownModel(model: string): OpenAIError {
  return new OpenAIError(404, `The model '${model}' does not exist or is not loaded: GET /v1/models lists the models this server serves.`, 'model', 'model_not_found');
}

/** Whether `/v1/models` lists the model: loaded, and it takes Triton's LLM contract. */
function servable(snap: ServerSnapshot, name: string): boolean {
  try {
    const { view } = lookupModel(snap, name, undefined, 'loaded');
    return view.plan?.inputs.some((i) => i.name === 'text_input') === true && view.plan.outputs.some((o) => o.name === 'text_output');
  } catch {
    return false;
  }
}

/**
 * The request a Triton LLM model takes (Triton's OpenAI frontend's
 * contract): `text_input` the prompt, `stream` when the model has it,
 * `exclude_input_in_output` true and `sampling_parameters` as JSON when it
 * declares them (vLLM-style model.py files), the sampling fields also as
 * request parameters.
 */
export function llmRequest(plan: ValidationPlan, prompt: string, req: OpenAIRequest, maxInputSize: number): DecodedRequest {
  const byName = new Map(plan.inputs.map((i) => [i.name, i]));
  const textIn = byName.get('text_input');
  if (textIn === undefined || textIn.datatype !== 'BYTES' || !plan.outputs.some((o) => o.name === 'text_output')) {
    throw new OpenAIError(400, `The model '${plan.modelName}' does not take Triton's LLM contract (a BYTES input 'text_input' and an output 'text_output'), which the /v1 routes need; use /v2/models/${plan.modelName}/infer instead.`, 'model');
  }
  const inputs: DecodedInput[] = [];
  const add = (name: string, datatype: string, value: string | boolean): void => {
    const input = byName.get(name)!;
    const shape = generateShape(name, plan.maxBatchSize > 0 ? [-1, ...input.dims] : [...input.dims], 1);
    inputs.push({ name, datatype, shape, data: jsonTensorBytes(name, datatype, [value], 1, maxInputSize), parameters: {} });
  };
  add('text_input', 'BYTES', prompt);
  if (byName.get('stream')?.datatype === 'BOOL') add('stream', 'BOOL', req.stream);
  if (byName.get('exclude_input_in_output')?.datatype === 'BOOL') add('exclude_input_in_output', 'BOOL', true);
  if (byName.get('sampling_parameters')?.datatype === 'BYTES') add('sampling_parameters', 'BYTES', samplingJson(req));
  return { id: '', inputs, outputs: null, parameters: { ...req.parameters }, binaryDataOutput: false };
}

function samplingJson(req: OpenAIRequest): string {
  const p: Record<string, unknown> = { ...req.parameters };
  if (req.stop.length > 0) p.stop = req.stop;
  return JSON.stringify(p);
}

/** The elements of a BYTES tensor (4-byte little-endian length, then the bytes), joined as UTF-8 text. */
export function bytesText(b: Uint8Array): string {
  const view = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  let s = '';
  for (let at = 0; at + 4 <= view.length;) {
    const n = view.readUInt32LE(at);
    s += view.toString('utf8', at + 4, at + 4 + n);
    at += 4 + n;
  }
  return s;
}

export function asOpenAIError(err: unknown): OpenAIError {
  if (err instanceof OpenAIError) return err;
  const info = toErrorInfo(err);
  const status = HTTP_STATUS[info.code];
  return new OpenAIError(status, info.message, null, err instanceof ServerError ? info.code.toLowerCase() : null);
}

export function sendOpenAIError(reply: Reply, e: OpenAIError): void {
  reply.send(e.status, JSON_HEADERS, errorBody(e));
}
