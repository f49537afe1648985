/**
 * Classification through ensembles, real server: an ensemble output with no
 * label_filename of its own is classified with the labels of the composing
 * model whose output it carries, two ensembles deep (as Triton:
 * `score:index:label`), over HTTP and gRPC; an ensemble output with a label
 * file of its own keeps it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createClient, type GrpcTestClient } from './grpc-test-client';
import { MODEL_REPOSITORY, startServer, type ServerProcess } from './server-process';

let repo: string;
let server: ServerProcess;
let client: GrpcTestClient;

const ensembleConfig = (name: string, step: string, inName: string, outName: string, stepIn: string, stepOut: string, labelFile?: string): string =>
  [
    `name: "${name}"`,
    'platform: "ensemble"',
    'max_batch_size: 8',
    `input [ { name: "${inName}" data_type: TYPE_FP32 dims: [ 64 ] } ]`,
    `output [ { name: "${outName}" data_type: TYPE_FP32 dims: [ 10 ]${labelFile === undefined ? '' : ` label_filename: "${labelFile}"`} } ]`,
    `ensemble_scheduling { step [ { model_name: "${step}" model_version: -1 input_map { key: "${stepIn}" value: "${inName}" } output_map { key: "${stepOut}" value: "${outName}" } } ] }`,
  ].join('\n');

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-ens-labels-'));
  const cls = path.join(repo, 'dense_classifier');
  fs.cpSync(path.join(MODEL_REPOSITORY, 'dense_classifier'), cls, { recursive: true });
  const config = fs.readFileSync(path.join(cls, 'config.pbtxt'), 'utf8').replace(/(name: "logits"[^}]*dims: \[ 10 \])/, '$1\n    label_filename: "labels.txt"');
  assert.match(config, /label_filename: "labels.txt"/);
  fs.writeFileSync(path.join(cls, 'config.pbtxt'), config);
  fs.writeFileSync(path.join(cls, 'labels.txt'), Array.from({ length: 10 }, (_, i) => `digit${i}`).join('\n'));
  for (const [name, cfg] of [
    ['inner', ensembleConfig('inner', 'dense_classifier', 'x', 'scores', 'input', 'logits')],
    ['outer', ensembleConfig('outer', 'inner', 'in', 'top', 'x', 'scores')],
    ['own', ensembleConfig('own', 'dense_classifier', 'x', 'scores', 'input', 'logits', 'mine.txt')],
  ] as const) {
    fs.mkdirSync(path.join(repo, name, '1'), { recursive: true });
    fs.writeFileSync(path.join(repo, name, 'config.pbtxt'), cfg);
  }
  fs.writeFileSync(path.join(repo, 'own', 'mine.txt'), Array.from({ length: 10 }, (_, i) => `mine${i}`).join('\n'));
  server = await startServer([`--model-repository=${repo}`, '--allow-grpc=true', '--grpc-port=0']);
  client = createClient(server.grpcPort);
});

after(async () => {
  client.close();
  assert.equal(await server.stop(), 0, server.output().slice(-3000));
  fs.rmSync(repo, { recursive: true, force: true });
});

const ROW = Array.from({ length: 64 }, (_, i) => Math.sin(i));

async function classifyHttp(model: string, input: string, output: string): Promise<string[]> {
  const res = await fetch(`${server.url}/v2/models/${model}/infer`, {
    method: 'POST',
    body: JSON.stringify({
      inputs: [{ name: input, datatype: 'FP32', shape: [1, 64], data: ROW }],
      outputs: [{ name: output, parameters: { classification: 3 } }],
    }),
  });
  const json = (await res.json()) as { outputs: { datatype: string; data: string[] }[]; error?: string };
  assert.equal(res.status, 200, JSON.stringify(json));
  assert.equal(json.outputs[0]!.datatype, 'BYTES');
  return json.outputs[0]!.data;
}

test("an ensemble output without labels of its own is classified with the composing model's, two levels deep (HTTP)", async () => {
  const direct = await classifyHttp('dense_classifier', 'input', 'logits');
  assert.equal(direct.length, 3);
  for (const s of direct) assert.match(s, /^-?[0-9.e-]+:[0-9]:digit[0-9]$/);
  assert.deepEqual(await classifyHttp('inner', 'x', 'scores'), direct);
  assert.deepEqual(await classifyHttp('outer', 'in', 'top'), direct);
});

test('an ensemble output with a label file of its own keeps it', async () => {
  const direct = await classifyHttp('dense_classifier', 'input', 'logits');
  assert.deepEqual(
    await classifyHttp('own', 'x', 'scores'),
    direct.map((s) => s.replace(/digit/, 'mine')),
  );
});

test('the same labels over gRPC', async () => {
  const direct = await classifyHttp('dense_classifier', 'input', 'logits');
  const res = await client.call<{ outputs: { datatype: string }[]; raw_output_contents: Buffer[] }>('ModelInfer', {
    model_name: 'outer',
    inputs: [{ name: 'in', datatype: 'FP32', shape: [1, 64], contents: { fp32_contents: ROW } }],
    outputs: [{ name: 'top', parameters: { classification: { int64_param: 3 } } }],
  });
  assert.equal(res.outputs[0]!.datatype, 'BYTES');
  // BYTES in raw_output_contents: each element a 4-byte little-endian length, then its bytes.
  const raw = res.raw_output_contents[0]!;
  const got: string[] = [];
  for (let at = 0; at < raw.length;) {
    const n = raw.readUInt32LE(at);
    got.push(raw.subarray(at + 4, at + 4 + n).toString());
    at += 4 + n;
  }
  assert.deepEqual(got, direct);
});
