/**
 * The pure side of `nodetron perf --service-kind openai`: the request body
 * for `/v1/chat/completions` or `/v1/completions` (streamed, with
 * `stream_options.include_usage` so the server counts the output tokens with
 * the model's tokenizer), what each SSE event says (a content chunk, the
 * usage, an error, the end), and a step's metrics in genai-perf's terms:
 * time to first token, inter-token latency ((last chunk − first chunk) /
 * (chunks − 1), per request), output token throughput, request throughput,
 * request latency. Table-tested without servers.
 */
import { percentile } from './perf-math';

export type OpenAIEndpoint = 'v1/chat/completions' | 'v1/completions';

export interface OpenAIBodyOptions {
  model: string;
  endpoint: OpenAIEndpoint;
  prompt: string;
  maxTokens: number | undefined;
  /** --extra-inputs: more body fields (seed, temperature, ignore_eos, ...). */
  extra: Record<string, unknown>;
}

export function openaiRequestBody(o: OpenAIBodyOptions): string {
  const body: Record<string, unknown> = { model: o.model };
  if (o.endpoint === 'v1/chat/completions') body.messages = [{ role: 'user', content: o.prompt }];
  else body.prompt = o.prompt;
  if (o.maxTokens !== undefined) body.max_tokens = o.maxTokens;
  Object.assign(body, o.extra, { stream: true, stream_options: { include_usage: true } });
  return JSON.stringify(body);
}

export type StreamEvent =
  { kind: 'content' } | { kind: 'empty' } | { kind: 'usage'; completionTokens: number } | { kind: 'error'; message: string } | { kind: 'done' };

/** One event's data: a chunk with text (a token, as counted here), one without, the usage chunk, an error body, or `[DONE]`. */
export function readStreamEvent(data: string): StreamEvent {
  if (data.trim() === '[DONE]') return { kind: 'done' };
  let doc: { choices?: { delta?: { content?: unknown }; text?: unknown }[]; usage?: { completion_tokens?: unknown } | null; error?: { message?: unknown } };
  try {
    doc = JSON.parse(data) as typeof doc;
  } catch {
    return { kind: 'error', message: `an event that is not JSON: ${data.slice(0, 200)}` };
  }
  if (doc.error !== undefined) return { kind: 'error', message: String(doc.error.message ?? JSON.stringify(doc.error)) };
  const choices = doc.choices ?? [];
  for (const c of choices) {
    const t = c.delta !== undefined ? c.delta.content : c.text;
    if (typeof t === 'string' && t !== '') return { kind: 'content' };
  }
  if (choices.length === 0 && typeof doc.usage?.completion_tokens === 'number') return { kind: 'usage', completionTokens: doc.usage.completion_tokens };
  return { kind: 'empty' };
}

/** What one streamed request saw (times in ns from a common origin). */
export interface StreamRecord {
  startNs: number;
  /** Arrival of each content chunk. */
  chunkNs: number[];
  endNs: number;
  /** usage.completion_tokens, when the server sent it. */
  usageTokens: number | undefined;
  error: string | undefined;
}

export interface Stat {
  avg: number;
  p50: number;
  p90: number;
  p99: number;
}

export interface OpenAIStepResult {
  concurrency: number;
  requests: number;
  errors: number;
  seconds: number;
  requestsPerSec: number;
  /** Output tokens: usage.completion_tokens (the model's tokenizer) where every request had it, else content chunks. */
  tokens: number;
  tokenSource: 'usage' | 'chunks';
  chunks: number;
  outputTokensPerSec: number;
  /** Milliseconds. */
  ttftMs: Stat;
  itlMs: Stat;
  latencyMs: Stat;
  outputTokensPerRequest: number;
  /** The first error's message, for the report. */
  firstError: string | undefined;
}

export function stat(values: readonly number[]): Stat {
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return { avg: sorted.length === 0 ? 0 : sum / sorted.length, p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99) };
}

/** A step's metrics over its successful requests; `seconds` is the step's wall time. */
export function stepMetrics(concurrency: number, records: readonly StreamRecord[], seconds: number): OpenAIStepResult {
  const ok = records.filter((r) => r.error === undefined);
  const ttft: number[] = [];
  const itl: number[] = [];
  const latency: number[] = [];
  let chunks = 0;
  let usage = 0;
  let allUsage = ok.length > 0;
  for (const r of ok) {
    chunks += r.chunkNs.length;
    if (r.usageTokens === undefined) allUsage = false;
    else usage += r.usageTokens;
    latency.push((r.endNs - r.startNs) / 1e6);
    if (r.chunkNs.length > 0) ttft.push((r.chunkNs[0]! - r.startNs) / 1e6);
    if (r.chunkNs.length > 1) itl.push((r.chunkNs[r.chunkNs.length - 1]! - r.chunkNs[0]!) / 1e6 / (r.chunkNs.length - 1));
  }
  const tokens = allUsage ? usage : chunks;
  return {
    concurrency,
    requests: ok.length,
    errors: records.length - ok.length,
    seconds,
    requestsPerSec: seconds > 0 ? ok.length / seconds : 0,
    tokens,
    tokenSource: allUsage ? 'usage' : 'chunks',
    chunks,
    outputTokensPerSec: seconds > 0 ? tokens / seconds : 0,
    ttftMs: stat(ttft),
    itlMs: stat(itl),
    latencyMs: stat(latency),
    outputTokensPerRequest: ok.length > 0 ? tokens / ok.length : 0,
    firstError: records.find((r) => r.error !== undefined)?.error,
  };
}
