/**
 * Triton's generate extension through the real server, with curl as the
 * client (`curl -N` for the SSE endpoint): the ONNX `simple` (not decoupled)
 * on generate and generate_stream, a decoupled Python mock LLM
 * (fixtures/generate_models/mock_llm: `text_input`, `stream`, `max_tokens`,
 * `text_output`, one word per response) streaming one event per word, an
 * error in the middle of a stream, generate's one-response rule, the
 * request errors (same texts as the infer route for an unknown model), and
 * an SSE client that disconnects: the model sees `is_cancelled()` and the
 * statistics count the failure.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { MODEL_REPOSITORY, REPO_ROOT, startServer } from './server-process';
import type { ServerProcess } from './server-process';

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures/generate_models');

const ORIGIN = 'http://page.example';
const KEY = { 'infer-key': 's3cret' };
let server: ServerProcess;
let repo: string;
let marks: string;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-generate-'));
  marks = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-generate-marks-'));
  fs.cpSync(path.join(FIXTURES, 'mock_llm'), path.join(repo, 'mock_llm'), { recursive: true });
  fs.cpSync(path.join(MODEL_REPOSITORY, 'simple'), path.join(repo, 'simple'), { recursive: true });
  // Inference restricted (generate is in its category) and CORS on: every request below carries the key.
  server = await startServer([`--model-repository=${repo}`, '--http-restricted-api=inference:infer-key=s3cret', `--http-cors-origin=${ORIGIN}`]);
});

after(async () => {
  if (server !== undefined) assert.equal(await server.stop(), 0, 'the server stops cleanly with every arena block back');
  fs.rmSync(repo, { recursive: true, force: true });
  fs.rmSync(marks, { recursive: true, force: true });
});

interface CurlAnswer {
  status: number;
  contentType: string;
  body: string;
}

/** curl POST `body` to `route`; -N (no buffering) as an SSE client uses it. */
function curl(route: string, body: string): Promise<CurlAnswer> {
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
        '-H',
        'infer-key: s3cret',
        '--data-binary',
        body,
        '-w',
        '\n%{http_code} %{content_type}',
        `${server.url}${route}`,
      ],
      (err, stdout) => {
        if (err) return reject(err);
        const cut = stdout.lastIndexOf('\n');
        const [status, ...type] = stdout.slice(cut + 1).split(' ');
        resolve({ status: Number(status), contentType: type.join(' '), body: stdout.slice(0, cut) });
      },
    );
  });
}

/** The events of an SSE body: each must be exactly `data: <json>\n\n`. */
function events(body: string): Record<string, unknown>[] {
  assert.ok(body.endsWith('\n\n'), `the stream ends with an event's blank line: ${JSON.stringify(body)}`);
  return body
    .slice(0, -2)
    .split('\n\n')
    .map((e) => {
      assert.ok(e.startsWith('data: '), `an event is one data line: ${JSON.stringify(e)}`);
      return JSON.parse(e.slice(6)) as Record<string, unknown>;
    });
}

const range = (n: number, f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));

test('generate on the ONNX simple: inputs by name, outputs as JSON keys, id echoed', async () => {
  const a = await curl('/v2/models/simple/generate', JSON.stringify({ id: 'g-1', INPUT0: range(16, (i) => i), INPUT1: range(16, () => 1) }));
  assert.equal(a.status, 200, a.body);
  assert.equal(a.contentType, 'application/json');
  assert.deepEqual(JSON.parse(a.body), {
    id: 'g-1',
    model_name: 'simple',
    model_version: '1',
    OUTPUT0: range(16, (i) => i + 1),
    OUTPUT1: range(16, (i) => i - 1),
  });
  const v = await curl('/v2/models/simple/versions/1/generate', JSON.stringify({ INPUT0: range(16, () => 2), INPUT1: range(16, () => 3) }));
  assert.equal(v.status, 200, v.body);
  const j = JSON.parse(v.body) as Record<string, unknown>;
  assert.equal(j.id, undefined, 'no id when the request has none');
  assert.deepEqual(
    j.OUTPUT0,
    range(16, () => 5),
  );
});

test('generate_stream on a non-decoupled model: one event', async () => {
  const a = await curl('/v2/models/simple/generate_stream', JSON.stringify({ INPUT0: range(16, () => 4), INPUT1: range(16, () => 1) }));
  assert.equal(a.status, 200, a.body);
  assert.equal(a.contentType, 'text/event-stream; charset=utf-8');
  const ev = events(a.body);
  assert.equal(ev.length, 1);
  assert.deepEqual(
    ev[0].OUTPUT1,
    range(16, () => 3),
  );
  assert.equal(ev[0].model_version, '1');
});

test('generate_stream on the decoupled mock LLM: one event per word, max_tokens as a parameter', async () => {
  const a = await curl(
    '/v2/models/mock_llm/generate_stream',
    JSON.stringify({ id: 's-1', text_input: 'the quick brown fox', stream: true, parameters: { max_tokens: 6 } }),
  );
  assert.equal(a.status, 200, a.body);
  assert.equal(a.contentType, 'text/event-stream; charset=utf-8');
  const ev = events(a.body);
  assert.deepEqual(
    ev.map((e) => e.text_output),
    ['the', 'quick', 'brown', 'fox', 'the', 'quick'],
  );
  for (const e of ev)
    assert.deepEqual({ id: e.id, model_name: e.model_name, model_version: e.model_version }, { id: 's-1', model_name: 'mock_llm', model_version: '1' });
  // A top-level key that names no input is a request parameter too.
  const b = await curl('/v2/models/mock_llm/generate_stream', JSON.stringify({ text_input: 'a b', stream: [true], max_tokens: 3 }));
  assert.deepEqual(
    events(b.body).map((e) => e.text_output),
    ['a', 'b', 'a'],
  );
});

test('an error in the middle of a stream is an error event of the 200 stream, and the stream goes on', async () => {
  const a = await curl(
    '/v2/models/mock_llm/generate_stream',
    JSON.stringify({ text_input: 'one two three', stream: true, parameters: { max_tokens: 4, error_after: 2 } }),
  );
  assert.equal(a.status, 200);
  const ev = events(a.body);
  assert.deepEqual(
    ev.map((e) => e.text_output ?? `error: ${String(e.error)}`),
    ['one', 'two', 'error: mock_llm: error after 2 words, as asked', 'three', 'one'],
  );
});

test("generate on a decoupled model: one response is answered; several are refused with Triton's text", async () => {
  const one = await curl('/v2/models/mock_llm/generate', JSON.stringify({ text_input: 'hello there world', stream: false, parameters: { max_tokens: 2 } }));
  assert.equal(one.status, 200, one.body);
  assert.equal((JSON.parse(one.body) as Record<string, unknown>).text_output, 'hello there');
  const many = await curl('/v2/models/mock_llm/generate', JSON.stringify({ text_input: 'a b c', stream: true, parameters: { max_tokens: 3 } }));
  assert.equal(many.status, 400);
  assert.match(
    String((JSON.parse(many.body) as { error: string }).error),
    /^generate expects model to produce exactly 1 response, use generate stream for model that generates various number of responses \(model 'mock_llm' produced 3\)$/,
  );
});

test('request errors: unknown model as infer answers it, missing input, wrong type, bad parameter, non-JSON body', async () => {
  const infer = await curl('/v2/models/nope/infer', '{"inputs":[]}');
  const gen = await curl('/v2/models/nope/generate_stream', '{"text_input":"x"}');
  assert.equal(gen.status, infer.status);
  assert.equal(gen.body, infer.body);
  assert.equal(gen.contentType, 'application/json', 'an error before inference is plain JSON');

  const missing = await curl('/v2/models/simple/generate', JSON.stringify({ INPUT0: range(16, () => 1) }));
  assert.equal(missing.status, 400);
  assert.match(missing.body, /expected 2 inputs but got 1 inputs for model 'simple'.*missing required input\(s\) \['INPUT1'\]/);

  const wrongType = await curl('/v2/models/mock_llm/generate_stream', JSON.stringify({ text_input: 5, stream: true }));
  assert.equal(wrongType.status, 400);
  assert.match(wrongType.body, /input 'text_input' of model 'mock_llm' is BYTES, give a string or an array of strings/);

  const shape = await curl('/v2/models/simple/generate', JSON.stringify({ INPUT0: range(5, () => 1), INPUT1: range(16, () => 1) }));
  assert.equal(shape.status, 400);
  assert.match(shape.body, /The schema can not convert input 'INPUT0' to tensor with proper shape/);

  const param = await curl('/v2/models/mock_llm/generate', JSON.stringify({ text_input: 'x', parameters: { max_tokens: [1] } }));
  assert.equal(param.status, 400);
  assert.match(param.body, /parameter 'max_tokens' has invalid type\. It should be either 'int', 'bool', or 'string'\./);

  const notJson = await curl('/v2/models/mock_llm/generate', 'text_input=hello');
  assert.equal(notJson.status, 400);
  assert.match(notJson.body, /failed to parse the request JSON buffer: .*the generate request body must be one JSON object/);

  const get = await fetch(`${server.url}/v2/models/simple/generate`, { headers: KEY });
  assert.equal(get.status, 405);
  // The server still serves.
  assert.equal((await curl('/v2/models/simple/generate', JSON.stringify({ INPUT0: range(16, () => 1), INPUT1: range(16, () => 1) }))).status, 200);
});

interface ModelStats {
  inference_stats: Record<string, { count: number }>;
}

async function failures(model: string): Promise<number> {
  const res = await fetch(`${server.url}/v2/models/${model}/stats`);
  return ((await res.json()) as { model_stats: ModelStats[] }).model_stats[0]!.inference_stats.fail!.count;
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('an SSE client that disconnects mid-stream cancels the request: the model sees is_cancelled()', async () => {
  const before = await failures('mock_llm');
  const tag = path.join(marks, 'gone');
  const body = JSON.stringify({ text_input: 'tick tock', stream: true, parameters: { max_tokens: 2000, delay_ms: 10, marker: tag } });
  const seen: string[] = [];
  const req = http.request({
    host: '127.0.0.1',
    port: server.port,
    path: '/v2/models/mock_llm/generate_stream',
    method: 'POST',
    agent: false,
    headers: { 'Content-Type': 'application/json', ...KEY },
  });
  await new Promise<void>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      assert.equal(res.headers['transfer-encoding'], 'chunked');
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        seen.push(d);
        if (seen.join('').split('\n\n').length > 3) {
          req.destroy(); // three events in: the client goes away
          resolve();
        }
      });
    });
    req.end(body);
  });
  await until('the model sees the cancel', () => fs.existsSync(`${tag}.cancelled`));
  const [sent, cancelled] = fs.readFileSync(`${tag}.cancelled`, 'utf8').split(' ');
  assert.equal(cancelled, 'True', 'request.is_cancelled() is true');
  assert.ok(Number(sent) >= 3 && Number(sent) < 2000, `stopped early, after ${sent} words`);
  assert.ok(!fs.existsSync(`${tag}.done`));
  await until('the cancelled request is counted', async () => (await failures('mock_llm')) === before + 1);
});

/** Writes `raw` on a new connection, resolves with all the server sent until it closed. */
async function rawExchange(raw: string): Promise<string> {
  const net = await import('node:net');
  return new Promise<string>((resolve, reject) => {
    // write, not end: a client that half-closes is one that went away (http-connection.ts).
    const s = net.connect(server.port, '127.0.0.1', () => s.write(raw));
    let got = '';
    s.setEncoding('utf8');
    s.on('data', (d: string) => (got += d));
    s.on('end', () => resolve(got));
    s.on('error', reject);
  });
}

test('an HTTP/1.0 client gets the stream unframed, ended by the close', async () => {
  const body = JSON.stringify({ text_input: 'u v', stream: true, max_tokens: 2 });
  const text = await rawExchange(
    `POST /v2/models/mock_llm/generate_stream HTTP/1.0\r\ninfer-key: s3cret\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  const [head, sse] = [text.slice(0, text.indexOf('\r\n\r\n')), text.slice(text.indexOf('\r\n\r\n') + 4)];
  assert.match(head, /^HTTP\/1\.1 200 OK\r\n/);
  assert.doesNotMatch(head, /Transfer-Encoding|Content-Length/i);
  assert.match(head, /Connection: close/);
  assert.deepEqual(
    events(sse).map((e) => e.text_output),
    ['u', 'v'],
  );
});

test('a keep-alive connection serves a request pipelined behind a stream after the stream ends', async () => {
  const stream = JSON.stringify({ text_input: 'x y', stream: true, parameters: { max_tokens: 3, delay_ms: 20 } });
  const plain = JSON.stringify({ INPUT0: range(16, () => 1), INPUT1: range(16, () => 1) });
  const raw =
    `POST /v2/models/mock_llm/generate_stream HTTP/1.1\r\nHost: t\r\ninfer-key: s3cret\r\nContent-Length: ${Buffer.byteLength(stream)}\r\n\r\n${stream}` +
    `POST /v2/models/simple/generate HTTP/1.1\r\nHost: t\r\ninfer-key: s3cret\r\nContent-Length: ${Buffer.byteLength(plain)}\r\nConnection: close\r\n\r\n${plain}`;
  const text = await rawExchange(raw);
  const second = text.indexOf('HTTP/1.1 200 OK', 1);
  assert.ok(text.startsWith('HTTP/1.1 200 OK\r\n') && second > 0, text);
  const first = text.slice(0, second);
  assert.match(first, /Transfer-Encoding: chunked/);
  assert.ok(first.endsWith('0\r\n\r\n'), 'the stream ends with the last chunk before the next answer');
  assert.equal((first.match(/data: /g) ?? []).length, 3);
  assert.match(text.slice(second), /"OUTPUT0":\[2,2,2/);
});

test('--http-restricted-api: generate and generate_stream are in the inference category; CORS reaches the stream', async () => {
  for (const route of ['/v2/models/mock_llm/generate', '/v2/models/mock_llm/versions/1/generate_stream']) {
    const res = await fetch(`${server.url}${route}`, { method: 'POST', body: '{"text_input":"x"}' });
    assert.equal(res.status, 403, route);
    assert.deepEqual(await res.json(), { error: "This API is restricted, expecting header 'infer-key'" });
  }
  const pre = await fetch(`${server.url}/v2/models/mock_llm/generate_stream`, {
    method: 'OPTIONS',
    headers: { Origin: ORIGIN, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'infer-key' },
  });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers.get('access-control-allow-methods'), 'POST');
  const res = await fetch(`${server.url}/v2/models/mock_llm/generate_stream`, {
    method: 'POST',
    headers: { Origin: ORIGIN, ...KEY },
    body: JSON.stringify({ text_input: 'p q', stream: true, max_tokens: 2 }),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('access-control-allow-origin'), ORIGIN, 'the stream carries the CORS headers');
  assert.deepEqual(
    events(await res.text()).map((e) => e.text_output),
    ['p', 'q'],
  );
});
