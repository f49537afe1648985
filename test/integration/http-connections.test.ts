/**
 * The HTTP server's connection handling with real clients: curl's HTTP/1.0
 * and 100-continue, pipelined requests to different routes answered in
 * order, two HTTP threads sharing the port (each on its own descriptor),
 * and a restart on the same port while the old connections sit in
 * TIME_WAIT.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { MODEL_REPOSITORY, startServer } from './server-process';
import { SIMPLE_BODY, inferSimple } from './repo-kit';
import { rawExchange } from './raw-http';

const infer = (id: string): string => {
  const body = SIMPLE_BODY.replace('{', `{"id":"${id}",`);
  return `POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
};

test('curl --http1.0 and a large curl upload (Expect: 100-continue) are answered', async () => {
  const server = await startServer();
  try {
    const ready = execFileSync('curl', ['-s', '--http1.0', '-o', '/dev/null', '-w', '%{http_code} %{http_version}', `${server.url}/v2/health/ready`], {
      encoding: 'utf8',
      timeout: 10_000,
    });
    assert.equal(ready, '200 1.1');
    const meta = execFileSync('curl', ['-s', '--http1.0', `${server.url}/v2`], { encoding: 'utf8', timeout: 10_000 });
    assert.equal((JSON.parse(meta) as { name: string }).name, 'triton');
    // curl sends Expect: 100-continue for bodies over 1 MiB and waits for it.
    const big = JSON.stringify({
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(1) },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(2) },
      ],
      parameters: { pad: 'x'.repeat(1_200_000) },
    });
    const out = execFileSync('curl', ['-s', '-v', '--data-binary', '@-', '-H', 'Content-Type: application/json', `${server.url}/v2/models/simple/infer`], {
      input: big,
      encoding: 'utf8',
      timeout: 20_000,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    assert.deepEqual((JSON.parse(out) as { outputs: { name: string; data: number[] }[] }).outputs.find((o) => o.name === 'OUTPUT0')!.data, Array(16).fill(3));
  } finally {
    await server.stop();
  }
});

test('pipelined requests to different routes are answered in the order they came, each with its own body', async () => {
  const server = await startServer();
  try {
    const r = await rawExchange(
      server.port,
      [infer('a') + 'GET /v2 HTTP/1.1\r\nHost: x\r\n\r\n' + infer('b') + 'GET /v2/models/nope HTTP/1.1\r\nHost: x\r\n\r\n' + infer('c')],
      { answers: 5 },
    );
    assert.deepEqual(
      r.answers.map((a) => a.status),
      [200, 200, 200, 404, 200],
    );
    assert.equal((JSON.parse(r.answers[0].body) as { id: string }).id, 'a');
    assert.equal((JSON.parse(r.answers[1].body) as { name: string }).name, 'triton');
    assert.equal((JSON.parse(r.answers[2].body) as { id: string }).id, 'b');
    assert.match(r.answers[3].body, /Request for unknown model: 'nope' is not found/);
    assert.equal((JSON.parse(r.answers[4].body) as { id: string }).id, 'c');
  } finally {
    await server.stop();
  }
});

test('two HTTP threads share the port; a restart binds the same port while its old connections are in TIME_WAIT', async () => {
  const first = await startServer([`--model-repository=${MODEL_REPOSITORY}`, '--http-thread-count=2']);
  const port = first.port;
  // Connections from both threads, then the server closes them itself on stop (so TIME_WAIT is on its side).
  const answers = await Promise.all(Array.from({ length: 8 }, () => inferSimple(first.url)));
  assert.deepEqual(
    answers.map((a) => a.status),
    Array(8).fill(200),
  );
  await first.stop();
  let ss = '';
  try {
    ss = execFileSync('ss', ['-tan', `sport = :${port}`], { encoding: 'utf8' }); // what holds the port, for the failure message
  } catch {
    // no iproute2 here
  }
  const second = await startServer([`--model-repository=${MODEL_REPOSITORY}`, `--http-port=${port}`, '--http-thread-count=2']);
  try {
    assert.equal(second.port, port, ss);
    assert.equal((await inferSimple(second.url)).status, 200);
  } finally {
    await second.stop();
  }
});
