/**
 * Bearer tokens on every route of every port, against the real server:
 * --http-auth-token-file guards the HTTP port (KServe, control and /v1
 * routes, health too unless --auth-exempt-health), --openai-port takes the
 * same tokens, --grpc-auth-token-file guards every gRPC call; a missing or
 * wrong token is refused (401 with WWW-Authenticate, or UNAUTHENTICATED)
 * before any handler runs (an unload without a token unloads nothing), the
 * connection goes on serving, and --http-restricted-api still applies on top.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { createClient, int32Bytes, type GrpcTestClient } from './grpc-test-client';
import { MODEL_REPOSITORY, startServer, type ServerProcess } from './server-process';
import { rawExchange } from './raw-http';

const TOKEN = 'tok-3f9a1c';
const OTHER = 'second.token~7';
let dir: string;
let server: ServerProcess;
let exempt: ServerProcess;
let client: GrpcTestClient;
let openaiPort = 0;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-auth-'));
  const file = path.join(dir, 'tokens');
  fs.writeFileSync(file, `# nodetron tokens\n${TOKEN}\n\n${OTHER}\n`);
  const repo = [`--model-repository=${MODEL_REPOSITORY}`, '--model-control-mode=explicit', '--load-model=simple'];
  [server, exempt] = await Promise.all([
    startServer([
      ...repo,
      `--http-auth-token-file=${file}`,
      `--grpc-auth-token-file=${file}`,
      '--allow-grpc=true',
      '--grpc-port=0',
      '--openai-port=0',
      '--http-restricted-api=model-repository:admin-key=secret',
    ]),
    startServer([
      ...repo,
      `--http-auth-token-file=${file}`,
      `--grpc-auth-token-file=${file}`,
      '--allow-grpc=true',
      '--grpc-port=0',
      '--auth-exempt-health=true',
    ]),
  ]);
  openaiPort = Number(/Started OpenAI-compatible frontend at \S*:(\d+)/.exec(server.output())?.[1] ?? 0);
  client = createClient(server.grpcPort);
});

after(async () => {
  client.close();
  assert.equal(await server.stop(), 0, server.output().slice(-2000));
  assert.equal(await exempt.stop(), 0, exempt.output().slice(-2000));
  fs.rmSync(dir, { recursive: true, force: true });
});

const bearer = (t: string): Record<string, string> => ({ Authorization: `Bearer ${t}` });
const A = Array.from({ length: 16 }, (_, i) => i);
const INFER_BODY = JSON.stringify({
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: A },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: A },
  ],
});

test('HTTP: no token is 401 with a Bearer challenge, a wrong one 401 invalid_token, either token 200', async () => {
  const none = await fetch(`${server.url}/v2/models/simple/infer`, { method: 'POST', body: INFER_BODY });
  assert.equal(none.status, 401);
  assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="nodetron"');
  assert.deepEqual(await none.json(), {
    error: "missing bearer token: this server requires the header 'Authorization: Bearer <token>' on every request (--http-auth-token-file)",
  });
  const wrong = await fetch(`${server.url}/v2/models/simple/infer`, { method: 'POST', body: INFER_BODY, headers: bearer('tok-3f9a1d') });
  assert.equal(wrong.status, 401);
  assert.equal(wrong.headers.get('www-authenticate'), 'Bearer realm="nodetron", error="invalid_token"');
  const text = JSON.stringify(await wrong.json());
  assert.match(text, /invalid bearer token/);
  assert.ok(!text.includes('tok-3f9a1'), 'no token is echoed');
  for (const t of [TOKEN, OTHER]) {
    const ok = await fetch(`${server.url}/v2/models/simple/infer`, { method: 'POST', body: INFER_BODY, headers: bearer(t) });
    assert.equal(ok.status, 200, await ok.text());
  }
  for (const p of ['/v2', '/v2/health/ready', '/v2/models/simple/config', '/v1/models', '/metrics-not-here']) {
    assert.equal((await fetch(`${server.url}${p}`)).status, 401, `${p} needs a token too`);
  }
  assert.ok(!server.output().includes(TOKEN) && !server.output().includes(OTHER), 'tokens are never logged');
});

test('HTTP: a refused request runs nothing (an unload without a token unloads nothing) and its connection goes on', async () => {
  const ex = await rawExchange(
    server.port,
    [
      'POST /v2/repository/models/simple/unload HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}',
      `GET /v2/models/simple/ready HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`,
    ],
    { answers: 2 },
  );
  assert.deepEqual(
    ex.answers.map((a) => a.status),
    [401, 200],
    'the model is still ready: the unload never ran',
  );
});

test('HTTP: the restricted API still asks for its key once the token passes', async () => {
  const index = `${server.url}/v2/repository/index`;
  assert.equal((await fetch(index, { method: 'POST', body: '{}' })).status, 401);
  const noKey = await fetch(index, { method: 'POST', body: '{}', headers: bearer(TOKEN) });
  assert.equal(noKey.status, 403);
  assert.deepEqual(await noKey.json(), { error: "This API is restricted, expecting header 'admin-key'" });
  assert.equal((await fetch(index, { method: 'POST', body: '{}', headers: { ...bearer(TOKEN), 'admin-key': 'secret' } })).status, 200);
});

test('HTTP: the console page loads without a token (it asks for one), its API calls do not', async () => {
  assert.equal((await fetch(`${server.url}/console/`)).status, 200);
  assert.equal((await fetch(`${server.url}/v2/repository/index`, { method: 'POST', body: '{}', headers: { 'admin-key': 'secret' } })).status, 401);
});

test('the OpenAI port takes the same tokens', async () => {
  const base = `http://127.0.0.1:${openaiPort}`;
  const none = await fetch(`${base}/v1/models`);
  assert.equal(none.status, 401);
  assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer/);
  assert.equal((await fetch(`${base}/v1/models`, { headers: bearer(TOKEN) })).status, 200);
  assert.equal((await fetch(`${base}/health/ready`)).status, 401, 'health is not exempt without --auth-exempt-health');
});

async function grpcRejects(p: Promise<unknown>, details: RegExp): Promise<void> {
  await assert.rejects(p, (err: grpc.ServiceError) => {
    assert.equal(err.code, grpc.status.UNAUTHENTICATED, err.details);
    assert.match(err.details, details);
    return true;
  });
}

test('gRPC: every call needs the token in its metadata, health too', async () => {
  const md = (t: string): grpc.Metadata => {
    const m = new grpc.Metadata();
    m.set('authorization', `Bearer ${t}`);
    return m;
  };
  const req = {
    model_name: 'simple',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
    ],
    raw_input_contents: [int32Bytes(A), int32Bytes(A)],
  };
  await grpcRejects(
    client.call('ModelInfer', req),
    /^missing bearer token: this server requires the metadata 'authorization: Bearer <token>' on every request \(--grpc-auth-token-file\)$/,
  );
  await grpcRejects(client.call('ModelInfer', req, md('nope')), /^invalid bearer token/);
  await grpcRejects(client.call('ServerLive', {}), /missing bearer token/);
  await grpcRejects(client.call('RepositoryIndex', {}), /missing bearer token/);
  const res = await client.call<{ raw_output_contents: Buffer[] }>('ModelInfer', req, md(OTHER));
  assert.equal(res.raw_output_contents.length, 2);
  assert.deepEqual(await client.call('ServerLive', {}, md(TOKEN)), { live: true });
});

test('--auth-exempt-health: health checks pass without a token, everything else still needs one', async () => {
  assert.equal((await fetch(`${exempt.url}/v2/health/ready`)).status, 200);
  assert.equal((await fetch(`${exempt.url}/v2/health/live`)).status, 200);
  assert.equal((await fetch(`${exempt.url}/v2/models/simple/ready`)).status, 401);
  const c = createClient(exempt.grpcPort);
  try {
    assert.deepEqual(await c.call('ServerReady', {}), { ready: true });
    assert.deepEqual(await c.check(), { status: 'SERVING' });
    await grpcRejects(c.call('ModelReady', { name: 'simple', version: '' }), /missing bearer token/);
  } finally {
    c.close();
  }
});
