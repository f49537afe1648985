/**
 * The pytorch backend through the real server and real torch (python3's),
 * one server start over a temporary repository of the generator's
 * TorchScript examples (scripts/gen_torch_models.py, as gen_models.py --pytorch) plus broken
 * variants: every answer is compared with in-process torch on the same
 * model file and inputs (torch-kit.ts). Covers INPUT__0/OUTPUT__0 naming,
 * forward() argument names, INT32/FP64, List[str] in and out, dynamic
 * batching of concurrent requests (the same answers, fewer executions),
 * refused inputs (name, shape, datatype) with texts naming the model and
 * the input, Triton's load-time texts (not TorchScript, input count, a bad
 * parameter value, KIND_GPU without a GPU), an output datatype the config
 * gets wrong, the parameters' log lines, statistics; and, in a second
 * server, an interpreter without torch (a load error that says how to
 * install it).
 */
import { gatedBy, needsPython } from './needs';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { startServer, unwrapTables } from './server-process';
import type { ServerProcess } from './server-process';
import { canImport, generateTorchModels, torchReference, type RefTensor } from './torch-kit';
import { repoIndex } from './repo-kit';

/** Without torch in the stubs' interpreter every test here skips, saying so (needs.ts). */
const { before, after, test } = gatedBy(
  needsPython('python3', [{ module: 'torch', pkg: 'torch' }], 'python3 -m pip install torch --index-url https://download.pytorch.org/whl/cpu'),
);

let server: ServerProcess;
let repo: string;

const ADD_SUB = '1/model.pt';

function writeVariant(name: string, from: string, config: string): void {
  fs.mkdirSync(path.join(repo, name, '1'), { recursive: true });
  if (from !== '') fs.copyFileSync(path.join(repo, from, ADD_SUB), path.join(repo, name, ADD_SUB));
  fs.writeFileSync(path.join(repo, name, 'config.pbtxt'), config);
}

const ADD_SUB_IO = `input [
  { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "INPUT__1" data_type: TYPE_FP32 dims: [ 4 ] }
]
output [
  { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "OUTPUT__1" data_type: TYPE_FP32 dims: [ 4 ] }
]
`;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-pytorch-'));
  generateTorchModels(repo);
  writeVariant('not_torchscript', '', `platform: "pytorch_libtorch"\nmax_batch_size: 8\n${ADD_SUB_IO}`);
  fs.writeFileSync(path.join(repo, 'not_torchscript', ADD_SUB), 'a state_dict would be a zip too; this is not even that');
  writeVariant(
    'three_inputs',
    'torch_add_sub',
    `platform: "pytorch_libtorch"\nmax_batch_size: 8\n${ADD_SUB_IO.replace(
      '{ name: "INPUT__1" data_type: TYPE_FP32 dims: [ 4 ] }',
      '{ name: "INPUT__1" data_type: TYPE_FP32 dims: [ 4 ] },\n  { name: "INPUT__2" data_type: TYPE_FP32 dims: [ 4 ] }',
    )}`,
  );
  writeVariant(
    'wrong_output_type',
    'torch_add_sub',
    `platform: "pytorch_libtorch"\nmax_batch_size: 8\n${ADD_SUB_IO.replace(
      '{ name: "OUTPUT__0" data_type: TYPE_FP32',
      '{ name: "OUTPUT__0" data_type: TYPE_INT32',
    )}`,
  );
  writeVariant(
    'bad_parameter',
    'torch_add_sub',
    `platform: "pytorch_libtorch"\nmax_batch_size: 8\n${ADD_SUB_IO}` + 'parameters { key: "INFERENCE_MODE" value { string_value: "maybe" } }\n',
  );
  writeVariant(
    'tuned',
    'torch_add_sub',
    `backend: "pytorch"\nmax_batch_size: 8\n${ADD_SUB_IO}` +
      'parameters { key: "INTRA_OP_THREAD_COUNT" value { string_value: "1" } }\n' +
      'parameters { key: "INFERENCE_MODE" value { string_value: "false" } }\n' +
      'parameters { key: "DISABLE_OPTIMIZED_EXECUTION" value { string_value: "true" } }\n' +
      'parameters { key: "DISABLE_CUDNN" value { string_value: "true" } }\n',
  );
  writeVariant('on_gpu', 'torch_add_sub', `platform: "pytorch_libtorch"\nmax_batch_size: 8\n${ADD_SUB_IO}` + 'instance_group [ { kind: KIND_GPU } ]\n');
  server = await startServer([`--model-repository=${repo}`, '--exit-on-error=false', '--strict-readiness=false'], 180_000);
});

after(async () => {
  assert.equal(await server.stop(), 0);
  fs.rmSync(repo, { recursive: true, force: true });
});

const modelFile = (model: string): string => path.join(repo, model, ADD_SUB);
const tensor = (name: string, t: RefTensor) => ({ name, ...t });
type Out = { name: string; datatype: string; shape: number[]; data: (number | string)[] };

function randomFloats(n: number, seed: number): number[] {
  let s = seed;
  // Exactly representable in FP32 (multiples of 1/64), so JSON round trips exactly.
  return Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return Math.round(((s / 2147483648) * 200 - 100) * 64) / 64;
  });
}

async function reasons(): Promise<Map<string, { state: string; reason: string }>> {
  return new Map((await repoIndex(server.url)).map((r) => [r.name, { state: r.state ?? '', reason: r.reason ?? '' }]));
}

test('INPUT__0/OUTPUT__0 naming: the server answers what in-process torch answers', async () => {
  const a: RefTensor = { datatype: 'FP32', shape: [3, 4], data: randomFloats(12, 1) };
  const b: RefTensor = { datatype: 'FP32', shape: [3, 4], data: randomFloats(12, 2) };
  const want = torchReference(modelFile('torch_add_sub'), [a, b]);
  const r = await infer(server.url, 'torch_add_sub', [tensor('INPUT__0', a), tensor('INPUT__1', b)]);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const outs = r.json.outputs as Out[];
  assert.deepEqual(
    outs.map((o) => o.name),
    ['OUTPUT__0', 'OUTPUT__1'],
  );
  for (const [i, o] of outs.entries()) {
    assert.equal(o.datatype, want[i]!.datatype);
    assert.deepEqual(o.shape, want[i]!.shape);
    assert.deepEqual(o.data, want[i]!.data);
  }
});

test('forward() argument names, INT32 and FP64: the same answer as in-process torch', async () => {
  const counts: RefTensor = { datatype: 'INT32', shape: [2, 3], data: [1, -2, 3, 2147483, 0, -7] };
  const values: RefTensor = { datatype: 'FP64', shape: [2, 3], data: [0.1, 2.5, -3.25, 1e-300, 7, 1 / 3] };
  const want = torchReference(modelFile('torch_mixed'), [counts, values]);
  // The config lists them in forward()'s order; name matching, not order, must decide: send them swapped.
  const r = await infer(server.url, 'torch_mixed', [tensor('values', values), tensor('counts', counts)]);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const outs = r.json.outputs as Out[];
  assert.deepEqual(
    outs.map((o) => [o.name, o.datatype, o.shape]),
    [
      ['OUTPUT__0', 'INT32', [2, 3]],
      ['OUTPUT__1', 'FP64', [2, 3]],
    ],
  );
  assert.deepEqual(outs[0]!.data, want[0]!.data);
  assert.deepEqual(outs[1]!.data, want[1]!.data);
});

test('a List[str] model: BYTES in, INT64 and BYTES out, as in-process torch', async () => {
  const text: RefTensor = { datatype: 'BYTES', shape: [4], data: ['abc', 'h\u00e9llo', '', 'مرحبا'] };
  const want = torchReference(modelFile('torch_strings'), [text]);
  const r = await infer(server.url, 'torch_strings', [tensor('TEXT', text)]);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const outs = r.json.outputs as Out[];
  assert.deepEqual(
    outs.map((o) => [o.name, o.datatype, o.shape]),
    [
      ['LENGTHS__0', 'INT64', [4]],
      ['UPPER__1', 'BYTES', [4]],
    ],
  );
  assert.deepEqual(outs[0]!.data, want[0]!.data);
  assert.deepEqual(outs[1]!.data, want[1]!.data);
});

interface ModelStats {
  inference_count: number;
  execution_count: number;
  inference_stats: Record<string, { count: number; ns: number }>;
}

async function stats(model: string): Promise<ModelStats> {
  const res = await fetch(`${server.url}/v2/models/${model}/stats`);
  assert.equal(res.status, 200);
  return ((await res.json()) as { model_stats: ModelStats[] }).model_stats[0]!;
}

test('dynamic batching: 32 concurrent requests get their own rows back, in fewer executions', async () => {
  const before = await stats('torch_add_sub');
  const requests = Array.from({ length: 32 }, (_, i) => {
    const a: RefTensor = { datatype: 'FP32', shape: [1, 4], data: randomFloats(4, 100 + i) };
    const b: RefTensor = { datatype: 'FP32', shape: [1, 4], data: randomFloats(4, 200 + i) };
    return { a, b };
  });
  // One in-process run over the whole batch gives every request's expected rows.
  const all = torchReference(modelFile('torch_add_sub'), [
    { datatype: 'FP32', shape: [32, 4], data: requests.flatMap((q) => q.a.data) },
    { datatype: 'FP32', shape: [32, 4], data: requests.flatMap((q) => q.b.data) },
  ]);
  const answers = await Promise.all(requests.map((q) => infer(server.url, 'torch_add_sub', [tensor('INPUT__0', q.a), tensor('INPUT__1', q.b)])));
  for (const [i, r] of answers.entries()) {
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const outs = r.json.outputs as Out[];
    assert.deepEqual(outs[0]!.shape, [1, 4]);
    assert.deepEqual(outs[0]!.data, all[0]!.data.slice(4 * i, 4 * i + 4), `request ${i}: sum`);
    assert.deepEqual(outs[1]!.data, all[1]!.data.slice(4 * i, 4 * i + 4), `request ${i}: difference`);
  }
  const after = await stats('torch_add_sub');
  assert.equal(after.inference_count - before.inference_count, 32, 'every request counted');
  assert.equal(after.inference_stats['success']!.count - before.inference_stats['success']!.count, 32);
  const executions = after.execution_count - before.execution_count;
  assert.ok(executions >= 4 && executions < 32, `32 requests batched into ${executions} executions (max_batch_size 8)`);
});

test('a wrong input name, shape or datatype is refused naming the model and the input', async () => {
  const ok = (name: string) => ({ name, datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] });
  const cases: { inputs: ReturnType<typeof ok>[]; want: RegExp[] }[] = [
    { inputs: [ok('INPUT__0'), ok('INPUT__9')], want: [/INPUT__9/, /torch_add_sub/] },
    {
      inputs: [ok('INPUT__0'), { ...ok('INPUT__1'), shape: [1, 5], data: [1, 2, 3, 4, 5] }],
      want: [/INPUT__1/, /torch_add_sub/, /\[-1,4\]|\[ ?-1, ?4 ?\]/, /\[1,5\]|\[ ?1, ?5 ?\]/],
    },
    { inputs: [ok('INPUT__0'), { ...ok('INPUT__1'), datatype: 'INT32' }], want: [/INPUT__1/, /torch_add_sub/, /FP32/, /INT32/] },
  ];
  for (const c of cases) {
    const r = await infer(server.url, 'torch_add_sub', c.inputs);
    assert.equal(r.status, 400, JSON.stringify(r.json));
    for (const w of c.want) assert.match(String(r.json.error), w);
  }
  // The model still serves.
  const r = await infer(server.url, 'torch_add_sub', [ok('INPUT__0'), ok('INPUT__1')]);
  assert.equal(r.status, 200);
});

test('load errors in the repository index: not TorchScript, input count, a bad parameter value, KIND_GPU without a GPU', async () => {
  const index = await reasons();
  const notScript = index.get('not_torchscript')!;
  assert.equal(notScript.state, 'UNAVAILABLE');
  assert.match(notScript.reason, /^Internal: failed to load model 'not_torchscript': PytorchStreamReader failed reading zip archive/);
  assert.match(notScript.reason, /must be a TorchScript file \(torch\.jit\.script\(model\)/);
  assert.match(index.get('three_inputs')!.reason, /unable to load model 'three_inputs', configuration expects 3 inputs, model provides 2/);
  assert.match(
    index.get('bad_parameter')!.reason,
    /Failed to parse 'INFERENCE_MODE' parameter for model 'bad_parameter': failed to convert 'maybe' to boolean/,
  );
  if (!fs.existsSync('/proc/driver/nvidia/gpus')) {
    assert.match(index.get('on_gpu')!.reason, /has kind KIND_GPU but no GPUs are available on this machine/);
  }
  for (const m of ['torch_add_sub', 'torch_mixed', 'torch_strings', 'wrong_output_type', 'tuned']) assert.equal(index.get(m)?.state, 'READY', m);
  assert.match(unwrapTables(server.output()), /\| not_torchscript\s+\| 1\s+\| UNAVAILABLE: Internal: failed to load model 'not_torchscript'/);
});

test("an output whose datatype the config gets wrong fails with Triton's text, and the model keeps serving", async () => {
  const a = { name: 'INPUT__0', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] };
  const r = await infer(server.url, 'wrong_output_type', [a, { ...a, name: 'INPUT__1' }]);
  assert.equal(r.status, 400, JSON.stringify(r.json));
  assert.equal(r.json.error, "configuration expects datatype TYPE_INT32 for output 'OUTPUT__0', model provides TYPE_FP32");
  const again = await infer(server.url, 'torch_add_sub', [a, { ...a, name: 'INPUT__1' }]);
  assert.equal(again.status, 200);
});

test('config parameters are applied and logged as Triton logs them, GPU-only ones with a note', async () => {
  const a: RefTensor = { datatype: 'FP32', shape: [2, 4], data: randomFloats(8, 9) };
  const want = torchReference(modelFile('tuned'), [a, a]);
  const r = await infer(server.url, 'tuned', [tensor('INPUT__0', a), tensor('INPUT__1', a)]);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.deepEqual((r.json.outputs as Out[])[0]!.data, want[0]!.data);
  const out = server.output();
  assert.match(out, /Intra op thread count is set to 1 for model instance 'tuned_0'/);
  assert.match(out, /Optimized execution is disabled for model instance 'tuned_0'/);
  assert.match(out, /Inference Mode is disabled for model instance 'tuned_0'/);
  assert.match(out, /DISABLE_CUDNN has no effect for model instance 'tuned_0': it runs on the CPU/);
});

test('statistics count the successes and the failures', async () => {
  const s = await stats('wrong_output_type');
  assert.ok(s.inference_stats['fail']!.count >= 1, JSON.stringify(s.inference_stats['fail']));
  const ok = await stats('torch_mixed');
  assert.ok(ok.inference_count >= 1 && ok.execution_count >= 1);
  assert.ok(ok.inference_stats['compute_infer']!.ns > 0);
});

test('an interpreter without torch: the load fails with the model, the interpreter and how to install torch', async (t) => {
  const python = '/usr/bin/python3';
  if (!fs.existsSync(python) || canImport(python, 'torch') || !canImport(python, 'numpy')) {
    t.skip(`${python} is missing, has torch, or lacks numpy`);
    return;
  }
  const only = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-notorch-'));
  fs.cpSync(path.join(repo, 'torch_add_sub'), path.join(only, 'torch_add_sub'), { recursive: true });
  const other = await startServer([
    `--model-repository=${only}`,
    '--exit-on-error=false',
    '--strict-readiness=false',
    `--backend-config=pytorch,interpreter=${python}`,
  ]);
  try {
    const res = await fetch(`${other.url}/v2/repository/index`, { method: 'POST', body: '{}' });
    const [row] = (await res.json()) as { name: string; state: string; reason: string }[];
    assert.equal(row!.state, 'UNAVAILABLE');
    assert.match(
      row!.reason,
      /unable to load model 'torch_add_sub': the pytorch backend runs the model with the torch module of \/usr\/bin\/python3, which cannot import it \(ModuleNotFoundError: No module named 'torch'\)/,
    );
    assert.match(row!.reason, /\/usr\/bin\/python3 -m pip install torch --index-url https:\/\/download\.pytorch\.org\/whl\/cpu/);
    assert.match(row!.reason, /--backend-config=pytorch,interpreter=/);
  } finally {
    assert.equal(await other.stop(), 0);
    fs.rmSync(only, { recursive: true, force: true });
  }
});
