/**
 * Triton's decoupled test backends built in, through the real server and
 * real stubs: `backend: "repeat"` and `backend: "square"` models with no
 * model file, driven over a gRPC stream (ModelStreamInfer) as Triton's
 * simple_grpc_custom_repeat.py and decoupled examples drive them; a config
 * without the decoupled policy fails its load with a text that says so.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createClient, int32Bytes, int32Values, streamAll, type GrpcTestClient } from './grpc-test-client';
import { startServer, type ServerProcess } from './server-process';

let repo: string;
let server: ServerProcess;
let client: GrpcTestClient;

function model(name: string, config: string): void {
  fs.mkdirSync(path.join(repo, name, '1'), { recursive: true });
  fs.writeFileSync(path.join(repo, name, 'config.pbtxt'), `name: "${name}"\n${config}`);
}

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-decoupled-test-'));
  model(
    'repeat_int32',
    [
      'backend: "repeat"',
      'max_batch_size: 0',
      'input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] }, { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] }, { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] } ]',
      'output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] } ]',
      'model_transaction_policy { decoupled: true }',
    ].join('\n'),
  );
  model(
    'square_int32',
    [
      'backend: "square"',
      'max_batch_size: 0',
      'input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]',
      'output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]',
      'model_transaction_policy { decoupled: true }',
    ].join('\n'),
  );
  model(
    'square_coupled',
    [
      'backend: "square"',
      'max_batch_size: 0',
      'input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]',
      'output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]',
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

interface Reply {
  error_message: string;
  infer_response?: { id: string; outputs: { name: string }[]; raw_output_contents: Buffer[] };
}

const stream = (requests: object[]): Promise<Reply[]> => streamAll<Reply>(client, requests);

const uint32 = (xs: number[]): Buffer => Buffer.from(new Uint32Array(xs).buffer);
const output = (r: Reply, name: string): Buffer => r.infer_response!.raw_output_contents[r.infer_response!.outputs.findIndex((o) => o.name === name)]!;

test('repeat: one response per element of IN, OUT = IN[i] and IDX = i, in order', async () => {
  const values = [4, -2, 7, 0, 11];
  const replies = await stream([
    {
      model_name: 'repeat_int32',
      id: 'r1',
      inputs: [
        { name: 'IN', datatype: 'INT32', shape: [5] },
        { name: 'DELAY', datatype: 'UINT32', shape: [5] },
        { name: 'WAIT', datatype: 'UINT32', shape: [1] },
      ],
      raw_input_contents: [int32Bytes(values), uint32([5, 0, 10, 0, 5]), uint32([20])],
    },
  ]);
  assert.deepEqual(
    replies.filter((r) => r.error_message !== ''),
    [],
  );
  const data = replies.filter((r) => (r.infer_response?.outputs.length ?? 0) > 0);
  assert.deepEqual(
    data.map((r) => int32Values(output(r, 'OUT'))[0]),
    values,
  );
  assert.deepEqual(
    data.map((r) => output(r, 'IDX').readUInt32LE(0)),
    [0, 1, 2, 3, 4],
  );
  assert.ok(data.every((r) => r.infer_response!.id === 'r1'));
});

test('square: IN = n gives n responses of n, IN = 0 none', async () => {
  const ins = [3, 0, 2];
  const replies = await stream(
    ins.map((n) => ({
      model_name: 'square_int32',
      id: `sq${n}`,
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [1] }],
      raw_input_contents: [int32Bytes([n])],
    })),
  );
  assert.deepEqual(
    replies.filter((r) => r.error_message !== ''),
    [],
  );
  for (const n of ins) {
    const mine = replies.filter((r) => r.infer_response?.id === `sq${n}` && r.infer_response.outputs.length > 0);
    assert.equal(mine.length, n, `responses of IN=${n}`);
    for (const r of mine) assert.deepEqual(int32Values(output(r, 'OUT')), [n]);
  }
});

test('a square model without the decoupled policy fails its load and says what to add', async () => {
  const index = (await (await fetch(`${server.url}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as {
    name: string;
    state?: string;
    reason?: string;
  }[];
  const bad = index.find((m) => m.name === 'square_coupled');
  assert.equal(bad?.state, 'UNAVAILABLE');
  assert.match(
    bad?.reason ?? '',
    /the 'square' backend sends several responses per request, so it needs the decoupled transaction policy: add model_transaction_policy \{ decoupled: true \}/,
  );
});
