/**
 * Explicit model control as Triton's client examples drive it
 * (simple_http_model_control.py / simple_grpc_model_control.py: index, load,
 * ready, infer, unload, not ready, load again, a wrong name fails), once over
 * HTTP (fetch) and once over gRPC (grpc-js from our protos), and
 * `unload_dependents` with `simple_ensemble` (uses `simple`) over both.
 * One server: explicit mode, nothing loaded at startup, HTTP and gRPC, one
 * load thread (loads queue; an ensemble still loads its composing model
 * along) and two load retries (a failing build is tried three times).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { createClient, int32Bytes, int32Values } from './grpc-test-client';
import type { GrpcTestClient } from './grpc-test-client';
import { inferSimple, makeRepo, post, repoIndex, waitFor } from './repo-kit';
import { startServer, waitForOutput } from './server-process';
import type { ServerProcess } from './server-process';

let server: ServerProcess;
let client: GrpcTestClient;
let repo: string;

before(async () => {
  repo = makeRepo(['simple', 'simple_ensemble']);
  // `broken`: a Python model whose initialize() raises (every version build fails).
  fs.mkdirSync(path.join(repo, 'broken', '1'), { recursive: true });
  fs.writeFileSync(
    path.join(repo, 'broken', '1', 'model.py'),
    'class TritonPythonModel:\n    def initialize(self, args):\n        raise RuntimeError("broken on purpose")\n\n    def execute(self, requests):\n        return []\n',
  );
  fs.writeFileSync(
    path.join(repo, 'broken', 'config.pbtxt'),
    [
      'name: "broken"',
      'backend: "python"',
      'input [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]',
      'output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]',
    ].join('\n'),
  );
  server = await startServer([
    `--model-repository=${repo}`,
    '--model-control-mode=explicit',
    '--model-load-thread-count=1',
    '--model-load-retry-count=2',
    '--allow-grpc=true',
    '--grpc-port=0',
    '--grpc-address=127.0.0.1',
  ]);
  client = createClient(server.grpcPort);
});
after(async () => {
  client?.close();
  await server.stop();
  fs.rmSync(repo, { recursive: true, force: true });
});

const ready = async (model: string): Promise<boolean> => (await fetch(`${server.url}/v2/models/${model}/ready`)).status === 200;
/** As Triton: a model that is not loaded (never, or unloaded) answers `ready: false` with status OK, not an error. */
const grpcReady = async (model: string): Promise<boolean> => (await client.call<{ ready: boolean }>('ModelReady', { name: model, version: '' })).ready;

async function rejects(p: Promise<unknown>, code: grpc.status, message: string | RegExp): Promise<void> {
  await assert.rejects(p, (err: grpc.ServiceError) => {
    assert.equal(err.code, code, err.details);
    if (typeof message === 'string') assert.equal(err.details, message);
    else assert.match(err.details, message);
    return true;
  });
}

const in0 = Array.from({ length: 16 }, (_, i) => i);
const in1 = Array.from({ length: 16 }, () => 1);
function grpcInfer(model: string): Promise<Record<string, any>> {
  return client.call('ModelInfer', {
    model_name: model,
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
    ],
    raw_input_contents: [int32Bytes(in0), int32Bytes(in1)],
  });
}

async function unloadAll(): Promise<void> {
  for (const m of ['simple_ensemble', 'simple']) assert.equal((await post(server.url, `/v2/repository/models/${m}/unload`)).status, 200);
  await waitFor('every model unloaded', async () => (await repoIndex(server.url)).every((e) => e.state === undefined || e.reason === 'unloaded'));
}

test('HTTP model control flow (simple_http_model_control.py)', async () => {
  assert.deepEqual(await repoIndex(server.url), [{ name: 'broken' }, { name: 'simple' }, { name: 'simple_ensemble' }]);
  assert.equal(await ready('simple'), false);
  const load = await post(server.url, '/v2/repository/models/simple/load');
  assert.equal(load.status, 200, load.text);
  assert.equal(await ready('simple'), true);
  assert.equal((await inferSimple(server.url)).status, 200);
  const unload = await post(server.url, '/v2/repository/models/simple/unload', { parameters: { unload_dependents: false } });
  assert.equal(unload.status, 200, unload.text);
  assert.equal(await ready('simple'), false);
  await waitFor('simple unloaded', async () => (await repoIndex(server.url)).some((e) => e.name === 'simple' && e.reason === 'unloaded'));
  const gone = await inferSimple(server.url);
  assert.equal(gone.status, 404);
  assert.deepEqual(JSON.parse(gone.text), { error: "Request for unknown model: 'simple' has no available versions" });
  assert.equal((await post(server.url, '/v2/repository/models/simple/load')).status, 200);
  assert.equal(await ready('simple'), true);
  assert.equal((await inferSimple(server.url)).status, 200);
  const wrong = await post(server.url, '/v2/repository/models/wrong_model_name/load');
  assert.equal(wrong.status, 500);
  assert.deepEqual(JSON.parse(wrong.text), { error: "failed to load 'wrong_model_name', failed to poll from model repository" });
  await unloadAll();
});

test('gRPC model control flow (simple_grpc_model_control.py)', async () => {
  const index = await client.call<{ models: Record<string, string>[] }>('RepositoryIndex', { ready: false });
  assert.deepEqual(
    index.models.map((m) => [m.name, m.state]),
    [
      ['broken', ''],
      ['simple', 'UNAVAILABLE'],
      ['simple_ensemble', ''],
    ],
  );
  assert.equal(await grpcReady('simple'), false);
  assert.deepEqual(await client.call('RepositoryModelLoad', { model_name: 'simple' }), {});
  assert.equal(await grpcReady('simple'), true);
  const res = await grpcInfer('simple');
  assert.deepEqual(
    int32Values(res.raw_output_contents[0]),
    in0.map((v) => v + 1),
  );
  assert.deepEqual(await client.call('RepositoryModelUnload', { model_name: 'simple', parameters: { unload_dependents: { bool_param: false } } }), {});
  assert.equal(await grpcReady('simple'), false);
  await rejects(grpcInfer('simple'), grpc.status.NOT_FOUND, "Request for unknown model: 'simple' has no available versions");
  assert.deepEqual(await client.call('RepositoryModelLoad', { model_name: 'simple' }), {});
  assert.equal(await grpcReady('simple'), true);
  assert.equal((await grpcInfer('simple')).model_version, '1');
  await rejects(
    client.call('RepositoryModelLoad', { model_name: 'wrong_model_name' }),
    grpc.status.INTERNAL,
    "failed to load 'wrong_model_name', failed to poll from model repository",
  );
  const readyIndex = await client.call<{ models: Record<string, string>[] }>('RepositoryIndex', { ready: true });
  assert.deepEqual(readyIndex.models, [{ name: 'simple', version: '1', state: 'READY', reason: '' }]);
  await unloadAll();
});

test('HTTP: unloading simple leaves simple_ensemble READY but failing; unload_dependents takes it along', async () => {
  // Loading the ensemble loads its composing model along.
  assert.equal((await post(server.url, '/v2/repository/models/simple_ensemble/load')).status, 200);
  assert.equal(await ready('simple'), true);
  assert.equal((await inferSimple(server.url, 'simple_ensemble')).status, 599, "the ensemble doubles: not simple's result");

  assert.equal((await post(server.url, '/v2/repository/models/simple/unload', { parameters: { unload_dependents: false } })).status, 200);
  await waitFor('simple unloaded', async () => !(await repoIndex(server.url, {}, true)).some((e) => e.name === 'simple'));
  assert.equal(await ready('simple_ensemble'), true);
  const failed = await inferSimple(server.url, 'simple_ensemble');
  assert.notEqual(failed.status, 200);
  assert.match(JSON.parse(failed.text).error, /^in ensemble 'simple_ensemble', Request for unknown model: 'simple' has no available versions/);

  assert.equal((await post(server.url, '/v2/repository/models/simple_ensemble/load')).status, 200);
  assert.equal(await ready('simple'), true);
  const unload = await post(server.url, '/v2/repository/models/simple/unload', { parameters: { unload_dependents: true } });
  assert.equal(unload.status, 200, unload.text);
  assert.equal(await ready('simple'), false);
  assert.equal(await ready('simple_ensemble'), false);
  await waitFor('both unloaded', async () => (await repoIndex(server.url)).filter((e) => e.reason === 'unloaded').length === 2);
});

test('gRPC: unload_dependents on an ensemble takes its composing model along; on simple, the ensemble', async () => {
  assert.deepEqual(await client.call('RepositoryModelLoad', { model_name: 'simple_ensemble' }), {});
  const res = await grpcInfer('simple_ensemble');
  assert.deepEqual(
    int32Values(res.raw_output_contents[0]),
    in0.map((v) => 2 * v),
  );
  await client.call('RepositoryModelUnload', { model_name: 'simple_ensemble', parameters: { unload_dependents: { bool_param: true } } });
  assert.equal(await grpcReady('simple_ensemble'), false);
  assert.equal(await grpcReady('simple'), false);

  assert.deepEqual(await client.call('RepositoryModelLoad', { model_name: 'simple_ensemble' }), {});
  await client.call('RepositoryModelUnload', { model_name: 'simple', parameters: { unload_dependents: { bool_param: true } } });
  assert.equal(await grpcReady('simple'), false);
  assert.equal(await grpcReady('simple_ensemble'), false);
  await rejects(grpcInfer('simple_ensemble'), grpc.status.NOT_FOUND, "Request for unknown model: 'simple_ensemble' has no available versions");
});

test('--model-load-retry-count: a failing version build is tried again, then fails with its reason', async () => {
  const load = await post(server.url, '/v2/repository/models/broken/load');
  assert.equal(load.status, 400);
  assert.match(JSON.parse(load.text).error, /^load failed for model 'broken': version 1 is at UNAVAILABLE state: /);
  const out = await waitForOutput(server, /retrying load of 'broken' version 1 \(2\)/);
  assert.equal(out.match(/retrying load of 'broken' version 1/g)?.length, 2);
  // Loads queue behind one thread, all finish.
  const answers = await Promise.all(['simple', 'simple_ensemble'].map((m) => post(server.url, `/v2/repository/models/${m}/load`)));
  assert.deepEqual(
    answers.map((a) => a.status),
    [200, 200],
  );
  assert.equal((await inferSimple(server.url)).status, 200);
});
