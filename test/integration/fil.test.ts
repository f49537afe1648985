/**
 * The FIL backend through the real server, against the native libraries:
 * fixtures/fil_models.py trains XGBoost (Debian's python3-xgboost) and
 * LightGBM (pip) models into a temp repository at test time, in every format
 * (XGBoost JSON, UBJSON and legacy binary; LightGBM text) and output mode
 * (regression, binary with threshold and predict_proba, multi-class with and
 * without probabilities, categorical splits, NaN and zeros as missing), with
 * the native predictions; each is asked for all its rows in one request and
 * row by row, concurrently. Then what a user gets wrong: the input's name,
 * shape and datatype; a corrupt model file; model_type naming another format;
 * output dims that do not fit; parameters FIL does not have or that only tune
 * a GPU.
 */
import { gatedBy, needsPython } from './needs';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { MODEL_REPOSITORY, REPO_ROOT, startServer } from './server-process';
import type { ServerProcess } from './server-process';
import { repoIndex } from './repo-kit';

/** The native libraries the answers are compared with; without them every test here skips, saying so (needs.ts). */
const { before, after, test } = gatedBy(
  [
    needsPython(
      '/usr/bin/python3',
      [
        { module: 'xgboost', pkg: 'xgboost' },
        { module: 'numpy', pkg: 'numpy' },
      ],
      'apt-get install python3-xgboost',
    ),
    needsPython('python3', [{ module: 'lightgbm', pkg: 'lightgbm' }], 'python3 -m pip install lightgbm'),
  ]
    .filter((s) => s !== false)
    .join('; ') || false,
);

const FIXTURE = path.join(REPO_ROOT, 'test/integration/fixtures/fil_models.py');

interface Case {
  inputs: (number | null)[][];
  expected: number[][];
}

let server: ServerProcess;
let repo: string;
const cases = new Map<string, Case>();

function config(name: string, body: string): string {
  return `name: "${name}"\nbackend: "fil"\nmax_batch_size: 64\n${body}\n`;
}

function place(name: string, configText: string, file: string, from: string): void {
  fs.mkdirSync(path.join(repo, name, '1'), { recursive: true });
  fs.writeFileSync(path.join(repo, name, 'config.pbtxt'), configText);
  fs.copyFileSync(from, path.join(repo, name, '1', file));
}

const IO = (features: number, out: number): string =>
  `input [{ name: "input__0" data_type: TYPE_FP32 dims: [ ${features} ] }]\noutput [{ name: "output__0" data_type: TYPE_FP32 dims: [ ${out} ] }]`;
const param = (k: string, v: string): string => `{ key: "${k}" value: { string_value: "${v}" } }`;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-fil-'));
  execFileSync('/usr/bin/python3', [FIXTURE, 'xgboost', repo], { stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync('python3', [FIXTURE, 'lightgbm', repo], { stdio: ['ignore', 'ignore', 'inherit'] });
  for (const lib of ['xgboost', 'lightgbm']) {
    const made = JSON.parse(fs.readFileSync(path.join(repo, `${lib}_expected.json`), 'utf8')) as Record<string, Case>;
    for (const [name, c] of Object.entries(made)) cases.set(name, c);
  }
  const lgb = path.join(repo, 'lgb_reg/1/model.txt');
  const corrupt = path.join(repo, 'corrupt.json');
  fs.writeFileSync(corrupt, fs.readFileSync(path.join(repo, 'xgb_reg_json/1/xgboost.json'), 'utf8').slice(0, 900));
  place(
    'bad_corrupt',
    config('bad_corrupt', `${IO(6, 1)}\nparameters [${param('model_type', 'xgboost_json')}, ${param('output_class', 'false')}]`),
    'xgboost.json',
    corrupt,
  );
  place(
    'bad_type',
    config('bad_type', `${IO(5, 1)}\nparameters [${param('model_type', 'xgboost_json')}, ${param('output_class', 'false')}]`),
    'xgboost.json',
    lgb,
  );
  place('bad_dims', config('bad_dims', `${IO(5, 3)}\nparameters [${param('model_type', 'lightgbm')}, ${param('output_class', 'false')}]`), 'model.txt', lgb);
  place('bad_algo', config('bad_algo', `${IO(5, 1)}\nparameters [${param('model_type', 'lightgbm')}, ${param('algo', 'FASTEST')}]`), 'model.txt', lgb);
  place('bad_class', config('bad_class', `${IO(5, 1)}\nparameters [${param('model_type', 'lightgbm')}, ${param('output_class', 'true')}]`), 'model.txt', lgb);
  place(
    'extra_params',
    config(
      'extra_params',
      `${IO(5, 1)}\nparameters [${param('model_type', 'lightgbm')}, ${param('output_class', 'false')}, ` +
        `${param('threads_per_tree', '4')}, ${param('storage_type', 'SPARSE')}, ${param('colour', 'blue')}]`,
    ),
    'model.txt',
    lgb,
  );
  place(
    'dims_any',
    config(
      'dims_any',
      `input [{ name: "input__0" data_type: TYPE_FP32 dims: [ -1 ] }]\noutput [{ name: "output__0" data_type: TYPE_FP32 dims: [ 1 ] }]\n` +
        `dynamic_batching { max_queue_delay_microseconds: 20000 }\nparameters [${param('model_type', 'lightgbm')}, ${param('output_class', 'false')}]`,
    ),
    'model.txt',
    lgb,
  );
  // No config.pbtxt inputs or outputs and no model_type: the file name and auto-complete fill them.
  place('auto_lgb', 'backend: "fil"\ndefault_model_filename: "model.txt"\n', 'model.txt', path.join(repo, 'lgb_multi_proba/1/model.txt'));
  for (const m of ['fil_lightgbm', 'fil_xgboost']) fs.cpSync(path.join(MODEL_REPOSITORY, m), path.join(repo, m), { recursive: true });
  server = await startServer([`--model-repository=${repo}`, '--exit-on-error=false', '--strict-readiness=false']);
});

after(async () => {
  if (server !== undefined) assert.equal(await server.stop(), 0);
  if (repo !== undefined) fs.rmSync(repo, { recursive: true, force: true });
});

function rowsBytes(rows: (number | null)[][]): Uint8Array {
  const x = new Float32Array(rows.flatMap((r) => r.map((v) => (v === null ? NaN : v))));
  return new Uint8Array(x.buffer);
}

async function predict(model: string, rows: (number | null)[][]): Promise<{ shape: number[]; data: number[] }> {
  const r = await infer(server.url, model, [{ name: 'input__0', datatype: 'FP32', shape: [rows.length, rows[0]!.length], data: rowsBytes(rows) }]);
  assert.equal(r.status, 200, `${model}: ${JSON.stringify(r.json)}`);
  return (r.json.outputs as { shape: number[]; data: number[] }[])[0]!;
}

function assertClose(model: string, got: number[], want: number[][], from = 0): void {
  const flat = want.flat();
  assert.equal(got.length, flat.length, `${model}: value count`);
  got.forEach((v, i) => {
    const w = flat[i]!;
    assert.ok(Math.abs(v - w) <= 1e-5 * Math.max(1, Math.abs(w)), `${model}: row ${from + Math.floor(i / want[0]!.length)}: got ${v}, native ${w}`);
  });
}

const MODELS = [
  'xgb_reg_json',
  'xgb_reg_ubj',
  'xgb_reg_binary',
  'xgb_bin_class',
  'xgb_bin_proba',
  'xgb_bin_regress',
  'xgb_multi_proba',
  'xgb_multi_class',
  'xgb_cat_json',
  'lgb_reg',
  'lgb_bin_class',
  'lgb_bin_proba',
  'lgb_multi_proba',
  'lgb_multi_class',
  'lgb_cat',
  'lgb_zero_missing',
];

test('every format and output mode equals the native library, 64 rows in one request and row by row', async () => {
  assert.deepEqual([...cases.keys()].sort(), [...MODELS].sort());
  for (const model of MODELS) {
    const c = cases.get(model)!;
    assert.ok(
      c.inputs.some((r) => r.some((v) => v === null)),
      `${model}: the rows hold NaN`,
    );
    const all = await predict(model, c.inputs);
    assert.deepEqual(all.shape, [c.inputs.length, c.expected[0]!.length], model);
    assertClose(model, all.data, c.expected);
    const single = await Promise.all(c.inputs.slice(0, 12).map((row) => predict(model, [row])));
    single.forEach((s, i) => {
      assert.deepEqual(s.shape, [1, c.expected[0]!.length]);
      assertClose(model, s.data, [c.expected[i]!], i);
    });
  }
});

// The example models of model_repository/ (scripts/gen_fil_models.py), against the native library on rows with a NaN.
const EXAMPLE_ROWS: (number | null)[][] = [
  [5.1, 3.5, 1.4, 0.2],
  [6.0, 2.9, 4.5, 1.5],
  [6.7, 3.1, 5.8, 2.2],
  [5.8, null, 5.1, 1.9],
  [null, 3.0, 1.5, null],
];
const NATIVE_EXAMPLES: [string, string, string][] = [
  [
    'fil_lightgbm',
    'python3',
    'import lightgbm, json, sys; m = lightgbm.Booster(model_file=sys.argv[1]); print(json.dumps(m.predict(json.loads(sys.argv[2], parse_constant=float)).tolist()))',
  ],
  [
    'fil_xgboost',
    '/usr/bin/python3',
    'import xgboost, numpy, json, sys; m = xgboost.Booster(model_file=sys.argv[1]); x = numpy.array(json.loads(sys.argv[2]), dtype=numpy.float32); print(json.dumps((m.predict(xgboost.DMatrix(x)) > 0.5).astype(float).tolist()))',
  ],
];
for (const [model, python, code] of NATIVE_EXAMPLES) {
  test(`example model ${model} answers as the native library does`, async () => {
    const file = fs.readdirSync(path.join(repo, model, '1'))[0]!;
    const rows = JSON.stringify(EXAMPLE_ROWS.map((r) => r.map((v) => (v === null ? 'NaN' : v)))).replace(/"NaN"/g, 'NaN');
    const native = JSON.parse(execFileSync(python, ['-c', code, path.join(repo, model, '1', file), rows], { encoding: 'utf8' })) as number[] | number[][];
    const want = native.map((r) => (Array.isArray(r) ? r : [r]));
    assertClose(model, (await predict(model, EXAMPLE_ROWS)).data, want);
  });
}

test('the threshold decides binary classes: at 0.3 more rows are class 1 than at the default 0.5', async () => {
  const c = cases.get('xgb_bin_class')!;
  const proba = await predict('xgb_bin_regress', c.inputs);
  const classes = await predict('xgb_bin_class', c.inputs);
  classes.data.forEach((k, i) => assert.equal(k, proba.data[i]! > 0.3 ? 1 : 0, `row ${i}`));
  assert.ok(
    proba.data.some((p) => p > 0.3 && p <= 0.5),
    'some row lies between the two thresholds',
  );
});

test('auto-complete fills input__0, output__0 and the batch size from the model file', async () => {
  const r = await fetch(`${server.url}/v2/models/auto_lgb/config`);
  assert.equal(r.status, 200);
  const cfg = (await r.json()) as { max_batch_size: number; input: { name: string; dims: number[] }[]; output: { name: string; dims: number[] }[] };
  assert.equal(cfg.max_batch_size, 1024);
  assert.deepEqual(
    cfg.input.map((i) => [i.name, i.dims]),
    [['input__0', [5]]],
  );
  assert.deepEqual(
    cfg.output.map((o) => [o.name, o.dims]),
    [['output__0', [1]]],
  );
  const c = cases.get('lgb_multi_class')!;
  assertClose('auto_lgb', (await predict('auto_lgb', c.inputs)).data, c.expected);
});

test('a wrong input name, shape or datatype is refused with what the model expects, and the model keeps serving', async () => {
  const row = new Uint8Array(new Float32Array(6).buffer);
  const name = await infer(server.url, 'xgb_reg_json', [{ name: 'features', datatype: 'FP32', shape: [1, 6], data: row }]);
  assert.equal(name.status, 400);
  assert.match(String(name.json.error), /features/);
  assert.match(String(name.json.error), /xgb_reg_json/);
  const shape = await infer(server.url, 'xgb_reg_json', [{ name: 'input__0', datatype: 'FP32', shape: [1, 5], data: new Uint8Array(20) }]);
  assert.equal(shape.status, 400);
  assert.match(String(shape.json.error), /unexpected shape for input 'input__0' for model 'xgb_reg_json'. Expected \[-1,6\], got \[1,5\]/);
  const dtype = await infer(server.url, 'xgb_reg_json', [{ name: 'input__0', datatype: 'FP64', shape: [1, 6], data: new Uint8Array(48) }]);
  assert.equal(dtype.status, 400);
  assert.match(String(dtype.json.error), /input__0/);
  assert.match(String(dtype.json.error), /FP32/);
  const c = cases.get('xgb_reg_json')!;
  assertClose('xgb_reg_json', (await predict('xgb_reg_json', c.inputs.slice(0, 3))).data, c.expected.slice(0, 3));
});

test('dims [ -1 ]: a request with the wrong feature count is refused alone, the requests batched with it are answered', async () => {
  const c = cases.get('lgb_reg')!;
  const [bad, ...good] = await Promise.all([
    infer(server.url, 'dims_any', [{ name: 'input__0', datatype: 'FP32', shape: [1, 4], data: new Uint8Array(16) }]),
    ...c.inputs.slice(0, 4).map((row) => predict('dims_any', [row])),
  ]);
  assert.equal(bad!.status, 400);
  assert.equal(bad!.json.error, "unexpected shape for input 'input__0' for model 'dims_any'. Expected [-1,5] (rows of 5 features), got [1,4]");
  good.forEach((g, i) => assertClose('dims_any', (g as { data: number[] }).data, [c.expected[i]!], i));
});

test('bad models fail to load with the file, what is wrong and what to do; the rest load', async () => {
  const index = await repoIndex(server.url);
  const reason = (m: string): string => {
    const e = index.find((x) => x.name === m);
    assert.ok(e !== undefined, m);
    assert.equal(e.state, 'UNAVAILABLE', `${m}: ${JSON.stringify(e)}`);
    return e.reason ?? '';
  };
  const corrupt = reason('bad_corrupt');
  assert.match(corrupt, /bad_corrupt\/1\/xgboost\.json is not an XGBoost JSON model/);
  assert.match(corrupt, /Save it again with Booster\.save_model\("xgboost\.json"\)/);
  assert.match(
    reason('bad_type'),
    /parameter model_type is 'xgboost_json', but .*bad_type\/1\/xgboost\.json is a LightGBM text model: set model_type to 'lightgbm'/,
  );
  assert.match(reason('bad_dims'), /output 'output__0' has dims \[3\], but the model answers one prediction per row: set dims: \[ 1 \]/);
  assert.match(reason('bad_algo'), /Unknown FIL algorithm name: FASTEST/);
  assert.match(reason('bad_class'), /output_class is true, but .* is a LightGBM regression model \(objective 'regression'\): set output_class to false/);
  for (const m of [...MODELS, 'extra_params', 'auto_lgb', 'dims_any', 'fil_lightgbm', 'fil_xgboost'])
    assert.equal(index.find((x) => x.name === m)?.state, 'READY', m);
});

test('GPU-only and unknown parameters load with one warning each naming the model and the parameter', () => {
  const out = server.output();
  assert.match(out, /model 'extra_params': FIL parameter 'threads_per_tree' is ignored: it tunes FIL on a GPU/);
  assert.match(out, /model 'extra_params': FIL parameter 'storage_type' is ignored/);
  assert.match(out, /model 'extra_params': parameter 'colour' is not a FIL parameter and is ignored/);
  assert.equal(out.split("FIL parameter 'threads_per_tree' is ignored").length - 1, 1);
});
