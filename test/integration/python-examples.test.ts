/**
 * Our equivalents of Triton's python_backend examples, in one server start
 * (HTTP, gRPC, metrics; explicit model control with every model loaded):
 * add_sub, auto_complete (config from auto_complete_config), the decoupled
 * square and repeat over a gRPC stream, sync BLS into add_sub and into the
 * ONNX "simple", BLS into the decoupled square, custom metrics on /metrics
 * (gone after the model unloads), and EXECUTION_ENV_PATH with a venv, as a
 * directory and as a .tar.gz (skipped with a message when no venv can be
 * made).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { createClient, int32Bytes, int32Values, streamAll } from './grpc-test-client';
import type { GrpcTestClient } from './grpc-test-client';
import { MODEL_REPOSITORY, REPO_ROOT, startServer } from './server-process';
import type { ServerProcess } from './server-process';
import { makeNumpyVenv } from './venv-kit';
import { recordSkip } from './needs';

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures/python_models');
const MODELS = ['add_sub', 'auto_complete', 'square', 'repeat', 'bls', 'bls_decoupled', 'custom_metrics'];

let server: ServerProcess;
let client: GrpcTestClient;
let tmp: string;
/** Why the EXECUTION_ENV_PATH tests are skipped ('' when they run). */
let noVenv = '';

/** A model printing where its interpreter lives, running in the environment `envPath`. */
function envModel(repo: string, name: string, envPath: string): void {
  fs.mkdirSync(path.join(repo, name, '1'), { recursive: true });
  fs.writeFileSync(
    path.join(repo, name, 'config.pbtxt'),
    [
      'backend: "python"',
      'input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]',
      'output [ { name: "PREFIX" data_type: TYPE_STRING dims: [ 1 ] }, { name: "VENV" data_type: TYPE_STRING dims: [ 1 ] } ]',
      `parameters { key: "EXECUTION_ENV_PATH" value: { string_value: ${JSON.stringify(envPath)} } }`,
    ].join('\n'),
  );
  fs.writeFileSync(
    path.join(repo, name, '1', 'model.py'),
    [
      'import os, sys',
      'import numpy as np',
      'import triton_python_backend_utils as pb_utils',
      'class TritonPythonModel:',
      '    def execute(self, requests):',
      '        return [pb_utils.InferenceResponse([',
      '            pb_utils.Tensor("PREFIX", np.array([sys.prefix.encode()], dtype=np.object_)),',
      '            pb_utils.Tensor("VENV", np.array([os.environ.get("VIRTUAL_ENV", "").encode()], dtype=np.object_))])',
      '            for _ in requests]',
    ].join('\n'),
  );
}

function makeVenvs(repo: string): void {
  const venv = path.join(tmp, 'venv');
  try {
    makeNumpyVenv(venv); // its marker makes each archive's content (so its cache folder) new to this run
    execFileSync('tar', ['-czf', path.join(tmp, 'venv.tar.gz'), '-C', venv, '.'], { stdio: 'pipe', timeout: 60_000 });
  } catch (err) {
    noVenv = recordSkip(`python3 -m venv failed: ${(err as Error).message.split('\n')[0]} (apt-get install python3-venv)`);
    return;
  }
  envModel(repo, 'env_dir', venv);
  // EXECUTION_ENV_PATH wins over requirements.txt: built, this one would fail the load.
  fs.writeFileSync(path.join(repo, 'env_dir', 'requirements.txt'), 'nodetron-no-such-package==0\n');
  envModel(repo, 'env_tar', path.join(tmp, 'venv.tar.gz'));
}

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-pyexamples-'));
  const repo = path.join(tmp, 'models');
  fs.mkdirSync(repo);
  fs.cpSync(path.join(MODEL_REPOSITORY, 'simple'), path.join(repo, 'simple'), { recursive: true });
  for (const m of MODELS) fs.cpSync(path.join(FIXTURES, m), path.join(repo, m), { recursive: true });
  makeVenvs(repo);
  server = await startServer(
    [
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=*',
      '--allow-metrics=true',
      '--metrics-port=0',
      '--allow-grpc=true',
      '--grpc-port=0',
    ],
    120_000,
  );
  client = createClient(server.grpcPort);
});

after(async () => {
  client?.close();
  if (server) assert.equal(await server.stop(), 0);
  fs.rmSync(tmp, { recursive: true, force: true });
});

const fp32 = (name: string, data: number[]) => ({ name, datatype: 'FP32', shape: [data.length], data });
const outputs = (json: Record<string, unknown>): Record<string, unknown[]> =>
  Object.fromEntries((json.outputs as { name: string; data: unknown[] }[]).map((o) => [o.name, o.data]));
const A = [1, 2, 3, 4];
const B = [10, 0.5, -3, 4];
const SUM = A.map((a, i) => a + B[i]!);
const DIFF = A.map((a, i) => a - B[i]!);

test('add_sub: OUTPUT0 is the sum, OUTPUT1 the difference', async () => {
  const r = await infer(server.url, 'add_sub', [fp32('INPUT0', A), fp32('INPUT1', B)], { id: '1' });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.equal(r.json.id, '1');
  assert.deepEqual(outputs(r.json), { OUTPUT0: SUM, OUTPUT1: DIFF });
});

test('auto_complete: the config comes from auto_complete_config, and the model serves', async () => {
  const res = await fetch(`${server.url}/v2/models/auto_complete/config`);
  const cfg = (await res.json()) as Record<string, any>;
  assert.equal(cfg.max_batch_size, 4);
  assert.ok(cfg.dynamic_batching, 'set_dynamic_batching() took effect');
  assert.deepEqual(
    cfg.input.map((i: any) => [i.name, i.data_type, i.dims]),
    [
      ['INPUT0', 'TYPE_FP32', [4]],
      ['INPUT1', 'TYPE_FP32', [4]],
    ],
  );
  assert.deepEqual(
    cfg.output.map((o: any) => [o.name, o.data_type, o.dims]),
    [
      ['OUTPUT0', 'TYPE_FP32', [4]],
      ['OUTPUT1', 'TYPE_FP32', [4]],
    ],
  );
  const batch = (d: number[]) => ({ name: '', datatype: 'FP32', shape: [1, 4], data: d });
  const r = await infer(server.url, 'auto_complete', [
    { ...batch(A), name: 'INPUT0' },
    { ...batch(B), name: 'INPUT1' },
  ]);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.deepEqual(outputs(r.json), { OUTPUT0: SUM, OUTPUT1: DIFF });
});

type StreamReply = {
  error_message: string;
  infer_response?: { id: string; outputs: { name: string }[]; raw_output_contents: Buffer[]; parameters?: Record<string, { bool_param?: boolean }> };
};

/** Send requests on one ModelStreamInfer stream, half-close, collect every reply. */
const stream = (requests: object[]): Promise<StreamReply[]> => streamAll<StreamReply>(client, requests);

const dataReplies = (replies: StreamReply[]) => replies.filter((r) => (r.infer_response?.outputs.length ?? 0) > 0);
const raw = (r: StreamReply, name: string): Buffer => {
  const i = r.infer_response!.outputs.findIndex((o) => o.name === name);
  return r.infer_response!.raw_output_contents[i]!;
};

test('square (decoupled, gRPC stream): IN = N gives N responses of N, none for IN = 0', async () => {
  const ins = [4, 2, 0, 1];
  const replies = await stream(
    ins.map((n) => ({
      model_name: 'square',
      id: `sq${n}`,
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [1] }],
      raw_input_contents: [int32Bytes([n])],
    })),
  );
  assert.deepEqual(
    replies.filter((r) => r.error_message !== ''),
    [],
  );
  const data = dataReplies(replies);
  assert.equal(data.length, 7);
  for (const n of ins) {
    const mine = data.filter((r) => r.infer_response!.id === `sq${n}`);
    assert.equal(mine.length, n, `responses for IN=${n}`);
    for (const r of mine) assert.deepEqual(int32Values(raw(r, 'OUT')), [n]);
  }
  // response_stats (decoupled): every response of every request by its index, the
  // flags-only FINALs as empty ones, also IN=0's, whose only response is its final one.
  const stats = (await (await fetch(`${server.url}/v2/models/square/stats`)).json()) as {
    model_stats: { response_stats: Record<string, Record<string, { count: number; ns: number }>> }[];
  };
  const rs = stats.model_stats[0].response_stats;
  assert.equal(rs['0'].success.count, 3, 'first responses of IN=4, 2 and 1');
  assert.equal(
    Object.values(rs).reduce((n, r) => n + r.success.count, 0),
    7,
    'every data response counted once',
  );
  for (const r of Object.values(rs)) assert.deepEqual(Object.keys(r), ['compute_infer', 'compute_output', 'success', 'fail', 'empty_response', 'cancel']);
  const empty = Object.fromEntries(Object.entries(rs).map(([i, r]) => [i, r.empty_response.count]));
  assert.deepEqual(empty, { 0: 1, 1: 1, 2: 1, 3: 0, 4: 1 }, 'the FINALs of IN=0, 1, 2 and 4, at the index after their data responses');
  for (const [i, r] of Object.entries(rs)) {
    assert.equal(r.compute_infer.count, r.success.count + r.fail.count + r.empty_response.count, `index ${i}: each response in compute_infer`);
    assert.equal(r.compute_output.count, r.success.count + r.fail.count, `index ${i}: empty responses not in compute_output`);
  }
});

test('repeat (decoupled, gRPC stream): one response per IN element, IDX in order', async () => {
  const replies = await stream([
    {
      model_name: 'repeat',
      id: 'rep',
      inputs: [
        { name: 'IN', datatype: 'INT32', shape: [4] },
        { name: 'DELAY', datatype: 'UINT32', shape: [4] },
        { name: 'WAIT', datatype: 'UINT32', shape: [1] },
      ],
      raw_input_contents: [int32Bytes([4, 2, 0, 1]), int32Bytes([1, 2, 3, 4]), int32Bytes([5])],
    },
  ]);
  assert.deepEqual(
    replies.filter((r) => r.error_message !== ''),
    [],
  );
  const data = dataReplies(replies);
  assert.deepEqual(
    data.map((r) => int32Values(raw(r, 'OUT'))[0]),
    [4, 2, 0, 1],
  );
  assert.deepEqual(
    data.map((r) => int32Values(raw(r, 'IDX'))[0]),
    [0, 1, 2, 3],
  );
});

test('bls: sync BLS into add_sub (Python) and simple (ONNX); an unknown model is an error', async () => {
  const name = (n: string) => ({ name: 'MODEL_NAME', datatype: 'BYTES', shape: [1], data: [n] });
  const py = await infer(server.url, 'bls', [name('add_sub'), fp32('INPUT0', A), fp32('INPUT1', B)]);
  assert.equal(py.status, 200, JSON.stringify(py.json));
  assert.deepEqual(outputs(py.json), { OUTPUT0: SUM, OUTPUT1: DIFF });
  const ints = [5, -6, 7, 8];
  const onnx = await infer(server.url, 'bls', [name('simple'), fp32('INPUT0', ints), fp32('INPUT1', [1, 1, 1, 1])]);
  assert.equal(onnx.status, 200, JSON.stringify(onnx.json));
  assert.deepEqual(outputs(onnx.json), { OUTPUT0: ints.map((v) => v + 1), OUTPUT1: ints.map((v) => v - 1) });
  const bad = await infer(server.url, 'bls', [name('undefined_model'), fp32('INPUT0', A), fp32('INPUT1', B)]);
  assert.equal(bad.status, 500);
  assert.match(String(bad.json.error), /undefined_model/);
});

test('bls_decoupled: BLS into the decoupled square sums to IN squared', async () => {
  for (const n of [4, 2, 0, 1]) {
    const r = await infer(server.url, 'bls_decoupled', [{ name: 'IN', datatype: 'INT32', shape: [1], data: [n] }]);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.deepEqual(outputs(r.json)['SUM'], [n * n]);
  }
});

async function metricsText(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`);
  assert.equal(res.status, 200);
  return res.text();
}

test('custom_metrics: the model answers and its families appear on /metrics, and leave with the model', async () => {
  for (let i = 0; i < 6; i++) {
    const r = await infer(server.url, 'custom_metrics', [fp32('INPUT0', A), fp32('INPUT1', B)]);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.deepEqual(outputs(r.json), { OUTPUT0: SUM, OUTPUT1: DIFF });
  }
  const text = await metricsText();
  assert.match(text, /^# HELP requests_process_latency_ns Cumulative time spent processing requests$/m);
  assert.match(text, /^# TYPE requests_process_latency_ns counter$/m);
  const m = /^requests_process_latency_ns\{model="custom_metrics",version="1"\} (\d+(\.\d+)?(e\+\d+)?)$/m.exec(text);
  assert.ok(m, text);
  assert.ok(Number(m[1]) > 0);
  assert.match(text, /^# TYPE custom_metrics_input0_sum gauge$/m);
  assert.match(text, /^custom_metrics_input0_sum\{instance="custom_metrics_0_\d",model="custom_metrics",version="1"\} 10$/m);
  assert.match(text, /^custom_metrics_input0_sum_hist_count\{model="custom_metrics",version="1"\} 6$/m);
  assert.match(text, /^custom_metrics_input0_sum_hist_sum\{model="custom_metrics",version="1"\} 60$/m);
  assert.match(text, /^custom_metrics_input0_sum_hist_bucket\{model="custom_metrics",version="1",le="10"\} 6$/m);
  assert.match(text, /^custom_metrics_input0_sum_hist_bucket\{model="custom_metrics",version="1",le="\+Inf"\} 6$/m);
  assert.doesNotMatch(text, /custom_metrics_selfcheck/, 'families deleted in Python (the self-check in initialize) are gone');

  const unload = await fetch(`${server.url}/v2/repository/models/custom_metrics/unload`, { method: 'POST', body: '{}' });
  assert.equal(unload.status, 200, await unload.text());
  // The stubs finalize and exit after the unload answers: their families leave then.
  const gone = /requests_process_latency_ns|custom_metrics_input0_sum/;
  let afterUnload = await metricsText();
  for (let i = 0; i < 100 && gone.test(afterUnload); i++) {
    await new Promise((r) => setTimeout(r, 100));
    afterUnload = await metricsText();
  }
  assert.doesNotMatch(afterUnload, gone);
});

test('EXECUTION_ENV_PATH: the stub runs in a venv, unpacked or from a .tar.gz; a requirements.txt beside it is not built', async (t) => {
  if (noVenv !== '') {
    t.skip(noVenv);
    return;
  }
  const ask = async (model: string): Promise<Record<string, unknown[]>> => {
    const r = await infer(server.url, model, [{ name: 'IN', datatype: 'INT32', shape: [1], data: [0] }]);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    return outputs(r.json);
  };
  const dir = await ask('env_dir');
  const venv = fs.realpathSync(path.join(tmp, 'venv'));
  assert.equal(fs.realpathSync(String(dir['PREFIX']![0])), venv);
  assert.equal(dir['VENV']![0], path.join(tmp, 'venv'));
  assert.match(server.output(), /env_dir\/requirements\.txt is not built: the model's EXECUTION_ENV_PATH '[^']*' is its environment/);
  const packed = await ask('env_tar');
  const cacheRoot = path.join(os.tmpdir(), 'nodetron_python_env');
  const prefix = String(packed['PREFIX']![0]);
  assert.ok(prefix.startsWith(cacheRoot), `${prefix} is under ${cacheRoot}`);
  assert.equal(packed['VENV']![0], prefix);
  assert.ok(fs.existsSync(path.join(prefix, 'nodetron-test-marker')), 'the archive was extracted there');
  fs.rmSync(prefix, { recursive: true, force: true });
});
