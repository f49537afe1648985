/**
 * The direct reply path for Python instances, through the real server and
 * real stubs: a response of a Python model goes from the instance's host
 * thread (`nt:py-<instance>`) straight to the HTTP or gRPC thread of the
 * request's connection, not through main (counted by
 * nodetron_dataplane_direct_responses_total). A decoupled model's responses
 * keep going through main, so its final response never overtakes the ones
 * before it. A stub killed mid-traffic answers each request once, and the
 * host thread that replaces it has reply rings of its own again.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { createClient, int32Bytes, int32Values, streamAll, type GrpcTestClient } from './grpc-test-client';
import { REPO_ROOT, directResponses, directResponsesReaching, startServer, waitForOutput, type ServerProcess } from './server-process';

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures/python_models');

let repo: string;
let server: ServerProcess;
let client: GrpcTestClient;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-py-direct-'));
  for (const m of ['crash', 'square']) fs.cpSync(path.join(FIXTURES, m), path.join(repo, m), { recursive: true });
  server = await startServer([`--model-repository=${repo}`, '--allow-metrics=true', '--metrics-port=0', '--allow-grpc=true', '--grpc-port=0']);
  client = createClient(server.grpcPort);
});

after(async () => {
  client.close();
  assert.equal(await server.stop(), 0, server.output().slice(-3000));
  fs.rmSync(repo, { recursive: true, force: true });
});

/** crash echoes INPUT0 (FP32) unless it starts with 1, which kills its stub. */
const echo = (values: number[]) => infer(server.url, 'crash', [{ name: 'INPUT0', datatype: 'FP32', shape: [values.length], data: values }]);
const echoed = (r: Awaited<ReturnType<typeof echo>>): number[] => (r.json as { outputs: { data: number[] }[] }).outputs[0]!.data;

test('HTTP responses of a Python model go from its host thread straight to the HTTP thread, right and once each', async () => {
  const before = await directResponses(server);
  const n = 100;
  const results = await Promise.all(Array.from({ length: n }, (_, k) => echo([k + 2, k + 3, 0.5])));
  for (const [k, r] of results.entries()) {
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.deepEqual(echoed(r), [k + 2, k + 3, 0.5]);
  }
  assert.equal((await directResponsesReaching(server, before + n)) - before, n, 'every response went directly');
});

test('gRPC responses of a Python model go straight to the gRPC thread', async () => {
  const before = await directResponses(server);
  for (let k = 0; k < 20; k++) {
    const input = Buffer.from(new Float32Array([k + 2, -k]).buffer);
    const res = await client.call<{ raw_output_contents: Buffer[] }>('ModelInfer', {
      model_name: 'crash',
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2] }],
      raw_input_contents: [input],
    });
    assert.deepEqual([...new Float32Array(new Uint8Array(res.raw_output_contents[0]!).slice().buffer)], [k + 2, -k]);
  }
  assert.equal((await directResponsesReaching(server, before + 20)) - before, 20);
});

interface StreamReply {
  error_message: string;
  infer_response?: { id: string; outputs: { name: string }[]; raw_output_contents: Buffer[] };
}

test('a decoupled Python model answers through main: all its responses, none directly', async () => {
  const before = await directResponses(server);
  const replies = await streamAll<StreamReply>(
    client,
    [3, 2].map((n) => ({ model_name: 'square', id: `sq${n}`, inputs: [{ name: 'IN', datatype: 'INT32', shape: [1] }], raw_input_contents: [int32Bytes([n])] })),
  );
  assert.deepEqual(
    replies.filter((r) => r.error_message !== ''),
    [],
  );
  for (const n of [3, 2]) {
    const mine = replies.filter((r) => r.infer_response?.id === `sq${n}`);
    const data = mine.filter((r) => r.infer_response!.outputs.length > 0);
    assert.equal(data.length, n, `responses of IN=${n}`);
    for (const r of data) assert.deepEqual(int32Values(r.infer_response!.raw_output_contents[0]!), [n]);
  }
  // Given the same time a direct response would need to be counted.
  await new Promise((r) => setTimeout(r, 200));
  assert.equal((await directResponses(server)) - before, 0, 'no response of a decoupled model goes directly');
});

test('a stub killed with requests in flight answers each once; its replacement replies directly again', async () => {
  const fine = Array.from({ length: 20 }, (_, k) => echo([k + 2]));
  const killer = echo([1, 0]);
  const results = await Promise.all([...fine, killer]);
  const killed = results[results.length - 1]!;
  assert.equal(killed.status, 500, JSON.stringify(killed.json));
  assert.match(JSON.stringify(killed.json), /Stub process 'crash_0' is not healthy\./);
  for (const [k, r] of results.slice(0, -1).entries()) {
    // Each is answered once: with its echo, or (in the batch the stub died in, or behind it) with the stub's death.
    if (r.status === 200) assert.deepEqual(echoed(r), [k + 2]);
    else assert.match(JSON.stringify(r.json), /Stub process 'crash_0' is not healthy\./);
  }
  await waitForOutput(server, /instance crash_0 of model 'crash' restarted/, 60_000);
  const before = await directResponses(server);
  const again = await echo([7, 8]);
  assert.equal(again.status, 200, JSON.stringify(again.json));
  assert.deepEqual(echoed(again), [7, 8]);
  assert.equal((await directResponsesReaching(server, before + 1)) - before, 1, 'the new host thread has its own reply rings');
});
