/**
 * `POST /v1/embeddings`: OpenAI's request body → what the handler sends an
 * embedding model, its response body, and the model contract. The contract
 * (nodetron's; Triton's OpenAI frontend serves embeddings only from vLLM
 * models): a BYTES input `text_input` (one text per request; `[1]`, or
 * `[-1, 1]` batched) and an FP32 output `embedding` (the vector, `[-1]` or
 * `[-1, -1]` batched). `dimensions`, when asked, reaches the model as the
 * request parameter of that name; a model that allows it answers a vector
 * of that length (any other length is a 400 naming `dimensions`). Pure, so
 * it is table-tested.
 */
import type { ValidationPlan } from '../../request/validation-plan';
import { bad, kind, notTextsOrTokenIds, OpenAIError, parseBodyObject, textsOrTokenIds } from './openai-request';

/** OpenAI's bound on the inputs of one embeddings request. */
export const MAX_EMBEDDING_INPUTS = 2048;

export interface EmbeddingRequest {
  model: string;
  /** One entry per vector asked: a text, or token ids (decoded with the model's tokenizer). */
  inputs: (string | number[])[];
  encoding: 'float' | 'base64';
  dimensions?: number;
}

/** Whether a model takes the embedding contract: a BYTES `text_input` and an FP32 `embedding`. */
export function isEmbeddingModel(plan: ValidationPlan): boolean {
  return (
    plan.inputs.some((i) => i.name === 'text_input' && i.datatype === 'BYTES') && plan.outputs.some((o) => o.name === 'embedding' && o.datatype === 'FP32')
  );
}

export function notEmbeddingModel(model: string): OpenAIError {
  return new OpenAIError(
    400,
    `The model '${model}' is not an embedding model: /v1/embeddings needs a BYTES input 'text_input' and an FP32 output 'embedding' (its vector); GET /v1/models lists the models, and /v1/completions serves the LLMs among them.`,
    'model',
    'model_not_embedding',
  );
}

export function parseEmbeddingRequest(body: Buffer): EmbeddingRequest {
  const d = parseBodyObject(body, 'an embedding model');
  const req: EmbeddingRequest = { model: d.model, inputs: inputs(d.input), encoding: 'float' };
  const f = d.encoding_format;
  if (f !== undefined && f !== null) {
    if (f !== 'float' && f !== 'base64')
      throw bad(`'encoding_format' must be "float" or "base64", got ${typeof f === 'string' ? JSON.stringify(f) : kind(f)}.`, 'encoding_format');
    req.encoding = f;
  }
  const dims = d.dimensions;
  if (dims !== undefined && dims !== null) {
    if (typeof dims !== 'number' || !Number.isSafeInteger(dims) || dims < 1) {
      throw bad(`'dimensions' must be a positive integer, got ${typeof dims === 'number' ? dims : kind(dims)}.`, 'dimensions');
    }
    req.dimensions = dims;
  }
  return req;
}

/** `input`: a string, an array of strings, an array of token ids, or an array of token-id arrays; none empty. */
function inputs(v: unknown): (string | number[])[] {
  const what = `'input' is required: a string, an array of strings, an array of token ids or an array of token-id arrays, none empty`;
  const list = textsOrTokenIds(v);
  if (list === undefined) throw bad(`${what}, got ${notTextsOrTokenIds(v)}.`, 'input');
  const empty = list.findIndex((s) => s === '');
  if (empty >= 0) throw bad(`${what}: input[${empty}] is an empty string.`, 'input');
  if (list.length > MAX_EMBEDDING_INPUTS) throw bad(`'input' holds ${list.length} entries; one request takes at most ${MAX_EMBEDDING_INPUTS}.`, 'input');
  return list;
}

/** OpenAI's response: one `embedding` object per input, in input order; base64 is the little-endian float32 bytes. */
export function embeddingsBody(model: string, vectors: readonly Float32Array[], encoding: EmbeddingRequest['encoding'], promptTokens: number): string {
  const data = vectors.map((v, index) => ({
    object: 'embedding',
    index,
    embedding: encoding === 'base64' ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') : Array.from(v),
  }));
  return JSON.stringify({ object: 'list', data, model, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } });
}
