/**
 * The OpenAI-compatible frontend's request bodies (`POST /v1/completions`,
 * `POST /v1/chat/completions`) → what the handler sends the model, checked
 * leniently as OpenAI clients expect: unknown fields are ignored, known ones
 * must have their type. The model contract is Triton's OpenAI frontend's:
 * the prompt goes to `text_input`, `stream` to the `stream` input, and the
 * sampling fields (`max_tokens`, `temperature`, `top_p`, `seed`, ...) to
 * request parameters of the same name. Errors carry OpenAI's error shape
 * (openai-response.ts errorBody). The body's JSON object, its `model` and
 * a list of texts or token ids are read here for `/v1/embeddings` too
 * (openai-embedding-request.ts). Pure, so it is table-tested.
 */
import type { ParamValue } from '../../core/request';

export class OpenAIError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly type = status === 404 ? 'invalid_request_error' : status >= 500 ? 'server_error' : 'invalid_request_error',
  ) {
    super(message);
    this.name = 'OpenAIError';
  }
}

export interface ChatMessage {
  role: string;
  content: string;
  [k: string]: unknown;
}

export interface OpenAIRequest {
  kind: 'completion' | 'chat';
  model: string;
  /**
   * completions: the prompts, each a text or token ids (decoded with the
   * model's tokenizer by the handler); chat: absent, the template renders
   * `messages` into the one prompt.
   */
  prompts?: (string | number[])[];
  messages?: ChatMessage[];
  stream: boolean;
  /** `stream_options.include_usage`: a last chunk carries `usage` (OpenAI's streaming rule). */
  includeUsage: boolean;
  /** `echo` (completions): the prompt comes back before the text. */
  echo: boolean;
  maxTokens?: number;
  /** Choices per prompt (`n`): each one its own request to the model. */
  n: number;
  stop: string[];
  /** Request parameters for the model: the sampling fields given, by their OpenAI names. */
  parameters: Record<string, ParamValue>;
}

export type JsonObject = Record<string, unknown>;

/** Sampling fields passed to the model as request parameters when given (Triton's OpenAI frontend passes them on). */
const NUMBER_PARAMS = ['temperature', 'top_p', 'frequency_penalty', 'presence_penalty'] as const;
const INTEGER_PARAMS = ['seed', 'top_k', 'min_tokens'] as const;
const MAX_STOPS = 4;
/** The most choices one request may ask for (`n`, and prompts × n): OpenAI's own bound on `n`. */
export const MAX_CHOICES = 128;

/** A 400 naming the field at fault. */
export function bad(message: string, param: string): OpenAIError {
  return new OpenAIError(400, message, param);
}

/** What a JSON value is, for "got ..." in an error. */
export function kind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** The body as one JSON object with a non-empty `model` (`what`: the kind of model the route serves). */
export function parseBodyObject(body: Buffer, what: string): JsonObject & { model: string } {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw bad(`We could not parse the JSON body of your request (${(err as Error).message}). The body must be one JSON object.`, 'body');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw bad(`The request body must be a JSON object, got ${kind(doc)}.`, 'body');
  const d = doc as JsonObject;
  if (typeof d.model !== 'string' || d.model === '') {
    throw bad(`'model' is required: the name of ${what} this server serves (GET /v1/models lists them), got ${kind(d.model)}.`, 'model');
  }
  return d as JsonObject & { model: string };
}

export function parseOpenAIRequest(body: Buffer, which: OpenAIRequest['kind']): OpenAIRequest {
  const d = parseBodyObject(body, 'a model');
  const req: OpenAIRequest = {
    kind: which,
    model: d.model,
    stream: optBool(d, 'stream') ?? false,
    includeUsage: false,
    echo: which === 'completion' ? (optBool(d, 'echo') ?? false) : false,
    n: 1,
    stop: stops(d.stop),
    parameters: {},
  };
  if (which === 'completion') req.prompts = prompts(d.prompt);
  else req.messages = messages(d.messages);
  const so = d.stream_options;
  if (so !== undefined && so !== null) {
    if (typeof so !== 'object' || Array.isArray(so)) throw bad(`'stream_options' must be an object, got ${kind(so)}.`, 'stream_options');
    req.includeUsage = optBool(so as JsonObject, 'include_usage', 'stream_options.include_usage') ?? false;
  }
  const max = which === 'chat' ? (optInt(d, 'max_completion_tokens') ?? optInt(d, 'max_tokens')) : optInt(d, 'max_tokens');
  if (max !== undefined) {
    if (max < 1) throw bad(`'max_tokens' must be at least 1, got ${max}.`, 'max_tokens');
    req.maxTokens = max;
    req.parameters.max_tokens = max;
  }
  const n = optInt(d, 'n');
  if (n !== undefined) {
    if (n < 1 || n > MAX_CHOICES) throw bad(`'n' must be between 1 and ${MAX_CHOICES}, got ${n}.`, 'n');
    req.n = n;
  }
  const choices = (req.prompts?.length ?? 1) * req.n;
  if (choices > MAX_CHOICES) {
    throw bad(
      `${req.prompts!.length} prompts × n = ${req.n} asks for ${choices} choices; one request gives at most ${MAX_CHOICES}: send fewer prompts per request.`,
      'prompt',
    );
  }
  for (const k of NUMBER_PARAMS) {
    const v = d[k];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(`'${k}' must be a number, got ${kind(v)}.`, k);
    req.parameters[k] = v;
  }
  for (const k of INTEGER_PARAMS) {
    const v = optInt(d, k);
    if (v !== undefined) req.parameters[k] = v;
  }
  refuseUnsupported(d, which);
  const t = req.parameters.temperature;
  if (typeof t === 'number' && (t < 0 || t > 2)) throw bad(`'temperature' must be between 0 and 2, got ${t}.`, 'temperature');
  const p = req.parameters.top_p;
  if (typeof p === 'number' && (p < 0 || p > 1)) throw bad(`'top_p' must be between 0 and 1, got ${p}.`, 'top_p');
  return req;
}

/**
 * Fields whose answer this server cannot give, refused by name rather than
 * ignored (a client would read a missing `logprobs` or `tool_calls` as the
 * model's choice): token log-probabilities (the LLM contract returns text
 * only) and tool calls (no tool-call parser). Their "off" values pass.
 */
function refuseUnsupported(d: JsonObject, which: OpenAIRequest['kind']): void {
  const lp = d.logprobs;
  if (which === 'completion' ? lp !== undefined && lp !== null && lp !== 0 : lp === true) {
    throw bad(
      `'logprobs' is not supported: Triton's LLM contract returns text only (text_output), not token log-probabilities; leave 'logprobs' out.`,
      'logprobs',
    );
  }
  if (which === 'chat' && d.top_logprobs !== undefined && d.top_logprobs !== null && d.top_logprobs !== 0) {
    throw bad(`'top_logprobs' is not supported: Triton's LLM contract returns text only, not token log-probabilities; leave it out.`, 'top_logprobs');
  }
  const tools = d.tools;
  if (which === 'chat' && Array.isArray(tools) && tools.length > 0 && d.tool_choice !== 'none') {
    throw bad(
      `'tools' is not supported: this server has no tool-call parser, so the model's answer cannot become tool_calls; leave 'tools' out or set 'tool_choice' to "none".`,
      'tools',
    );
  }
}

function optBool(d: JsonObject, key: string, param = key): boolean | undefined {
  const v = d[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw bad(`'${param}' must be true or false, got ${kind(v)}.`, param);
  return v;
}

function optInt(d: JsonObject, key: string): number | undefined {
  const v = d[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw bad(`'${key}' must be an integer, got ${typeof v === 'number' ? v : kind(v)}.`, key);
  return v;
}

/**
 * A string, an array of strings, an array of token ids (one entry), or an
 * array of non-empty token-id arrays, as a list; undefined for anything
 * else (an empty array included).
 */
export function textsOrTokenIds(v: unknown): (string | number[])[] | undefined {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v) && v.length > 0) {
    if (v.every((s) => typeof s === 'string')) return v as string[];
    if (v.every(isTokenId)) return [v as number[]];
    if (v.every((p) => Array.isArray(p) && p.length > 0 && p.every(isTokenId))) return v as number[][];
  }
  return undefined;
}

/** What a value textsOrTokenIds refused is, for "got ...". */
export function notTextsOrTokenIds(v: unknown): string {
  return Array.isArray(v) && v.length === 0 ? 'an empty array' : kind(v);
}

/** `prompt`: a string, an array of strings, an array of token ids, or an array of token-id arrays. */
function prompts(v: unknown): (string | number[])[] {
  const list = textsOrTokenIds(v);
  if (list !== undefined) return list;
  throw bad(
    `'prompt' is required: a string, an array of strings, an array of token ids or an array of token-id arrays (none empty), got ${notTextsOrTokenIds(v)}.`,
    'prompt',
  );
}

function isTokenId(t: unknown): boolean {
  return typeof t === 'number' && Number.isSafeInteger(t) && t >= 0;
}

function stops(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list) || !list.every((s) => typeof s === 'string')) throw bad(`'stop' must be a string or an array of strings, got ${kind(v)}.`, 'stop');
  if (list.length > MAX_STOPS) throw bad(`'stop' takes at most ${MAX_STOPS} sequences, got ${list.length}.`, 'stop');
  return (list as string[]).filter((s) => s !== '');
}

function messages(v: unknown): ChatMessage[] {
  if (!Array.isArray(v) || v.length === 0) throw bad(`'messages' is required: a non-empty array of {role, content} objects, got ${kind(v)}.`, 'messages');
  return v.map((m, i) => {
    const param = `messages[${i}]`;
    if (typeof m !== 'object' || m === null || Array.isArray(m)) throw bad(`'${param}' must be an object with 'role' and 'content', got ${kind(m)}.`, param);
    const o = m as JsonObject;
    if (typeof o.role !== 'string') throw bad(`'${param}.role' must be a string (system, user, assistant, ...), got ${kind(o.role)}.`, `${param}.role`);
    return { ...o, role: o.role, content: content(o.content, `${param}.content`) };
  });
}

/** A message's content: a string, or an array of text parts (joined); other part types are refused. */
function content(v: unknown, param: string): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) {
    return v
      .map((part, j) => {
        const p = part as JsonObject;
        if (typeof part === 'object' && part !== null && p.type === 'text' && typeof p.text === 'string') return p.text;
        throw bad(`'${param}[${j}]' must be a text part ({"type": "text", "text": ...}); this server takes text only.`, `${param}[${j}]`);
      })
      .join('');
  }
  throw bad(`'${param}' must be a string or an array of text parts, got ${kind(v)}.`, param);
}
