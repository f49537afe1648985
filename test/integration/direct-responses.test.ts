/**
 * Which responses take the direct path (instance thread → HTTP thread, not
 * through main), through the real server, read from
 * nodetron_dataplane_direct_responses_total: HTTP and gRPC requests to ONNX
 * models with the default or dynamic scheduler do, and so does a Python
 * model (from its host thread); a response-cache model and a
 * preserve_ordering batcher do not (main needs their outputs). Every answer is checked. Nothing is hosted
 * on the HTTP thread here (--inline-execution-max-us=0): those requests take
 * no ring at all (inline-execution.test.ts).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createClient, int32Bytes, int32Values, type GrpcTestClient } from './grpc-test-client';
import { inferSimple } from './repo-kit';
import { MODEL_REPOSITORY, directResponses, directResponsesReaching, startServer, type ServerProcess } from './server-process';

let server: ServerProcess;
let grpc: GrpcTestClient;
const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-direct-'));

/** A copy of `simple` under another name, with `extra` appended to its config. */
function simpleCopy(name: string, extra: string): void {
  const dir = path.join(repo, name);
  fs.cpSync(path.join(MODEL_REPOSITORY, 'simple'), dir, { recursive: true });
  const cfg = fs.readFileSync(path.join(dir, 'config.pbtxt'), 'utf8').replace('name: "simple"', `name: "${name}"`);
  fs.writeFileSync(path.join(dir, 'config.pbtxt'), `${cfg}\n${extra}\n`);
}

before(async () => {
  simpleCopy('simple', '');
  simpleCopy('simple_batched', 'dynamic_batching { }');
  simpleCopy('simple_ordered', 'dynamic_batching { preserve_ordering: true }');
  simpleCopy('simple_cached', 'response_cache { enable: true }');
  fs.cpSync(path.join(MODEL_REPOSITORY, 'add_vectors'), path.join(repo, 'add_vectors'), { recursive: true });
  server = await startServer([
    `--model-repository=${repo}`,
    '--cache-config=local,size=1048576',
    '--inline-execution-max-us=0',
    '--allow-metrics=true',
    '--metrics-port=0',
    '--allow-grpc=true',
    '--grpc-port=0',
  ]);
  grpc = createClient(server.grpcPort);
});

after(async () => {
  grpc?.close();
  assert.equal(await server.stop(), 0, server.output().slice(-3000));
  fs.rmSync(repo, { recursive: true, force: true });
});

/** `n` concurrent HTTP inferences on `model`, each answered correctly. */
async function httpInfers(model: string, n: number): Promise<void> {
  const answers = await Promise.all(Array.from({ length: n }, () => inferSimple(server.url, model)));
  for (const a of answers) assert.equal(a.status, 200, a.text);
}

const cases: { model: string; direct: boolean }[] = [
  { model: 'simple', direct: true },
  { model: 'simple_batched', direct: true },
  { model: 'simple_ordered', direct: false },
  { model: 'simple_cached', direct: false },
];

for (const c of cases) {
  test(`HTTP ${c.model}: ${c.direct ? 'straight from the instance thread' : 'through the main thread'}`, async () => {
    const before = await directResponses(server);
    await httpInfers(c.model, 12);
    if (!c.direct) await new Promise((r) => setTimeout(r, 200)); // as long as a direct one could take to be counted
    assert.equal((await directResponsesReaching(server, before + (c.direct ? 12 : 0))) - before, c.direct ? 12 : 0);
  });
}

test('HTTP to a Python model: straight from its host thread (python-direct-replies.test.ts has the rest)', async () => {
  const before = await directResponses(server);
  const body = JSON.stringify({
    inputs: [
      { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
      { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [10, 20, 30, 40] },
    ],
  });
  const res = await fetch(`${server.url}/v2/models/add_vectors/infer`, { method: 'POST', body });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.deepEqual((JSON.parse(text) as { outputs: { data: number[] }[] }).outputs[0]!.data, [11, 22, 33, 44]);
  assert.equal((await directResponsesReaching(server, before + 1)) - before, 1);
});

test('gRPC to simple: straight from the instance thread to the gRPC thread', async () => {
  const before = await directResponses(server);
  const a = Array.from({ length: 16 }, (_, i) => i);
  const b = Array(16).fill(2) as number[];
  const res = await grpc.call<{ raw_output_contents: Buffer[] }>('ModelInfer', {
    model_name: 'simple',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
    ],
    raw_input_contents: [int32Bytes(a), int32Bytes(b)],
  });
  assert.deepEqual(
    int32Values(res.raw_output_contents[0]!),
    a.map((v) => v + 2),
  );
  assert.equal((await directResponsesReaching(server, before + 1)) - before, 1);
});
