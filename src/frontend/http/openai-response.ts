/**
 * OpenAI's response shapes for the OpenAI-compatible frontend: the model
 * list, a completion, a chat completion, their streamed chunks (Server-Sent
 * Events `data: {...}`, ended by `data: [DONE]`), `usage`, the error body
 * `{"error": {"message", "type", "param", "code"}}`, and the `stop`
 * sequences' cut. Pure, so it is table-tested.
 */
import type { OpenAIError } from './openai-request';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export type FinishReason = 'stop' | 'length' | null;

/** What every body of one request shares. */
export interface ResponseIds {
  id: string;
  created: number;
  model: string;
}

export function usage(prompt: number, completion: number): Usage {
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

export function errorBody(e: OpenAIError): string {
  return JSON.stringify({ error: { message: e.message, type: e.type, param: e.param, code: e.code } });
}

export function modelList(names: readonly string[], created: number): string {
  return JSON.stringify({ object: 'list', data: names.map((id) => modelObject(id, created)) });
}

export function modelObject(id: string, created: number): { id: string; object: 'model'; created: number; owned_by: string } {
  return { id, object: 'model', created, owned_by: 'nodetron' };
}

/** One finished choice of a completion: its index (prompt × n + j), text and finish reason. */
export interface ChoiceText {
  index: number;
  text: string;
  finish: FinishReason;
}

export function completionBody(ids: ResponseIds, choices: readonly ChoiceText[], u: Usage): string {
  return JSON.stringify({
    id: ids.id,
    object: 'text_completion',
    created: ids.created,
    model: ids.model,
    choices: choices.map((c) => ({ index: c.index, text: c.text, logprobs: null, finish_reason: c.finish })),
    usage: u,
  });
}

export function chatBody(ids: ResponseIds, choices: readonly ChoiceText[], u: Usage): string {
  return JSON.stringify({
    id: ids.id,
    object: 'chat.completion',
    created: ids.created,
    model: ids.model,
    choices: choices.map((c) => ({ index: c.index, message: { role: 'assistant', content: c.text }, logprobs: null, finish_reason: c.finish })),
    usage: u,
  });
}

/**
 * One streamed chunk of choice `index` (default 0): `delta` (chat: the
 * first one of each choice carries the role) or `text` (completion), the
 * finish reason on the choice's last; with `usage` and no choices, the extra
 * last chunk of `stream_options.include_usage`.
 */
export function chunkEvent(
  kind: 'completion' | 'chat',
  ids: ResponseIds,
  c: { index?: number; text?: string; role?: boolean; finish?: FinishReason; usage?: Usage },
): string {
  const head = { id: ids.id, object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion', created: ids.created, model: ids.model };
  if (c.usage !== undefined) return sse(JSON.stringify({ ...head, choices: [], usage: c.usage }));
  const finish = c.finish ?? null;
  const index = c.index ?? 0;
  const choice =
    kind === 'chat'
      ? {
          index,
          delta: c.role === true ? { role: 'assistant', content: c.text ?? '' } : c.text === undefined ? {} : { content: c.text },
          logprobs: null,
          finish_reason: finish,
        }
      : { index, text: c.text ?? '', logprobs: null, finish_reason: finish };
  return sse(JSON.stringify({ ...head, choices: [choice] }));
}

export function sse(json: string): string {
  return `data: ${json}\n\n`;
}

export const DONE_EVENT = 'data: [DONE]\n\n';

/**
 * The `stop` cut of the text generated so far: where the first stop
 * sequence begins (`stopAt`, the text ends there), else how much of the text
 * is safe to send now (`safe`: what could not be the start of a stop
 * sequence that the next piece completes).
 */
export function stopScan(text: string, stops: readonly string[]): { stopAt?: number; safe: number } {
  let stopAt: number | undefined;
  for (const s of stops) {
    const i = text.indexOf(s);
    if (i >= 0 && (stopAt === undefined || i < stopAt)) stopAt = i;
  }
  if (stopAt !== undefined) return { stopAt, safe: stopAt };
  let held = 0;
  for (const s of stops) {
    for (let k = Math.min(s.length - 1, text.length); k > held; k--) {
      if (text.endsWith(s.slice(0, k))) {
        held = k;
        break;
      }
    }
  }
  return { safe: text.length - held };
}
