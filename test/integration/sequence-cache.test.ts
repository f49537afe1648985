/**
 * Sequence batching and the response cache through the real server, in one
 * start over a temporary repository: a stateful Python model
 * (fixtures/sequence_models/running_sum) keeps a running sum per sequence
 * while several sequences interleave, with Triton's sequence errors (and
 * running_sum_oldest, the same model under the oldest strategy); and a
 * copy of `simple` with `response_cache { enable: true }` under
 * `--cache-config=local,size=...` answers a repeated request from the cache.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { infer, type InferResult } from '../../src/client/kserve-http-client';
import { MODEL_REPOSITORY, REPO_ROOT, startServer } from './server-process';
import type { ServerProcess } from './server-process';

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures/sequence_models');

let server: ServerProcess;
let repo: string;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-sequence-'));
  for (const m of fs.readdirSync(FIXTURES)) fs.cpSync(path.join(FIXTURES, m), path.join(repo, m), { recursive: true });
  const cached = path.join(repo, 'simple_cached');
  fs.cpSync(path.join(MODEL_REPOSITORY, 'simple'), cached, { recursive: true });
  const cfg = fs.readFileSync(path.join(cached, 'config.pbtxt'), 'utf8').replace('name: "simple"', 'name: "simple_cached"');
  fs.writeFileSync(path.join(cached, 'config.pbtxt'), `${cfg}\nresponse_cache { enable: true }\n`);
  server = await startServer([
    `--model-repository=${repo}`,
    '--cache-config=local,size=1048576',
    '--allow-metrics=true',
    '--metrics-port=0',
    '--metrics-address=127.0.0.1',
  ]);
});

after(async () => {
  assert.equal(await server.stop(), 0);
  fs.rmSync(repo, { recursive: true, force: true });
});

function step(id: number | string, value: number, flags: { start?: boolean; end?: boolean } = {}, batch = 1, model = 'running_sum'): Promise<InferResult> {
  const parameters: Record<string, unknown> = { sequence_id: id };
  if (flags.start === true) parameters.sequence_start = true;
  if (flags.end === true) parameters.sequence_end = true;
  return infer(server.url, model, [{ name: 'INPUT', datatype: 'INT32', shape: [batch, 1], data: new Array(batch).fill(value) }], { parameters });
}

function sumOf(r: InferResult): number {
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return (r.json.outputs as { name: string; data: number[] }[]).find((o) => o.name === 'OUTPUT')!.data[0]!;
}

async function stats(model: string): Promise<{ execution_count: number; inference_count: number; inference_stats: Record<string, { count: number }> }> {
  const body = (await (await fetch(`${server.url}/v2/models/${model}/stats`)).json()) as { model_stats: never[] };
  return body.model_stats[0]!;
}

test('interleaved sequences keep their own running sums (controls START/READY/CORRID reach the model)', async () => {
  const ids = [1001, 1002, 1003];
  const steps = 4;
  const expected = new Map(ids.map((id) => [id, 0]));
  for (let k = 0; k < steps; k++) {
    const results = await Promise.all(ids.map((id, n) => step(id, (n + 1) * 10 + k, { start: k === 0, end: k === steps - 1 })));
    results.forEach((r, n) => {
      const id = ids[n]!;
      expected.set(id, expected.get(id)! + (n + 1) * 10 + k);
      assert.equal(sumOf(r), expected.get(id), `sequence ${id} after step ${k}`);
    });
  }
  // A restarted sequence starts again from zero.
  assert.equal(sumOf(await step(1001, 5, { start: true })), 5);
  assert.equal(sumOf(await step(1001, 6, { end: true })), 11);
});

test('oldest strategy: 4 candidate sequences interleave on one instance, at most max_batch_size (2) per execution', async () => {
  const ids = [2001, 2002, 2003, 2004];
  const steps = 3;
  const expected = new Map(ids.map((id) => [id, 0]));
  for (let k = 0; k < steps; k++) {
    const results = await Promise.all(ids.map((id, n) => step(id, (n + 1) * 100 + k, { start: k === 0, end: k === steps - 1 }, 1, 'running_sum_oldest')));
    results.forEach((r, n) => {
      const id = ids[n]!;
      expected.set(id, expected.get(id)! + (n + 1) * 100 + k);
      assert.equal(sumOf(r), expected.get(id), `sequence ${id} after step ${k}`);
      const batch = (r.json.outputs as { name: string; data: number[] }[]).find((o) => o.name === 'BATCH')!.data[0]!;
      assert.ok(batch >= 1 && batch <= 2, `execution of ${batch} requests`);
    });
  }
  const s = await stats('running_sum_oldest');
  assert.equal(s.inference_count, ids.length * steps);
  assert.ok(s.execution_count >= (ids.length * steps) / 2, `${s.execution_count} executions for ${ids.length * steps} requests`);
});

test("sequence errors: missing START, batch size above 1, a string id for a UINT64 CORRID (Triton's texts)", async () => {
  const noStart = await step(4242, 1);
  assert.equal(noStart.status, 400);
  assert.equal(
    noStart.json.error,
    "inference request for sequence 4242 to model 'running_sum' must specify the START flag on the first request of the sequence",
  );
  const ended = await step(1001, 1); // ended in the test before
  assert.equal(ended.status, 400);
  const batched = await step(77, 1, { start: true }, 2);
  assert.equal(batched.status, 400);
  assert.equal(batched.json.error, "inference request to model 'running_sum' must specify batch-size 1 due to requirements of sequence batcher");
  const stringId = await step('abc', 1, { start: true });
  assert.equal(stringId.status, 400);
  assert.equal(
    stringId.json.error,
    "[request id: <id_unknown>] sequence batching control 'CORRID' data-type is 'BYTES', but model 'running_sum' expects 'UINT64'",
  );
});

test('response cache: a repeated request is a hit that does not execute', async () => {
  const a = Array.from({ length: 16 }, (_, i) => i);
  const b = Array.from({ length: 16 }, () => 2);
  const send = (): Promise<InferResult> =>
    infer(server.url, 'simple_cached', [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: a },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: b },
    ]);
  const first = await send();
  assert.equal(first.status, 200, JSON.stringify(first.json));
  const second = await send();
  assert.equal(second.status, 200, JSON.stringify(second.json));
  assert.deepEqual(second.json.outputs, first.json.outputs);
  const s = await stats('simple_cached');
  assert.equal(s.execution_count, 1, 'the hit did not execute');
  assert.equal(s.inference_count, 1);
  assert.equal(s.inference_stats.cache_hit!.count, 1);
  assert.equal(s.inference_stats.cache_miss!.count, 1);
  assert.equal(s.inference_stats.success!.count, 2);
  assert.equal(s.inference_stats.queue!.count, 2);
  assert.equal(s.inference_stats.compute_infer!.count, 1);
  const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  assert.match(metrics, /^nv_cache_num_hits_per_model\{model="simple_cached",version="1"\} 1$/m);
  assert.match(metrics, /^nv_cache_num_misses_per_model\{model="simple_cached",version="1"\} 1$/m);
  assert.match(metrics, /^nv_inference_exec_count\{model="simple_cached",version="1"\} 1$/m);
  assert.doesNotMatch(metrics, /nv_cache_num_hits_per_model\{model="running_sum"/, 'no cache series for a model without the cache');
});

// Implicit state (sequence_batching.state): fixtures state_acc (initial state
// from initial_state/hundred.bin = 100) and state_zero (zero_data).
function stateStep(model: string, id: number, value: number, flags: { start?: boolean; end?: boolean } = {}, outputs?: string[]): Promise<InferResult> {
  const parameters: Record<string, unknown> = { sequence_id: id };
  if (flags.start === true) parameters.sequence_start = true;
  if (flags.end === true) parameters.sequence_end = true;
  const body: { parameters: Record<string, unknown>; outputs?: { name: string }[] } = { parameters };
  if (outputs !== undefined) body.outputs = outputs.map((name) => ({ name }));
  return infer(server.url, model, [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: [value] }], body);
}

function outputNames(r: InferResult): string[] {
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return (r.json.outputs as { name: string }[]).map((o) => o.name).sort();
}

test('implicit state: STATE_OUT of each step comes back as STATE_IN; START resets to the initial state; the state output stays hidden', async () => {
  for (const [model, initial] of [
    ['state_zero', 0],
    ['state_acc', 100],
  ] as const) {
    const a = [1, 2, 3];
    const b = [10, 20, 30];
    let sa = initial;
    let sb = initial;
    for (let k = 0; k < a.length; k++) {
      const flags = { start: k === 0, end: k === a.length - 1 };
      const [ra, rb] = await Promise.all([stateStep(model, 501, a[k]!, flags), stateStep(model, 502, b[k]!, flags)]);
      sa += a[k]!;
      sb += b[k]!;
      assert.equal(sumOf(ra!), sa, `${model} sequence 501 step ${k}`);
      assert.equal(sumOf(rb!), sb, `${model} sequence 502 step ${k}`);
      assert.deepEqual(outputNames(ra!), ['OUTPUT']);
    }
    // A new sequence with the same id starts from the initial state again.
    const r = await stateStep(model, 501, 7, { start: true }, ['OUTPUT']);
    assert.deepEqual(outputNames(r), ['OUTPUT']);
    assert.equal(sumOf(r), initial + 7);
    assert.equal(sumOf(await stateStep(model, 501, 1, { end: true })), initial + 8);
  }
});
