/**
 * The foundation's "must show" through the real server and a real HTTP
 * client: health, metadata, config, JSON and binary inference on `simple`,
 * the errors Triton gives for a wrong shape and an unknown model.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { infer } from '../../src/client/kserve-http-client';
import { startServer } from './server-process';
import type { ServerProcess } from './server-process';

let server: ServerProcess;
before(async () => {
  server = await startServer();
});
after(async () => {
  assert.equal(await server.stop(), 0, 'server exits 0 on SIGTERM');
});

const in0 = Array.from({ length: 16 }, (_, i) => i);
const in1 = Array.from({ length: 16 }, () => 1);

test('health live and ready are 200 with an empty body', async () => {
  for (const p of ['/v2/health/live', '/v2/health/ready']) {
    const res = await fetch(server.url + p);
    assert.equal(res.status, 200, p);
    assert.equal(await res.text(), '');
  }
});

test('responses carry only our headers: no uWebSockets mark on 200s, errors or infer replies', async () => {
  const replies = [
    await fetch(server.url + '/v2/health/live'),
    await fetch(server.url + '/v2'),
    await fetch(server.url + '/v2/models/nope'),
    await infer(server.url, 'simple', [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(64) },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(64) },
    ]),
  ];
  assert.deepEqual(
    replies.map((r) => r.status),
    [200, 200, 404, 200],
  );
  for (const r of replies) assert.equal(r.headers.get('uwebsockets'), null, [...r.headers.keys()].join(','));
});

test('server metadata names triton-compatible extensions', async () => {
  const res = await fetch(server.url + '/v2');
  assert.equal(res.status, 200);
  const body = (await res.json()) as { name: string; version: string; extensions: string[] };
  assert.equal(body.name, 'triton');
  assert.ok(body.extensions.includes('binary_tensor_data'));
});

test('model metadata and ready for simple', async () => {
  const res = await fetch(server.url + '/v2/models/simple');
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), {
    name: 'simple',
    versions: ['1'],
    platform: 'onnxruntime_onnx',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [-1, 16] },
      { name: 'INPUT1', datatype: 'INT32', shape: [-1, 16] },
    ],
    outputs: [
      { name: 'OUTPUT0', datatype: 'INT32', shape: [-1, 16] },
      { name: 'OUTPUT1', datatype: 'INT32', shape: [-1, 16] },
    ],
  });
  assert.equal((await fetch(server.url + '/v2/models/simple/ready')).status, 200);
  assert.equal((await fetch(server.url + '/v2/models/simple/versions/1/ready')).status, 200);
});

test('model config is Triton-shaped JSON', async () => {
  const res = await fetch(server.url + '/v2/models/simple/config');
  assert.equal(res.status, 200);
  const c = (await res.json()) as Record<string, unknown>;
  assert.equal(c.name, 'simple');
  assert.equal(c.platform, 'onnxruntime_onnx');
  assert.equal(c.backend, 'onnxruntime');
  assert.equal(c.max_batch_size, 8);
  assert.deepEqual(c.version_policy, { latest: { num_versions: 1 } });
  const groups = c.instance_group as { kind: string; count: number }[];
  assert.equal(groups[0].kind, 'KIND_CPU');
});

test('JSON inference on simple returns sum and difference', async () => {
  const r = await infer(
    server.url,
    'simple',
    [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: in0 },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: in1 },
    ],
    { id: 'req-7' },
  );
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.equal(r.json.id, 'req-7');
  assert.equal(r.json.model_name, 'simple');
  assert.equal(r.json.model_version, '1');
  const outputs = r.json.outputs as { name: string; datatype: string; shape: number[]; data: number[] }[];
  const out0 = outputs.find((o) => o.name === 'OUTPUT0')!;
  const out1 = outputs.find((o) => o.name === 'OUTPUT1')!;
  assert.deepEqual(out0.shape, [1, 16]);
  assert.equal(out0.datatype, 'INT32');
  assert.deepEqual(
    out0.data,
    in0.map((x) => x + 1),
  );
  assert.deepEqual(
    out1.data,
    in0.map((x) => x - 1),
  );
});

test('binary-extension inference on simple, batch 2, binary outputs', async () => {
  const a = Int32Array.from({ length: 32 }, (_, i) => i * 3);
  const b = Int32Array.from({ length: 32 }, (_, i) => i);
  const r = await infer(
    server.url,
    'simple',
    [
      { name: 'INPUT0', datatype: 'INT32', shape: [2, 16], data: new Uint8Array(a.buffer) },
      { name: 'INPUT1', datatype: 'INT32', shape: [2, 16], data: new Uint8Array(b.buffer) },
    ],
    {
      outputs: [
        { name: 'OUTPUT0', binary: true },
        { name: 'OUTPUT1', binary: true },
      ],
    },
  );
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.equal(r.headers.get('content-type'), 'application/octet-stream');
  const sum = new Int32Array(new Uint8Array(r.binary.get('OUTPUT0')!).buffer);
  const diff = new Int32Array(new Uint8Array(r.binary.get('OUTPUT1')!).buffer);
  assert.deepEqual(
    [...sum],
    [...a].map((x, i) => x + b[i]),
  );
  assert.deepEqual(
    [...diff],
    [...a].map((x, i) => x - b[i]),
  );
});

test('requested output subset returns only that output', async () => {
  const r = await infer(
    server.url,
    'simple',
    [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: in0 },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: in1 },
    ],
    { outputs: [{ name: 'OUTPUT1' }] },
  );
  assert.equal(r.status, 200);
  const outputs = r.json.outputs as { name: string }[];
  assert.deepEqual(
    outputs.map((o) => o.name),
    ['OUTPUT1'],
  );
});

test('wrong shape is a 400 that names INPUT0', async () => {
  const r = await infer(server.url, 'simple', [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 8], data: in0.slice(0, 8) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: in1 },
  ]);
  assert.equal(r.status, 400);
  assert.match(String(r.json.error), /unexpected shape for input 'INPUT0' for model 'simple'\. Expected \[-1,16\], got \[1,8\]/);
});

test("unknown model is a 404 with Triton's text", async () => {
  const r = await infer(server.url, 'nope', [{ name: 'X', datatype: 'INT32', shape: [1], data: [1] }]);
  assert.equal(r.status, 404);
  assert.equal(r.json.error, "Request for unknown model: 'nope' is not found");
  const meta = await fetch(server.url + '/v2/models/nope');
  assert.equal(meta.status, 404);
});

test('unknown path is 404, wrong method is 405', async () => {
  const a = await fetch(server.url + '/v2/nothing');
  assert.equal(a.status, 404);
  assert.deepEqual(await a.json(), { error: 'Not Found' });
  const b = await fetch(server.url + '/v2/models/simple/infer');
  assert.equal(b.status, 405);
  assert.deepEqual(await b.json(), { error: 'Method Not Allowed' });
});

test('gzip request body and gzip response', async () => {
  const body = Buffer.from(
    JSON.stringify({
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: in0 },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: in1 },
      ],
    }),
  );
  const res = await fetch(server.url + '/v2/models/simple/infer', {
    method: 'POST',
    headers: { 'Content-Encoding': 'gzip', 'Accept-Encoding': 'gzip' },
    body: zlib.gzipSync(body),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-encoding'), 'gzip');
  const json = (await res.json()) as { outputs: { name: string; data: number[] }[] };
  assert.deepEqual(
    json.outputs.find((o) => o.name === 'OUTPUT0')!.data,
    in0.map((x) => x + 1),
  );
});

test('unsupported Content-Encoding is 501', async () => {
  const res = await fetch(server.url + '/v2/models/simple/infer', { method: 'POST', headers: { 'Content-Encoding': 'br' }, body: 'x' });
  assert.equal(res.status, 501);
  assert.deepEqual(await res.json(), { error: 'Unsupported compression type' });
});

test('malformed JSON is a 500 with the parse position, and the server keeps serving', async () => {
  const res = await fetch(server.url + '/v2/models/simple/infer', { method: 'POST', body: '{"inputs": [' });
  assert.equal(res.status, 500);
  assert.match(((await res.json()) as { error: string }).error, /^failed to parse the request JSON buffer: /);
  assert.equal((await fetch(server.url + '/v2/health/ready')).status, 200);
});

test('64 concurrent requests each get their own answer', async () => {
  const results = await Promise.all(
    Array.from({ length: 64 }, (_, k) =>
      infer(
        server.url,
        'simple',
        [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: in0.map((x) => x * k) },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: in1 },
        ],
        { id: `c${k}` },
      ),
    ),
  );
  results.forEach((r, k) => {
    assert.equal(r.status, 200);
    assert.equal(r.json.id, `c${k}`);
    const out0 = (r.json.outputs as { name: string; data: number[] }[]).find((o) => o.name === 'OUTPUT0')!;
    assert.deepEqual(
      out0.data,
      in0.map((x) => x * k + 1),
    );
  });
});
