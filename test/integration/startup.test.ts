/**
 * Startup and failure behaviour through the real CLI: failing models and
 * their reasons, --exit-on-error, --strict-readiness, version folders, GPU
 * instances on a machine without GPUs, bad flags, oversized bodies, and
 * several HTTP threads on one port.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { createClient } from './grpc-test-client';
import { MODEL_REPOSITORY, runToExit, startServer, unwrapTables, waitForOutput } from './server-process';

/** A repository with a copy of `simple` plus the given broken models (name → files). */
function makeRepo(models: Record<string, Record<string, string>>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-repo-'));
  fs.cpSync(path.join(MODEL_REPOSITORY, 'simple'), path.join(dir, 'simple'), { recursive: true });
  for (const [name, files] of Object.entries(models)) {
    for (const [file, text] of Object.entries(files)) {
      const p = path.join(dir, name, file);
      fs.mkdirSync(path.dirname(p), { recursive: true });
      if (text === '@simple-onnx') fs.copyFileSync(path.join(MODEL_REPOSITORY, 'simple/1/model.onnx'), p);
      else fs.writeFileSync(p, text);
    }
  }
  return dir;
}

const SIMPLE_CONFIG = fs.readFileSync(path.join(MODEL_REPOSITORY, 'simple/config.pbtxt'), 'utf8');
const withName = (name: string, extra = ''): string => SIMPLE_CONFIG.replace('name: "simple"', `name: "${name}"`) + extra;

test('a config with an unknown field fails startup, naming the model, the field and the line', async () => {
  const repo = makeRepo({ broken: { 'config.pbtxt': 'name: "broken"\nplatform: "onnxruntime_onnx"\nmax_batch_sise: 8\n', '1/model.onnx': '@simple-onnx' } });
  const r = await runToExit([`--model-repository=${repo}`]);
  assert.equal(r.code, 1);
  assert.match(
    unwrapTables(r.output),
    /\| broken +\| 1 +\| UNAVAILABLE: Invalid argument: failed to read text proto from .*config\.pbtxt: line 3: unknown field 'max_batch_sise'/,
  );
  assert.match(unwrapTables(r.output), /\| simple +\| 1 +\| READY/);
  assert.match(r.output, /error: creating server: Internal - failed to load all models/);
});

test('--exit-on-error=false keeps serving the good models; strict readiness reports not ready', async () => {
  const repo = makeRepo({
    nofile: { 'config.pbtxt': withName('nofile'), '1/.keep': '' },
    gpu: { 'config.pbtxt': withName('gpu', 'instance_group [ { kind: KIND_GPU } ]\n'), '1/model.onnx': '@simple-onnx' },
    versions: { 'config.pbtxt': withName('versions'), '1/model.onnx': '@simple-onnx', 'v2/model.onnx': '@simple-onnx' },
  });
  const server = await startServer([`--model-repository=${repo}`, '--exit-on-error=false']);
  try {
    assert.match(unwrapTables(server.output()), /\| nofile +\| 1 +\| UNAVAILABLE: Internal: failed to stat file .*nofile\/1\/model\.onnx/);
    assert.match(unwrapTables(server.output()), /\| gpu +\| 1 +\| UNAVAILABLE: .*GPU/);
    assert.match(server.output(), /ignore version directory 'v2' which fails to convert to integral number/);
    assert.equal((await fetch(server.url + '/v2/health/live')).status, 200);
    assert.equal((await fetch(server.url + '/v2/health/ready')).status, 400);
    const notReady = await fetch(server.url + '/v2/models/nofile/versions/1/ready');
    assert.equal(notReady.status, 503);
    assert.deepEqual(await notReady.json(), { error: "Request for unknown model: 'nofile' version 1 is not at ready state" });
    const r = await infer(server.url, 'versions', [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(64) },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(64) },
    ]);
    assert.equal(r.status, 200);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('--strict-readiness=false: ready as soon as the server is up', async () => {
  const repo = makeRepo({ nofile: { 'config.pbtxt': withName('nofile'), '1/.keep': '' } });
  const server = await startServer([`--model-repository=${repo}`, '--exit-on-error=false', '--strict-readiness=false']);
  try {
    assert.equal((await fetch(server.url + '/v2/health/ready')).status, 200);
  } finally {
    await server.stop();
  }
});

test('an unknown flag and a bad boolean exit 1 naming them', async () => {
  const a = await runToExit([`--model-repository=${MODEL_REPOSITORY}`, '--no-such-flag=1']);
  assert.equal(a.code, 1);
  assert.match(a.output, /no-such-flag/);
  const b = await runToExit([`--model-repository=${MODEL_REPOSITORY}`, '--exit-on-error=maybe']);
  assert.equal(b.code, 1);
  assert.match(b.output, /Bad option: "--exit-on-error"\.[\s\S]*invalid value for bool option: maybe/);
});

test('flags nodetron ignores warn once at start, naming the flag, that it is ignored and what to use', async () => {
  const server = await startServer([`--model-repository=${makeRepo({})}`, '--allow-sagemaker=true', '--allow-vertex-ai=false', '--grpc-infer-thread-count=8']);
  try {
    const out = server.output();
    const sagemaker =
      "'--allow-sagemaker=true' is ignored: nodetron has no SageMaker endpoint (/ping, /invocations); " + 'use the KServe v2 HTTP API on --http-port.';
    assert.equal(out.split(sagemaker).length - 1, 1, out);
    assert.match(
      out,
      /^W\d{4} [\d:.]+ \d+ [^\]]+\] "Warning: '--grpc-infer-thread-count=8' is ignored: gRPC requests are handled on the main thread by grpc-js\."$/m,
    );
    assert.doesNotMatch(out, /allow-vertex-ai/);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('--log-format=json --log-access: every line is one JSON object; each inference gets an access line', async () => {
  const server = await startServer([`--model-repository=${makeRepo({})}`, '--log-format=json', '--log-access=true', '--allow-grpc=true', '--grpc-port=0']);
  const zeros = [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(64) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(64) },
  ];
  try {
    assert.equal((await infer(server.url, 'simple', zeros)).status, 200);
    const missing = await fetch(server.url + '/v2/models/simple/versions/7/infer', { method: 'POST', body: '{}' });
    assert.notEqual(missing.status, 200); // refused by the HTTP thread itself: its own access line, no times
    const grpc = createClient(server.grpcPort);
    try {
      await grpc.call('ModelInfer', {
        model_name: 'simple',
        id: 'g1',
        inputs: zeros.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape })),
        raw_input_contents: zeros.map((t) => Buffer.from(t.data)),
      });
      await assert.rejects(grpc.call('ModelInfer', { model_name: 'simple', model_version: '7', inputs: [] }));
    } finally {
      grpc.close();
    }
    const access = await waitForOutput(server, /GRPC client=\S+ model=simple version=7 status=\d+ /);
    const records = access
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const r of records) {
      assert.match(String(r['time']), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      assert.ok(['INFO', 'WARNING', 'ERROR'].includes(String(r['level'])), JSON.stringify(r));
      assert.equal(typeof r['source'], 'string');
    }
    assert.ok(
      records.some((r) => /^server\.ts:\d+$/.test(String(r['source']))),
      'real source locations',
    );
    const line = records.find((r) => /^HTTP client=\S+ model=simple version=1 /.test(String(r['message'])))!;
    assert.equal(line['source'], 'access');
    assert.match(
      String(line['message']),
      /^HTTP client=127\.0\.0\.1:\d+ model=simple version=1 status=200 in_bytes=128 out_bytes=128 queue_us=\d+ compute_us=\d+ total_us=\d+ id=""$/,
    );
    assert.ok(
      records.some((r) => /^GRPC client=127\.0\.0\.1:\d+ model=simple version=1 status=0 in_bytes=128 out_bytes=128 .*id="g1"$/.test(String(r['message']))),
    );
    // Refused by the frontend threads themselves, before any scheduler: logged by them, without times.
    assert.ok(
      records.some((r) =>
        /^HTTP client=127\.0\.0\.1:\d+ model=simple version=7 status=404 in_bytes=2 out_bytes=0 queue_us=- compute_us=- total_us=- id=""$/.test(
          String(r['message']),
        ),
      ),
      records.map((r) => r['message']).join('\n'),
    );
    assert.ok(
      records.some((r) => /^GRPC client=127\.0\.0\.1:\d+ model=simple version=7 status=\d+ in_bytes=0 out_bytes=0 queue_us=- /.test(String(r['message']))),
    );
    assert.equal(records.filter((r) => r['source'] === 'access').length, 4, 'every inference request, answered or refused');
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('two HTTP threads share the port; a body over --http-max-input-size is refused with 400', async () => {
  const server = await startServer([`--model-repository=${MODEL_REPOSITORY}`, '--http-thread-count=2', '--http-max-input-size=4096']);
  try {
    const ok = await Promise.all(
      Array.from({ length: 20 }, () =>
        infer(
          server.url,
          'simple',
          [
            { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(64) },
            { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(64) },
          ],
          { headers: { Connection: 'close' } },
        ),
      ),
    );
    for (const r of ok) assert.equal(r.status, 200);
    const big = await fetch(server.url + '/v2/models/image_classifier/infer', {
      method: 'POST',
      headers: { 'Inference-Header-Content-Length': '10' },
      body: Buffer.alloc(100_000),
    });
    assert.equal(big.status, 400);
    assert.match(
      ((await big.json()) as { error: string }).error,
      /exceeds the maximum allowed input size of 4096 bytes\. Use --http-max-input-size to increase the limit\./,
    );
    assert.equal((await fetch(server.url + '/v2/health/ready')).status, 200);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('SIGTERM during load: every request gets an answer (200, or 503 Server exiting), then exit 0', async () => {
  const server = await startServer([`--model-repository=${MODEL_REPOSITORY}`]);
  const pixels = new Uint8Array(3 * 224 * 224 * 4);
  // The stop serves on while requests are in flight (server-stop.ts), so
  // all of these are normally answered 200. A request whose headers had not
  // reached the server when it closed its connections ends at the socket:
  // refused, or the connection it was still being written to is closed
  // (EPIPE/ECONNRESET) — on a loaded 2-core box the client can be that slow
  // to write. Every request the server saw is answered: a reply is 200 or
  // 503 'Server exiting', never an error, and the process exits 0.
  const inflight = Array.from({ length: 24 }, () =>
    infer(server.url, 'image_classifier', [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], data: pixels }], { binaryDataOutput: true }).catch(
      (err: { cause?: { code?: string } }) => {
        assert.ok(['ECONNREFUSED', 'EPIPE', 'ECONNRESET'].includes(err.cause?.code ?? ''), String(err));
        return { status: 0, json: {} as Record<string, unknown>, binary: new Map<string, Buffer>() };
      },
    ),
  );
  // Signal once the server is busy with them (the first answer is back; the
  // rest are queued or still arriving), however slow this machine is today.
  await Promise.race(inflight);
  const exited = server.stop({ checkArena: false }); // under load on purpose: blocks are still in use
  const results = await Promise.all(inflight);
  for (const r of results) {
    if (r.status === 200) assert.equal(r.binary.get('probabilities')!.length, 4000);
    else if (r.status !== 0) assert.deepEqual([r.status, r.json.error], [503, 'Server exiting']);
  }
  assert.ok(
    results.some((r) => r.status === 200),
    'requests admitted before the signal are answered',
  );
  assert.equal(await exited, 0);
});

test("a port another process holds stops the start with Triton's text, for the HTTP, gRPC and metrics ports alike", async () => {
  const held = net.createServer();
  await new Promise<void>((resolve) => held.listen(0, '0.0.0.0', resolve));
  const port = (held.address() as net.AddressInfo).port;
  try {
    const base = [`--model-repository=${MODEL_REPOSITORY}`, '--model-control-mode=explicit'];
    const cases: [string[], RegExp][] = [
      [[`--http-port=${port}`], new RegExp(`failed to start HTTP service: Socket '0\\.0\\.0\\.0:${port}' already in use `)],
      [['--allow-grpc=true', `--grpc-port=${port}`], new RegExp(`failed to start GRPC service: Socket '0\\.0\\.0\\.0:${port}' already in use `)],
      [['--metrics-address=0.0.0.0', `--metrics-port=${port}`], new RegExp(`Socket '0\\.0\\.0\\.0:${port}' already in use `)],
    ];
    for (const [args, text] of cases) {
      const r = await runToExit([...base, ...args]);
      assert.equal(r.code, 1, r.output.slice(-1000));
      assert.match(r.output, text);
    }
  } finally {
    held.close();
  }
});
