/**
 * A streaming client that stops reading (http-connection.ts
 * `maxStreamBuffered`): a raw socket with a 4 KiB receive buffer asks the
 * decoupled mock LLM (fixtures/generate_models/mock_llm, no delay between
 * words) for a generate_stream of long words and then reads nothing. The
 * model pushes its responses with no flow control, so the server buffers
 * the stream up to its bound (4 MiB), then closes that connection with a
 * warning naming the client and the bytes that waited, which cancels the
 * request (the model sees `is_cancelled()`). Meanwhile and after, another
 * client is served whole, and every arena block comes back.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, startServer } from './server-process';
import type { ServerProcess } from './server-process';

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures');
const BOUND = 4 << 20;
let server: ServerProcess;
let repo: string;
let marks: string;
let stalled: ChildProcess | undefined;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-backpressure-'));
  marks = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-backpressure-marks-'));
  fs.cpSync(path.join(FIXTURES, 'generate_models', 'mock_llm'), path.join(repo, 'mock_llm'), { recursive: true });
  server = await startServer([`--model-repository=${repo}`]);
});

after(async () => {
  if (stalled !== undefined && stalled.exitCode === null) stalled.kill();
  if (server !== undefined) assert.equal(await server.stop(), 0, 'the server stops cleanly with every arena block back');
  fs.rmSync(repo, { recursive: true, force: true });
  fs.rmSync(marks, { recursive: true, force: true });
});

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}\n${server.output().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A client that sends `request` on a socket with a small receive buffer, then reads nothing until it is killed. */
function stallingClient(request: string): ChildProcess {
  const script = [
    'import socket, sys, time',
    's = socket.socket()',
    's.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)',
    `s.connect(("127.0.0.1", ${server.port}))`,
    's.sendall(sys.stdin.buffer.read())',
    'print("sent", flush=True)',
    'time.sleep(120)',
  ].join('\n');
  const child = spawn('python3', ['-c', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdin!.end(request);
  return child;
}

async function streamWhole(words: string, maxTokens: number): Promise<string[]> {
  const res = await fetch(`${server.url}/v2/models/mock_llm/generate_stream`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ text_input: words, stream: true, parameters: { max_tokens: maxTokens } }),
  });
  assert.equal(res.status, 200);
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((e) => e.trim() !== '')
    .map((e) => (JSON.parse(e.slice(6)) as { text_output: string }).text_output);
}

test('a client that stops reading an SSE stream: held up to the bound, then dropped with a warning and its request cancelled; others are served', async () => {
  const tag = path.join(marks, 'stalled');
  const word = 'w'.repeat(4096);
  const body = JSON.stringify({ text_input: `${word} ${word}x`, stream: true, parameters: { max_tokens: 1_000_000, marker: tag } });
  stalled = stallingClient(
    `POST /v2/models/mock_llm/generate_stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  await new Promise<void>((resolve) => stalled!.stdout!.once('data', () => resolve()));

  // While it stalls, another client's stream is answered whole.
  assert.deepEqual(await streamWhole('a b', 3), ['a', 'b', 'a']);

  await until('the server drops the stalled client', () => /stopped reading a streamed answer/.test(server.output()));
  const line =
    /closed the connection of (\S+): it stopped reading a streamed answer, and (\d+) bytes of it waited \(the bound is (\d+)\); its requests are cancelled/.exec(
      server.output(),
    );
  assert.ok(line !== null, server.output().slice(-2000));
  assert.match(line[1]!, /^127\.0\.0\.1:\d+$/, 'the warning names the client');
  assert.equal(Number(line[3]), BOUND);
  const waited = Number(line[2]);
  assert.ok(waited > BOUND && waited < BOUND + 64 * 1024, `what waited stays within one event of the bound: ${waited}`);

  await until('the model sees the cancel', () => fs.existsSync(`${tag}.cancelled`));
  const [sent, cancelled] = fs.readFileSync(`${tag}.cancelled`, 'utf8').split(' ');
  assert.equal(cancelled, 'True');
  assert.ok(Number(sent) < 1_000_000, `stopped early, after ${sent} words`);

  assert.deepEqual(await streamWhole('c d e', 4), ['c', 'd', 'e', 'c'], 'the model serves on');
  await until('every arena block is back', async () => (await server.arenaUsedBytes()) === server.arenaBaseline);
});
