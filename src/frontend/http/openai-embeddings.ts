/**
 * `POST /v1/embeddings` on an HTTP thread: body → openai-embedding-request.ts
 * → the model (its folder's tokenizer reads token-id inputs and counts
 * `usage`, openai-model-text.ts) → one request per input in the embedding
 * contract (`text_input` → FP32 `embedding`; the scheduler batches them
 * when the model's config batches) → validate → arena → the thread's ring
 * (InferHandler.submit) … every final response's `embedding` → one body,
 * vectors in input order. A model error fails the request (the other inputs
 * are cancelled); the client gone cancels them all.
 */
import { HTTP_STATUS } from '../../core/errors';
import { nowNs } from '../../core/clock';
import type { InferResponse, TensorRef } from '../../core/request';
import type { Arena } from '../../dataplane/arena';
import { admitAll, releaseInputs, releaseOutputs } from '../../request/admit-request';
import type { DecodedRequest } from '../../request/decoded-request';
import type { Resolved } from '../../request/model-lookup';
import type { ServerSnapshot } from '../../request/server-snapshot';
import type { ValidationPlan } from '../../request/validation-plan';
import { validateRequest } from '../../request/validate';
import { generateShape } from './generate-request-decode';
import { JSON_HEADERS, type Reply, type RequestHead } from './http-reply';
import type { InferHandler } from './infer-handler';
import { jsonTensorBytes } from './json-tensor-data';
import { embeddingsBody, isEmbeddingModel, notEmbeddingModel, parseEmbeddingRequest, type EmbeddingRequest } from './openai-embedding-request';
import { asOpenAIError, lookupLoaded, sendOpenAIError, takeOpenAIRequest } from './openai-handler';
import type { ModelText, ModelTexts } from './openai-model-text';
import { OpenAIError } from './openai-request';

/** One embeddings request between its admission and the last final response of its inputs. */
interface Batch {
  reply: Reply;
  req: EmbeddingRequest;
  model: string;
  vectors: (Float32Array | undefined)[];
  inputs: TensorRef[][];
  keys: number[];
  open: number;
  promptTokens: number;
  error?: OpenAIError;
}

export class EmbeddingsHandler {
  constructor(
    private readonly arena: Arena,
    private readonly infer: InferHandler,
    private readonly maxInputSize: number,
    private readonly snapshot: () => ServerSnapshot,
    private readonly texts: ModelTexts,
  ) {}

  handle(reply: Reply, head: RequestHead): void {
    const arrivalNs = nowNs();
    takeOpenAIRequest(
      reply,
      head,
      this.maxInputSize,
      this.texts,
      (body) => {
        const req = parseEmbeddingRequest(body);
        const resolved = lookupLoaded(this.snapshot(), req.model);
        const plan = resolved.view.plan;
        if (plan === undefined) throw new OpenAIError(503, `The model '${resolved.view.name}' is not ready.`, 'model');
        if (!isEmbeddingModel(plan)) throw notEmbeddingModel(resolved.view.name);
        return { req, resolved };
      },
      (req, resolved, text) => this.start(reply, req, resolved, text, arrivalNs),
    );
  }

  private start(reply: Reply, req: EmbeddingRequest, resolved: Resolved, text: ModelText, arrivalNs: number): void {
    const { view, version, latest } = resolved;
    const plan = view.plan!;
    let promptTokens = 0;
    const planned = req.inputs.map((input, i) => {
      const s = inputText(input, i, text, view.name);
      promptTokens += typeof input === 'string' ? text.count(input) : input.length;
      const decoded = embeddingRequest(plan, s, req.dimensions, this.maxInputSize);
      return { decoded, batchSize: validateRequest(plan, decoded).batchSize };
    });
    const requests = admitAll(this.arena, planned, { model: view.name, version, latest, arrivalNs });
    const b: Batch = {
      reply,
      req,
      model: view.name,
      vectors: requests.map(() => undefined),
      inputs: requests.map((r) => r.inputs),
      keys: [],
      open: requests.length,
      promptTokens,
    };
    requests.forEach((r, i) => b.keys.push(this.infer.submit(r, reply, (response) => this.onResponse(b, i, response))));
  }

  private onResponse(b: Batch, i: number, response: InferResponse): void {
    try {
      if (!b.reply.aborted && b.error === undefined) this.take(b, i, response);
    } catch (err) {
      this.fail(b, asOpenAIError(err));
    } finally {
      releaseOutputs(this.arena, response.outputs);
      if (response.final) {
        releaseInputs(this.arena, b.inputs[i]!);
        if (--b.open === 0) this.finish(b);
      }
    }
  }

  private take(b: Batch, i: number, response: InferResponse): void {
    if (response.error !== undefined) {
      const status = HTTP_STATUS[response.error.code];
      return this.fail(b, new OpenAIError(status, `model '${b.model}': ${response.error.message}`, null, response.error.code.toLowerCase()));
    }
    const out = response.outputs.find((o) => o.name === 'embedding');
    if (out === undefined) return; // an empty final
    if (out.datatype !== 'FP32') throw new OpenAIError(500, `model '${b.model}' answered 'embedding' as ${out.datatype}; the embedding contract wants FP32.`);
    const bytes = this.arena.bytes(out.offset, out.byteSize);
    const v = new Float32Array(bytes.slice().buffer); // copied: the arena block is freed after this response
    const want = b.req.dimensions;
    if (want !== undefined && v.length !== want) {
      throw new OpenAIError(
        400,
        `The model '${b.model}' does not support 'dimensions' = ${want}: it answered a vector of ${v.length} values; leave 'dimensions' out or ask the model's own size.`,
        'dimensions',
      );
    }
    b.vectors[i] = v;
  }

  /** The first error is the answer; the other inputs' requests are cancelled. */
  private fail(b: Batch, e: OpenAIError): void {
    if (b.error !== undefined) return;
    b.error = e;
    for (const key of b.keys) this.infer.onClientGone(key);
  }

  private finish(b: Batch): void {
    if (b.error !== undefined) return sendOpenAIError(b.reply, b.error);
    const missing = b.vectors.findIndex((v) => v === undefined);
    if (missing >= 0) return sendOpenAIError(b.reply, new OpenAIError(500, `model '${b.model}' answered no 'embedding' for input[${missing}].`));
    b.reply.send(200, JSON_HEADERS, embeddingsBody(b.model, b.vectors as Float32Array[], b.req.encoding, b.promptTokens));
  }
}

/** An input as text: token ids are decoded with the model's tokenizer, or refused. */
function inputText(input: string | number[], i: number, text: ModelText, model: string): string {
  if (typeof input === 'string') return input;
  const s = text.decode(input);
  if (s === undefined)
    throw new OpenAIError(
      400,
      `input[${i}] is token ids, but the model '${model}' has no tokenizer.json in its folder to read them with; send the input as text.`,
      'input',
    );
  return s;
}

/** The model request for one input: `text_input` the text, `dimensions` a request parameter when asked. */
export function embeddingRequest(plan: ValidationPlan, text: string, dimensions: number | undefined, maxInputSize: number): DecodedRequest {
  const input = plan.inputs.find((i) => i.name === 'text_input')!;
  const shape = generateShape('text_input', plan.maxBatchSize > 0 ? [-1, ...input.dims] : [...input.dims], 1);
  return {
    id: '',
    inputs: [{ name: 'text_input', datatype: 'BYTES', shape, data: jsonTensorBytes('text_input', 'BYTES', [text], 1, maxInputSize), parameters: {} }],
    outputs: null,
    parameters: dimensions === undefined ? {} : { dimensions },
    binaryDataOutput: false,
  };
}
