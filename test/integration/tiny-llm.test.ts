/**
 * model_repository/tiny_llm, the example model that streams for real: a
 * decoupled Python model running an ONNX decoder (onnxruntime) one token at
 * a time with a byte-level BPE tokenizer (tokenizers), through the real
 * server with curl as the client. generate_stream gives one event per token
 * up to max_tokens; a seed makes the text repeat; the streamed pieces join
 * into generate's one answer; /v1/chat/completions (the model's chat
 * template) streams one chunk per token, then finish_reason "length" and
 * `data: [DONE]`. A client that leaves mid-stream stops the generation loop
 * (the model logs how far it got) and the statistics count the failure.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { MODEL_REPOSITORY, startServer, waitForOutput } from './server-process';
import type { ServerProcess } from './server-process';

let server: ServerProcess;
let repo: string;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-tiny-llm-'));
  fs.cpSync(path.join(MODEL_REPOSITORY, 'tiny_llm'), path.join(repo, 'tiny_llm'), { recursive: true, filter: (p) => !p.includes('__pycache__') });
  server = await startServer([`--model-repository=${repo}`]);
});

after(async () => {
  if (server !== undefined) assert.equal(await server.stop(), 0, 'the server stops cleanly with every arena block back');
  fs.rmSync(repo, { recursive: true, force: true });
});

/** curl -N POST `body` to `route`: the status and the body as the client got it. */
function curl(route: string, body: object): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      'curl',
      [
        '-sS',
        '-N',
        '-X',
        'POST',
        '-H',
        'Content-Type: application/json',
        '--data-binary',
        JSON.stringify(body),
        '-w',
        '\n%{http_code}',
        `${server.url}${route}`,
      ],
      { timeout: 60_000 },
      (err, stdout) => {
        if (err) return reject(err);
        const cut = stdout.lastIndexOf('\n');
        resolve({ status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) });
      },
    );
  });
}

/** The `data:` payloads of an SSE body, in order. */
function events(body: string): string[] {
  return body
    .split('\n\n')
    .filter((e) => e.trim() !== '')
    .map((e) => {
      assert.match(e, /^data: /, `an SSE event: ${JSON.stringify(e)}`);
      return e.slice('data: '.length);
    });
}

async function stream(parameters: object): Promise<string[]> {
  const r = await curl('/v2/models/tiny_llm/generate_stream', { text_input: 'The server streams', stream: true, parameters });
  assert.equal(r.status, 200, r.body);
  return events(r.body).map((e) => {
    const o = JSON.parse(e) as { model_name: string; text_output: string };
    assert.equal(o.model_name, 'tiny_llm');
    // whole_characters: no lone UTF-8 byte (U+FFFD) and no control character but newline and tab.
    assert.match(o.text_output, /^(?:[^\p{Cc}\ufffd]|[\n\t])+$/u, `a whole, printable token per event: ${JSON.stringify(o.text_output)}`);
    return o.text_output;
  });
}

test('generate_stream: one event per token up to max_tokens, the same text again with the same seed', async () => {
  const first = await stream({ max_tokens: 12, seed: 7 });
  assert.equal(first.length, 12, `12 tokens, 12 events: ${JSON.stringify(first)}`);
  assert.deepEqual(await stream({ max_tokens: 12, seed: 7 }), first, 'seeded sampling repeats');
  const other = await stream({ max_tokens: 12, seed: 8 });
  assert.notDeepEqual(other, first, 'another seed, another text');
  assert.equal((await stream({ max_tokens: 3, seed: 7 })).length, 3, 'max_tokens bounds the stream');
  const greedy = await stream({ max_tokens: 6, temperature: 0 });
  assert.deepEqual(await stream({ max_tokens: 6, temperature: 0, seed: 99 }), greedy, 'temperature 0 is greedy: the seed does not matter');

  const one = await curl('/v2/models/tiny_llm/generate', { text_input: 'The server streams', parameters: { max_tokens: 12, seed: 7 } });
  assert.equal(one.status, 200, one.body);
  assert.equal((JSON.parse(one.body) as { text_output: string }).text_output, first.join(''), 'the streamed tokens join into the non-streamed text');
});

test('a bad parameter is an error naming it, and the model keeps serving', async () => {
  const r = await curl('/v2/models/tiny_llm/generate_stream', { text_input: 'x', stream: true, parameters: { max_tokens: 0 } });
  assert.match(r.body, /max_tokens must be at least 1, got 0/);
  assert.equal((await stream({ max_tokens: 2, seed: 1 })).length, 2);
});

async function chat(seed: number): Promise<string[]> {
  const r = await curl('/v1/chat/completions', { model: 'tiny_llm', messages: [{ role: 'user', content: 'Hello there' }], stream: true, max_tokens: 5, seed });
  assert.equal(r.status, 200, r.body);
  const data = events(r.body);
  assert.equal(data.at(-1), '[DONE]', 'data: [DONE] last');
  const chunks = data
    .slice(0, -1)
    .map((e) => JSON.parse(e) as { object: string; choices: { delta: { role?: string; content?: string }; finish_reason: string | null }[] });
  for (const c of chunks) assert.equal(c.object, 'chat.completion.chunk');
  assert.equal(chunks[0]!.choices[0]!.delta.role, 'assistant');
  assert.equal(chunks.at(-1)!.choices[0]!.finish_reason, 'length', 'max_tokens reached');
  return chunks.map((c) => c.choices[0]!.delta.content ?? '').filter((t) => t !== '');
}

test('/v1/chat/completions over curl: one chunk per token, finish_reason length, [DONE], deterministic with a seed', async () => {
  const tokens = await chat(3);
  assert.equal(tokens.length, 5, `5 tokens, 5 content chunks: ${JSON.stringify(tokens)}`);
  assert.deepEqual(await chat(3), tokens);
});

async function failures(): Promise<number> {
  const res = await fetch(`${server.url}/v2/models/tiny_llm/stats`);
  return ((await res.json()) as { model_stats: { inference_stats: { fail: { count: number } } }[] }).model_stats[0]!.inference_stats.fail.count;
}

test('a client that leaves mid-stream stops the generation: the model sees is_cancelled() and the failure is counted', async () => {
  const before = await failures();
  const req = http.request({
    host: '127.0.0.1',
    port: server.port,
    path: '/v2/models/tiny_llm/generate_stream',
    method: 'POST',
    agent: false,
    headers: { 'Content-Type': 'application/json' },
  });
  await new Promise<void>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      let got = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        got += d;
        if (got.split('\n\n').length > 3) {
          req.destroy(); // three tokens in: the client goes away
          resolve();
        }
      });
    });
    req.end(JSON.stringify({ text_input: 'on and on', stream: true, parameters: { max_tokens: 1_000_000, seed: 5 } }));
  });
  const line = await waitForOutput(server, /tiny_llm: request cancelled after (\d+) tokens/, 15_000);
  const made = Number(/after (\d+) tokens/.exec(line)![1]);
  assert.ok(made >= 3 && made < 1_000_000, `stopped early, after ${made} tokens`);
  const deadline = Date.now() + 15_000;
  while ((await failures()) !== before + 1) {
    assert.ok(Date.now() < deadline, 'the cancelled request is counted as a failure');
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal((await stream({ max_tokens: 2, seed: 1 })).length, 2, 'the model keeps serving');
});
