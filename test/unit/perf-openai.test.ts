/**
 * The pure parts of `nodetron perf --service-kind openai`: its options
 * (perf_analyzer's `--service-kind`/`--endpoint`, and the errors when they
 * are mixed with the triton mode's), the request body, what each SSE event
 * counts as, and a step's metrics (time to first token, inter-token latency,
 * tokens from usage or from content chunks) from known arrival times.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openaiRequestBody, readStreamEvent, stepMetrics, type StreamRecord } from '../../src/perf/openai-stream-math';
import { parsePerfOptions } from '../../src/perf/perf-options';

test('options: --service-kind openai, its defaults and its own flags', () => {
  const o = parsePerfOptions([
    '-m',
    'llm',
    '--service-kind',
    'openai',
    '--endpoint',
    '/v1/completions',
    '--max-tokens',
    '8',
    '--prompt',
    'hi',
    '--extra-inputs',
    'seed:7',
    '--extra-inputs',
    'ignore_eos:true',
    '--extra-inputs',
    'user:bob',
    '--request-count',
    '20',
    '--concurrency-range',
    '1:8:7',
  ]);
  assert.equal(o.serviceKind, 'openai');
  assert.equal(o.endpoint, 'v1/completions');
  assert.equal(o.url, 'localhost:9000', "Triton's OpenAI frontend port");
  assert.equal(o.maxTokens, 8);
  assert.equal(o.prompt, 'hi');
  assert.deepEqual(o.extraInputs, { seed: 7, ignore_eos: true, user: 'bob' });
  assert.equal(o.requestCount, 20);
  assert.deepEqual(o.concurrency, { start: 1, end: 8, step: 7 });
  const d = parsePerfOptions(['-m', 'llm', '--service-kind=openai']);
  assert.deepEqual([d.endpoint, d.prompt, d.maxTokens, d.requestCount], ['v1/chat/completions', 'Hello', undefined, undefined]);
  assert.equal(parsePerfOptions(['-m', 'm']).serviceKind, 'triton');
});

test('options: errors name the option', () => {
  const cases: [string[], RegExp][] = [
    [['-m', 'm', '--service-kind', 'tfserving'], /--service-kind: expected one of triton, openai, got 'tfserving'/],
    [['-m', 'm', '--service-kind', 'openai', '--endpoint', 'v1/embeddings'], /--endpoint: expected one of v1\/chat\/completions, v1\/completions/],
    [['-m', 'm', '--service-kind', 'openai', '-i', 'grpc'], /HTTP only/],
    [['-m', 'm', '--service-kind', 'openai', '--request-rate-range', '5'], /closed loop: use --concurrency-range/],
    [['-m', 'm', '--max-tokens', '5'], /--max-tokens belongs to --service-kind openai/],
    [['-m', 'm', '--service-kind', 'openai', '--extra-inputs', 'seed'], /--extra-inputs: expected NAME:VALUE, got 'seed'/],
  ];
  for (const [argv, message] of cases) assert.throws(() => parsePerfOptions(argv), message, argv.join(' '));
});

test('the request body: chat messages or a prompt, streamed with usage, extra fields, stream not overridable', () => {
  assert.deepEqual(
    JSON.parse(openaiRequestBody({ model: 'm', endpoint: 'v1/chat/completions', prompt: 'hi', maxTokens: 4, extra: { seed: 1, stream: false } })),
    { model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, seed: 1, stream: true, stream_options: { include_usage: true } },
  );
  assert.deepEqual(JSON.parse(openaiRequestBody({ model: 'm', endpoint: 'v1/completions', prompt: 'hi', maxTokens: undefined, extra: {} })), {
    model: 'm',
    prompt: 'hi',
    stream: true,
    stream_options: { include_usage: true },
  });
});

const EVENTS: [string, string, ReturnType<typeof readStreamEvent>][] = [
  ['a chat piece', '{"choices":[{"index":0,"delta":{"content":"a"}}]}', { kind: 'content' }],
  ['the role chunk (empty content)', '{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}', { kind: 'empty' }],
  ['the finish chunk', '{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}', { kind: 'empty' }],
  ['a completion piece', '{"choices":[{"index":0,"text":" b"}]}', { kind: 'content' }],
  ['the usage chunk', '{"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":9,"total_tokens":11}}', { kind: 'usage', completionTokens: 9 }],
  ['an error event', '{"error":{"message":"boom","type":"server_error"}}', { kind: 'error', message: 'boom' }],
  ['the end', '[DONE]', { kind: 'done' }],
  ['not JSON', '{oops', { kind: 'error', message: 'an event that is not JSON: {oops' }],
];
for (const [name, data, want] of EVENTS) test(`event: ${name}`, () => assert.deepEqual(readStreamEvent(data), want));

const MS = 1e6;
const rec = (startMs: number, chunksMs: number[], endMs: number, usageTokens?: number, error?: string): StreamRecord => ({
  startNs: startMs * MS,
  chunkNs: chunksMs.map((c) => c * MS),
  endNs: endMs * MS,
  usageTokens,
  error,
});

test('step metrics: TTFT from the request to its first chunk, ITL over the rest, tokens from usage, errors apart', () => {
  const r = stepMetrics(2, [rec(0, [10, 12, 14], 15, 3), rec(0, [20, 30], 31, 2), rec(5, [], 6, undefined, 'HTTP 500: x')], 2);
  assert.equal(r.requests, 2);
  assert.equal(r.errors, 1);
  assert.equal(r.firstError, 'HTTP 500: x');
  assert.deepEqual([r.tokens, r.tokenSource, r.chunks], [5, 'usage', 5]);
  assert.equal(r.outputTokensPerSec, 2.5);
  assert.equal(r.requestsPerSec, 1);
  assert.deepEqual(r.ttftMs, { avg: 15, p50: 10, p90: 20, p99: 20 });
  assert.deepEqual(r.itlMs, { avg: 6, p50: 2, p90: 10, p99: 10 });
  assert.equal(r.latencyMs.p99, 31);
  assert.equal(r.outputTokensPerRequest, 2.5);
});

test('step metrics: without usage on every request, tokens are the content chunks', () => {
  const r = stepMetrics(1, [rec(0, [1, 2], 3, 7), rec(0, [1, 2, 3], 4)], 1);
  assert.deepEqual([r.tokens, r.tokenSource], [5, 'chunks']);
  assert.equal(stepMetrics(1, [], 1).tokenSource, 'chunks', 'no request: nothing to count');
});
