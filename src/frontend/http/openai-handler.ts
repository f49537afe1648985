/**
 * The OpenAI-compatible frontend on an HTTP thread, in the same process as
 * every other route (Triton's is a separate Python server; this one shares
 * the scheduler): `GET /v1/models`, `POST /v1/completions`,
 * `POST /v1/chat/completions` (`POST /v1/embeddings`: openai-embeddings.ts).
 * body → openai-request.ts → prompts (chat: the model's template; token-id
 * prompts: its tokenizer, openai-model-text.ts, read off the event loop) →
 * one request per choice (prompts × `n`) in Triton's LLM contract
 * (openai-llm-request.ts) → validate → arena → the thread's ring
 * (InferHandler.submit, the generate path's) … each response's
 * `text_output` → its choice's text, cut at a stop sequence
 * (openai-response.ts stopScan) → one body with every choice, or SSE chunks
 * (each with its choice's `index`) ended by `data: [DONE]`. A stop sequence
 * reached cancels that choice's request as answered (counted a success); the
 * client gone cancels them all.
 */
import { randomUUID } from 'node:crypto';
import { HTTP_STATUS, ServerError, toErrorInfo, type ErrorCode } from '../../core/errors';
import { nowNs } from '../../core/clock';
import type { InferResponse, TensorRef } from '../../core/request';
import type { Arena } from '../../dataplane/arena';
import { admitAll, releaseInputs, releaseOutputs } from '../../request/admit-request';
import { lookupModel, type Resolved } from '../../request/model-lookup';
import type { ServerSnapshot } from '../../request/server-snapshot';
import { validateRequest } from '../../request/validate';
import { JSON_HEADERS, SSE_HEADERS, bodyTooLarge, readBody, type Reply, type ReplyStream, type RequestHead } from './http-reply';
import type { InferHandler } from './infer-handler';
import { isEmbeddingModel } from './openai-embedding-request';
import { bytesText, llmRequest, takesLlmContract } from './openai-llm-request';
import { ModelTexts, type ModelText } from './openai-model-text';
import { OpenAIError, parseOpenAIRequest, type OpenAIRequest } from './openai-request';
import {
  chatBody,
  chunkEvent,
  completionBody,
  DONE_EVENT,
  errorBody,
  modelList,
  modelObject,
  sse,
  stopScan,
  usage,
  type FinishReason,
  type ResponseIds,
} from './openai-response';

/** One choice of a request: one request to the model, from admission to its final response. */
interface Choice {
  index: number;
  prompt: string;
  inputs: TensorRef[];
  key: number;
  /** The generated text so far, and how much of it went out (streaming). */
  out: string;
  sent: number;
  /** Its first chunk went out (chat: it names the role). */
  opened: boolean;
  /** A stop sequence ended the text: later responses only free their blocks. */
  stopped: boolean;
  /** Answered: its text is complete (stop, final response or error). */
  done: boolean;
  failed: boolean;
  /** Its generated text's token count, counted once it is complete (finish_reason and usage both need it). */
  tokens?: number;
}

/** One OpenAI request between its admission and the last final response of its choices. */
interface Exchange {
  reply: Reply;
  req: OpenAIRequest;
  ids: ResponseIds;
  text: ModelText;
  /** The distinct prompts (for `usage.prompt_tokens`: each counted once, whatever `n`). */
  prompts: string[];
  choices: Choice[];
  /** Choices not done yet. */
  open: number;
  /** The model's error, answered (nothing went out yet) or sent as an event. */
  error?: OpenAIError;
  sse?: ReplyStream;
  /** Our own failure while answering (not the model's): answered once, every choice cancelled, the rest ignored. */
  broken?: boolean;
}

export class OpenAIHandler {
  readonly texts = new ModelTexts();

  constructor(
    private readonly arena: Arena,
    private readonly infer: InferHandler,
    private readonly maxInputSize: number,
    private readonly snapshot: () => ServerSnapshot,
  ) {}

  /** A new snapshot: read the text files of the models it serves now, before their first request. */
  warm(snap: ServerSnapshot): void {
    const models: { dir: string | undefined; name: string; load?: number }[] = [];
    for (const name of Object.keys(snap.models)) {
      try {
        const { view } = lookupModel(snap, name, undefined, 'loaded');
        if (view.plan !== undefined && (takesLlmContract(view.plan) || isEmbeddingModel(view.plan))) models.push({ dir: view.dir, name, load: view.loads });
      } catch {
        // not loaded: nothing to read
      }
    }
    this.texts.warm(models);
  }

  /** `GET /v1/models`, or `GET /v1/models/<model>` (one model object, or 404). */
  models(reply: Reply, model?: string): void {
    const snap = this.snapshot();
    const now = Math.floor(Date.now() / 1000);
    if (model === undefined) {
      reply.send(
        200,
        JSON_HEADERS,
        modelList(
          Object.keys(snap.models)
            .filter((m) => servable(snap, m))
            .sort(),
          now,
        ),
      );
      return;
    }
    if (!servable(snap, model)) return sendOpenAIError(reply, unknownModel(model));
    reply.send(200, JSON_HEADERS, JSON.stringify(modelObject(model, now)));
  }

  handle(reply: Reply, head: RequestHead, kind: OpenAIRequest['kind']): void {
    const arrivalNs = nowNs();
    takeOpenAIRequest(
      reply,
      head,
      this.maxInputSize,
      this.texts,
      (body) => {
        const req = parseOpenAIRequest(body, kind);
        return { req, resolved: lookupLoaded(this.snapshot(), req.model) };
      },
      (req, resolved, text) => this.start(reply, req, resolved, text, arrivalNs),
    );
  }

  private start(reply: Reply, req: OpenAIRequest, resolved: Resolved, text: ModelText, arrivalNs: number): void {
    const { view, version, latest } = resolved;
    const plan = view.plan;
    if (plan === undefined) throw new OpenAIError(503, `The model '${view.name}' is not ready.`, 'model');
    const prompts = req.prompts === undefined ? [text.renderChat(req.messages ?? [])] : req.prompts.map((p, i) => promptText(p, i, text, view.name));
    // Every choice is validated before any is admitted, so a bad one admits nothing.
    const planned = prompts.flatMap((prompt) =>
      Array.from({ length: req.n }, (_, j) => {
        const decoded = llmRequest(plan, prompt, req, this.maxInputSize, j);
        return { prompt, decoded, batchSize: validateRequest(plan, decoded).batchSize };
      }),
    );
    const requests = admitAll(this.arena, planned, { model: view.name, version, latest, arrivalNs });
    const ids: ResponseIds = { id: `${req.kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomUUID()}`, created: Math.floor(Date.now() / 1000), model: view.name };
    const choices = planned.map((p, index): Choice => ({
      index,
      prompt: p.prompt,
      inputs: requests[index]!.inputs,
      key: 0,
      out: req.echo ? p.prompt : '',
      sent: 0,
      opened: false,
      stopped: false,
      done: false,
      failed: false,
    }));
    const x: Exchange = { reply, req, ids, text, prompts, choices, open: choices.length };
    for (const c of choices) c.key = this.infer.submit(requests[c.index]!, reply, (response) => this.onResponse(x, c, response));
  }

  private onResponse(x: Exchange, c: Choice, response: InferResponse): void {
    try {
      if (!x.reply.aborted && !c.done && x.broken !== true) {
        this.take(x, c, response);
        if (response.final && !c.done) this.choiceDone(x, c);
      }
    } catch (err) {
      x.broken = true;
      for (const other of x.choices) if (!other.done) this.infer.onClientGone(other.key);
      const e = asOpenAIError(err);
      if (x.sse !== undefined) x.sse.end(sse(errorBody(e)));
      else sendOpenAIError(x.reply, e);
    } finally {
      releaseOutputs(this.arena, response.outputs);
      if (response.final) releaseInputs(this.arena, c.inputs);
    }
  }

  private take(x: Exchange, c: Choice, response: InferResponse): void {
    if (response.error !== undefined) return this.fail(x, c, response.error.code, response.error.message);
    if (x.error !== undefined && x.sse === undefined) return; // the request failed before anything went out
    const out = response.outputs.find((o) => o.name === 'text_output');
    if (out === undefined) return;
    c.out += bytesText(this.arena.bytes(out.offset, out.byteSize));
    // `echo`'s prompt leads the text; stop sequences are looked for in the generated part only.
    const base = x.req.echo ? c.prompt.length : 0;
    const scan = stopScan(c.out.slice(base), x.req.stop);
    if (scan.stopAt !== undefined) {
      c.out = c.out.slice(0, base + scan.stopAt);
      c.stopped = true;
      this.infer.endAnswered(c.key); // the text is complete: the model stops generating, and it counts as a success
      this.choiceDone(x, c); // answered now, not when the model has stopped
      return;
    }
    if (x.req.stream) this.send(x, c, base + scan.safe);
  }

  /**
   * A choice's model error. Streaming, once something went out: an error
   * event, and that choice ends. Before anything went out (or not
   * streaming): the request's answer is that error with its status, and the
   * other choices are cancelled.
   */
  private fail(x: Exchange, c: Choice, code: ErrorCode, message: string): void {
    const status = HTTP_STATUS[code];
    const e = new OpenAIError(status, `model '${x.ids.model}': ${message}`, null, code.toLowerCase(), status >= 500 ? 'server_error' : 'invalid_request_error');
    c.failed = true;
    this.infer.onClientGone(c.key); // a model error ends the choice's text: the model is told to stop
    if (x.sse !== undefined) {
      x.sse.write(sse(errorBody(e)));
    } else if (x.error === undefined) {
      x.error = e;
      for (const other of x.choices) if (other !== c && !other.done) this.infer.onClientGone(other.key);
    }
    this.choiceDone(x, c);
  }

  /** Stream choice `c`'s text up to `upTo` that has not gone out yet (chat: its first chunk names the role). */
  private send(x: Exchange, c: Choice, upTo: number): void {
    x.sse ??= x.reply.stream(200, SSE_HEADERS);
    if (!c.opened) {
      c.opened = true;
      if (x.req.kind === 'chat') x.sse.write(chunkEvent('chat', x.ids, { index: c.index, role: true }));
    }
    if (upTo <= c.sent) return;
    x.sse.write(chunkEvent(x.req.kind, x.ids, { index: c.index, text: c.out.slice(c.sent, upTo) }));
    c.sent = upTo;
  }

  private finishReason(x: Exchange, c: Choice): FinishReason {
    if (c.stopped || x.req.maxTokens === undefined) return 'stop';
    return this.completionTokens(x, c) >= x.req.maxTokens ? 'length' : 'stop';
  }

  /** The tokens of a complete choice's generated text (`echo`'s prompt not counted), tokenized once. */
  private completionTokens(x: Exchange, c: Choice): number {
    return (c.tokens ??= x.text.count(x.req.echo ? c.out.slice(c.prompt.length) : c.out));
  }

  /** Choice `c`'s text is complete: streaming, its rest and its finish chunk go; the last one answers the request. */
  private choiceDone(x: Exchange, c: Choice): void {
    c.done = true;
    x.open--;
    if (x.req.stream && x.error === undefined && !c.failed) {
      this.send(x, c, c.out.length);
      x.sse!.write(chunkEvent(x.req.kind, x.ids, { index: c.index, finish: this.finishReason(x, c) }));
    }
    if (x.open === 0) this.finish(x);
  }

  private finish(x: Exchange): void {
    // An error before anything went out is the answer, with its status.
    if (x.error !== undefined && x.sse === undefined) return sendOpenAIError(x.reply, x.error);
    let completion = 0;
    for (const c of x.choices) completion += this.completionTokens(x, c);
    let prompt = 0;
    for (const p of x.prompts) prompt += x.text.count(p);
    const u = usage(prompt, completion);
    if (!x.req.stream) {
      const choices = x.choices.map((c) => ({ index: c.index, text: c.out, finish: this.finishReason(x, c) }));
      x.reply.send(200, JSON_HEADERS, x.req.kind === 'chat' ? chatBody(x.ids, choices, u) : completionBody(x.ids, choices, u));
      return;
    }
    const s = (x.sse ??= x.reply.stream(200, SSE_HEADERS));
    if (x.req.includeUsage) s.write(chunkEvent(x.req.kind, x.ids, { usage: u }));
    s.end(DONE_EVENT);
  }
}

/** A completions prompt as text: token ids are decoded with the model's tokenizer, or refused. */
function promptText(p: string | number[], i: number, text: ModelText, model: string): string {
  if (typeof p === 'string') return p;
  const decoded = text.decode(p);
  if (decoded === undefined) {
    throw new OpenAIError(
      400,
      `'prompt'${i > 0 ? `[${i}]` : ''} is token ids, but the model '${model}' has no tokenizer.json in its folder to read them with; send the prompt as text.`,
      'prompt',
    );
  }
  return decoded;
}

/**
 * The steps every OpenAI route's POST begins with: the body read (over
 * --http-max-input-size: the 400 that says so), then `parse`d into the
 * request and its model (a bad body or an unknown model: answered in
 * OpenAI's shape), the model's text files read (openai-model-text.ts), and
 * `start`, unless the client went away meanwhile; what `start` throws is
 * answered too.
 */
export function takeOpenAIRequest<R>(
  reply: Reply,
  head: RequestHead,
  maxInputSize: number,
  texts: ModelTexts,
  parse: (body: Buffer) => { req: R; resolved: Resolved },
  start: (req: R, resolved: Resolved, text: ModelText) => void,
): void {
  readBody(reply, head, maxInputSize, (r) => {
    if (!r.ok) {
      bodyTooLarge(reply, r.size, maxInputSize);
      return;
    }
    let parsed: { req: R; resolved: Resolved };
    try {
      parsed = parse(r.body);
    } catch (err) {
      return sendOpenAIError(reply, asOpenAIError(err));
    }
    const { req, resolved } = parsed;
    texts
      .get(resolved.view.dir, resolved.view.name, resolved.view.loads)
      .then((text) => {
        if (!reply.aborted) start(req, resolved, text);
      })
      .catch((err: unknown) => sendOpenAIError(reply, asOpenAIError(err)));
  });
}

export function lookupLoaded(snap: ServerSnapshot, model: string): Resolved {
  try {
    return lookupModel(snap, model, undefined, 'loaded');
  } catch {
    throw unknownModel(model);
  }
}

export function unknownModel(model: string): OpenAIError {
  return new OpenAIError(
    404,
    `The model '${model}' does not exist or is not loaded: GET /v1/models lists the models this server serves.`,
    'model',
    'model_not_found',
  );
}

/** Whether `/v1/models` lists the model: loaded, and it takes Triton's LLM contract or the embedding one. */
function servable(snap: ServerSnapshot, name: string): boolean {
  try {
    const plan = lookupModel(snap, name, undefined, 'loaded').view.plan;
    return plan !== undefined && (takesLlmContract(plan) || isEmbeddingModel(plan));
  } catch {
    return false;
  }
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
