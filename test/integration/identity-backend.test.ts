/**
 * Triton's identity test backend through the real server, driven over HTTP
 * and gRPC: outputs are copies of the inputs (FP32 with dynamic batching,
 * BYTES, a requested subset), each response carries the backend's example
 * parameters, execute_delay_ms delays the execution, a requested output
 * whose input the request left out (an optional input) fails with Triton's
 * text, and a config the backend refuses fails its load with Triton's text.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createClient, type GrpcTestClient } from './grpc-test-client';
import { startServer, type ServerProcess } from './server-process';

let repo: string;
let server: ServerProcess;
let client: GrpcTestClient;

function model(name: string, config: string): void {
  fs.mkdirSync(path.join(repo, name, '1'), { recursive: true });
  fs.writeFileSync(path.join(repo, name, 'config.pbtxt'), `name: "${name}"\nbackend: "identity"\n${config}`);
}

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-identity-'));
  model(
    'identity_fp32',
    [
      'max_batch_size: 8',
      'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]',
      'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]',
      'dynamic_batching { }',
      'instance_group [ { kind: KIND_CPU count: 2 } ]',
    ].join('\n'),
  );
  model(
    'identity_pair',
    [
      'max_batch_size: 0',
      'input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ 2 ] }, { name: "INPUT1" data_type: TYPE_INT32 dims: [ 3 ] optional: true } ]',
      'output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 2 ] }, { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 3 ] } ]',
    ].join('\n'),
  );
  model(
    'identity_slow',
    [
      'max_batch_size: 0',
      'input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]',
      'output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]',
      'parameters [ { key: "execute_delay_ms" value: { string_value: "300" } } ]',
    ].join('\n'),
  );
  model(
    'identity_bad',
    [
      'max_batch_size: 0',
      'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]',
      'output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 4 ] } ]',
    ].join('\n'),
  );
  server = await startServer([`--model-repository=${repo}`, '--exit-on-error=false', '--strict-readiness=false', '--allow-grpc=true', '--grpc-port=0']);
  client = createClient(server.grpcPort);
});

after(async () => {
  client.close();
  assert.equal(await server.stop(), 0, server.output().slice(-2000));
  fs.rmSync(repo, { recursive: true, force: true });
});

async function infer(name: string, body: object): Promise<{ status: number; json: any }> {
  const res = await fetch(`${server.url}/v2/models/${name}/infer`, { method: 'POST', body: JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
}

test("FP32 rows come back as sent, under concurrency (dynamic batching, 2 instances), with the backend's parameters", async () => {
  const answers = await Promise.all(
    Array.from({ length: 40 }, async (_, k) => {
      const data = Array.from({ length: 1 + (k % 5) }, (_, i) => k + i / 4);
      const r = await infer('identity_fp32', { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, data.length], data }] });
      return { k, data, r };
    }),
  );
  for (const { data, r } of answers) {
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.deepEqual(r.json.outputs, [{ name: 'OUTPUT0', datatype: 'FP32', shape: [1, data.length], data }]);
    assert.deepEqual(r.json.parameters, { param0: 'an example string parameter', param1: 42, param2: false });
  }
});

test('BYTES come back as sent; a request for OUTPUT1 alone gets OUTPUT1 alone', async () => {
  const both = await infer('identity_pair', {
    inputs: [
      { name: 'INPUT0', datatype: 'BYTES', shape: [2], data: ['héllo', ''] },
      { name: 'INPUT1', datatype: 'INT32', shape: [3], data: [1, -2, 3] },
    ],
  });
  assert.equal(both.status, 200, JSON.stringify(both.json));
  assert.deepEqual(
    both.json.outputs.map((o: { name: string; data: unknown[] }) => [o.name, o.data]),
    [
      ['OUTPUT0', ['héllo', '']],
      ['OUTPUT1', [1, -2, 3]],
    ],
  );
  const one = await infer('identity_pair', {
    inputs: [
      { name: 'INPUT0', datatype: 'BYTES', shape: [2], data: ['a', 'b'] },
      { name: 'INPUT1', datatype: 'INT32', shape: [3], data: [7, 8, 9] },
    ],
    outputs: [{ name: 'OUTPUT1' }],
  });
  assert.deepEqual(one.json.outputs, [{ name: 'OUTPUT1', datatype: 'INT32', shape: [3], data: [7, 8, 9] }]);
});

test("a requested output whose (optional) input the request left out fails with Triton's text", async () => {
  const r = await infer('identity_pair', { inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [2], data: ['a', 'b'] }] });
  assert.notEqual(r.status, 200);
  assert.match(r.json.error, /failed to get input 'INPUT1'/);
});

test('execute_delay_ms holds each execution that long; gRPC gets the same copy', async () => {
  const t0 = performance.now();
  const res = await client.call<{ raw_output_contents: Buffer[]; outputs: { name: string; shape: string[] }[] }>('ModelInfer', {
    model_name: 'identity_slow',
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1], contents: { int_contents: [12345] } }],
  });
  const ms = performance.now() - t0;
  assert.ok(ms >= 290, `took ${ms.toFixed(0)} ms`);
  assert.equal(res.outputs[0]!.name, 'OUTPUT0');
  assert.equal(res.raw_output_contents[0]!.readInt32LE(0), 12345);
});

test("a config the backend refuses fails its load with Triton's text", async () => {
  const res = await fetch(`${server.url}/v2/repository/index`, { method: 'POST', body: '{}' });
  const index = (await res.json()) as { name: string; state?: string; reason?: string }[];
  const bad = index.find((m) => m.name === 'identity_bad');
  assert.equal(bad?.state, 'UNAVAILABLE');
  assert.match(bad?.reason ?? '', /expected input and output datatype to match, got TYPE_FP32 and TYPE_INT32/);
});
