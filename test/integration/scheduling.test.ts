/**
 * Scheduling beyond the batcher, through the real server in one start over a
 * temporary repository (fixtures/scheduling_models plus example models):
 * priority levels and queue policies on a gated Python model (the gate holds
 * executions while the test fills the queue; the metrics pending-request
 * gauge tells the test what the server has admitted); ensembles (the example
 * simple_ensemble, a two-step Python chain and its failing step, a load that
 * fails Triton's mapping check); model_warmup (a good one runs before READY
 * and shows in the statistics, a failing one fails the load with its reason).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { infer, type InferResult } from '../../src/client/kserve-http-client';
import { MODEL_REPOSITORY, REPO_ROOT, startServer, untilPending } from './server-process';
import type { ServerProcess } from './server-process';

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures/scheduling_models');

let server: ServerProcess;
let repo: string;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-scheduling-'));
  for (const m of ['simple', 'simple_ensemble', 'add_vectors']) fs.cpSync(path.join(MODEL_REPOSITORY, m), path.join(repo, m), { recursive: true });
  for (const m of fs.readdirSync(FIXTURES)) fs.cpSync(path.join(FIXTURES, m), path.join(repo, m), { recursive: true });
  writeWarmupModels(repo);
  server = await startServer([
    `--model-repository=${repo}`,
    '--exit-on-error=false',
    '--allow-metrics=true',
    '--metrics-port=0',
    '--metrics-address=127.0.0.1',
  ]);
});

after(async () => {
  assert.equal(await server.stop(), 0);
  fs.rmSync(repo, { recursive: true, force: true });
});

function order(r: InferResult): number {
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return (r.json.outputs as { data: number[] }[])[0]!.data[0]!;
}

test('queue policy: a queue timeout, max_queue_size per level, and a high-priority request overtaking', async () => {
  const gate = path.join(repo, 'gated', 'closed');
  fs.writeFileSync(gate, '');
  const send = (parameters: Record<string, unknown> = {}): Promise<InferResult> =>
    infer(server.url, 'gated', [{ name: 'IN', datatype: 'INT32', shape: [1, 1], data: [0] }], { parameters });
  try {
    const busy = send();
    await untilPending(server, 'gated', 1); // running, held by the gate
    // One at a time: requests on different connections may reach the scheduler in any order.
    const low1 = send();
    await untilPending(server, 'gated', 2);
    const low2 = send({ priority: 0 });
    await untilPending(server, 'gated', 3);
    const timed = send({ timeout: 100_000 });
    const t = await timed;
    assert.equal(t.status, 503);
    assert.equal(t.json.error, 'Request timeout expired');
    const low3 = send({ priority: 9 }); // above the levels: the default (low) level
    await untilPending(server, 'gated', 4);
    const full = await send({ priority: 2 });
    assert.equal(full.status, 429);
    assert.match(
      full.json.error as string,
      /^\[request id: <id_unknown>\] Exceeds maximum queue size: model 'gated' queues at most 3 request\(s\) at priority level 2 \(its max_queue_size\); retry after 1 s, or raise max_queue_size$/,
    );
    assert.equal(full.headers.get('retry-after'), '1');
    const high = send({ priority: 1 }); // level 1 has no size limit
    await untilPending(server, 'gated', 5);
    fs.rmSync(gate);
    const orders = (await Promise.all([busy, high, low1, low2, low3])).map(order);
    assert.equal(orders[0], orders[1]! - 1, 'the high-priority request ran right after the one running');
    assert.deepEqual(orders.slice(2), [orders[1]! + 1, orders[1]! + 2, orders[1]! + 3], 'then the low ones in arrival order');
  } finally {
    fs.rmSync(gate, { force: true });
  }
});

const int16 = (name: string, data: number[]) => ({ name, datatype: 'INT32', shape: [1, 16], data });

test('ensemble: two steps of simple compose inside the server; statistics count the ensemble and its steps', async () => {
  const a = Array.from({ length: 16 }, (_, i) => i);
  const b = Array.from({ length: 16 }, () => 3);
  const before = await stats('simple');
  const r = await infer(server.url, 'simple_ensemble', [int16('INPUT0', a), int16('INPUT1', b)]);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const out = r.json.outputs as { name: string; data: number[] }[];
  assert.deepEqual(
    out.map((o) => o.name),
    ['OUTPUT0', 'OUTPUT1'],
  );
  assert.deepEqual(
    out[0]!.data,
    a.map((x) => 2 * x),
  );
  assert.deepEqual(
    out[1]!.data,
    b.map((x) => 2 * x),
  );
  const meta = (await (await fetch(`${server.url}/v2/models/simple_ensemble`)).json()) as Record<string, unknown>;
  assert.equal(meta.platform, 'ensemble');
  const ens = await stats('simple_ensemble');
  assert.equal(ens.inference_stats.success.count, 1);
  assert.equal((await stats('simple')).inference_stats.success.count - before.inference_stats.success.count, 2, 'each step ran on simple');
});

test("ensemble: a failing step fails the request with that step's message, prefixed with the ensemble as Triton does", async () => {
  const v = (name: string, data: number[]) => ({ name, datatype: 'FP32', shape: [data.length], data });
  const ok = await infer(server.url, 'vector_chain', [v('A', [1, 2]), v('B', [10, 20]), v('C', [100, 200])]);
  assert.equal(ok.status, 200, JSON.stringify(ok.json));
  assert.deepEqual((ok.json.outputs as { data: number[] }[])[0]!.data, [111, 222]);
  const bad = await infer(server.url, 'vector_chain', [v('A', [1, 2]), v('B', [10, 20]), v('C', [100])]);
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error, "in ensemble 'vector_chain', INPUT0 and INPUT1 must have the same shape, got [2] and [1]");
});

test("ensemble: a step mapped to a missing input fails the load with Triton's text", async () => {
  const index = (await (await fetch(`${server.url}/v2/repository/index`, { method: 'POST' })).json()) as { name: string; reason?: string }[];
  assert.equal(
    index.find((e) => e.name === 'bad_ensemble')?.reason,
    'Invalid argument: in ensemble bad_ensemble, ensemble tensor X is mapping to non-existing input INPUT9 in model simple',
  );
});

interface Stats {
  inference_stats: Record<string, { count: number; ns: number }>;
  execution_count: number;
  inference_count: number;
}
async function stats(model: string): Promise<Stats> {
  const j = (await (await fetch(`${server.url}/v2/models/${model}/stats`)).json()) as { model_stats: Stats[] };
  return j.model_stats[0]!;
}

/** Copies of `simple` with warmup samples: `warm_simple` (zeros, random, file data; 3 runs) and `warm_fail` (a wrong shape). */
function writeWarmupModels(root: string): void {
  const simple = fs.readFileSync(path.join(MODEL_REPOSITORY, 'simple', 'config.pbtxt'), 'utf8');
  const make = (name: string, warmup: string): void => {
    fs.cpSync(path.join(MODEL_REPOSITORY, 'simple'), path.join(root, name), { recursive: true });
    fs.writeFileSync(path.join(root, name, 'config.pbtxt'), simple.replace('name: "simple"', `name: "${name}"`) + warmup);
  };
  make(
    'warm_simple',
    `
model_warmup [
  {
    name: "mixed" batch_size: 2 count: 3
    inputs { key: "INPUT0" value: { data_type: TYPE_INT32 dims: [ 16 ] random_data: true } }
    inputs { key: "INPUT1" value: { data_type: TYPE_INT32 dims: [ 16 ] input_data_file: "ones.bin" } }
  },
  {
    name: "zeros"
    inputs { key: "INPUT0" value: { data_type: TYPE_INT32 dims: [ 16 ] zero_data: true } }
    inputs { key: "INPUT1" value: { data_type: TYPE_INT32 dims: [ 16 ] zero_data: true } }
  }
]
`,
  );
  fs.mkdirSync(path.join(root, 'warm_simple', 'warmup'));
  fs.writeFileSync(path.join(root, 'warm_simple', 'warmup', 'ones.bin'), Buffer.from(new Int32Array(16).fill(1).buffer));
  // Two Python instances that log each execution: warmup must reach both.
  const py = path.join(root, 'warm_python');
  fs.mkdirSync(path.join(py, '1'), { recursive: true });
  fs.writeFileSync(
    path.join(py, 'config.pbtxt'),
    `name: "warm_python"
backend: "python"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 2 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
model_warmup [ { name: "w" inputs { key: "IN" value: { data_type: TYPE_FP32 dims: [ 2 ] zero_data: true } } } ]
`,
  );
  fs.writeFileSync(
    path.join(py, '1', 'model.py'),
    `import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        self.instance = args["model_instance_name"]

    def execute(self, requests):
        pb_utils.Logger.log_info("warm_python executed on " + self.instance)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy())]) for r in requests]
`,
  );
  make(
    'warm_fail',
    `
model_warmup [ {
  name: "short"
  inputs { key: "INPUT0" value: { data_type: TYPE_INT32 dims: [ 15 ] zero_data: true } }
  inputs { key: "INPUT1" value: { data_type: TYPE_INT32 dims: [ 16 ] zero_data: true } }
} ]
`,
  );
}

test('model_warmup: samples run on every instance before READY, counted in neither statistics nor metrics; a failing sample fails the load with its reason', async () => {
  const warm = await stats('warm_simple');
  assert.equal(warm.execution_count, 0, 'warmup is not in the statistics');
  assert.equal(warm.inference_count, 0);
  assert.equal(warm.inference_stats.success.count, 0);
  const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  for (const model of ['warm_simple', 'warm_python']) {
    const m = new RegExp(`^nv_inference_count\\{model="${model}",version="1"\\} (\\d+)`, 'm').exec(metrics);
    assert.equal(m?.[1], '0', `nv_inference_count of ${model}`);
  }
  const ran = new Set([...server.output().matchAll(/warm_python executed on (\S+?)"/g)].map((m) => m[1]));
  assert.equal(ran.size, 2, `warmup ran on each of the two instances: ${[...ran].join(', ')}`);
  assert.equal((await stats('warm_python')).execution_count, 0);
  const index = (await (await fetch(`${server.url}/v2/repository/index`, { method: 'POST' })).json()) as { name: string; state?: string; reason?: string }[];
  const failed = index.find((e) => e.name === 'warm_fail');
  assert.equal(failed?.state, 'UNAVAILABLE');
  assert.equal(
    failed?.reason,
    "Invalid argument: failed to run warmup sample 'short': [request id: <id_unknown>] unexpected shape for input 'INPUT0' for model 'warm_fail'. " +
      'Expected [-1,16], got [1,15]. NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each ' +
      'input shape. If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. ' +
      'See the model configuration docs for more info on max_batch_size.',
  );
  assert.match(server.output(), /failed to load 'warm_fail' version 1: Invalid argument: failed to run warmup sample 'short'/);
});
