/**
 * Platform torch_aoti through the real server: the generator's add/sub
 * model compiled to an AOTInductor package (model.pt2, batch 1..8; the
 * compile with g++ is most of this file's time, about 40 s on 2 cores) is
 * served under both of Triton's namings (INPUT__0/OUTPUT__0 and the call
 * specification's ARGS[i]/RESULT[i]) and answers what in-process torch
 * answers for the same package; a name the package does not have fails
 * the load with the names it does have; concurrent requests are batched
 * into one call of the package and each gets its own rows.
 */
import { gatedBy, needsPython } from './needs';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { startServer } from './server-process';
import type { ServerProcess } from './server-process';
import { generateTorchModels, torchReference, type RefTensor } from './torch-kit';

/** Without torch in the stubs' interpreter every test here skips, saying so (needs.ts). */
const { before, after, test } = gatedBy(
  needsPython('python3', [{ module: 'torch', pkg: 'torch' }], 'python3 -m pip install torch --index-url https://download.pytorch.org/whl/cpu'),
);

let server: ServerProcess;
let repo: string;
const PT2 = '1/model.pt2';

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-aoti-'));
  generateTorchModels(repo, { aoti: true });
  const base = fs.readFileSync(path.join(repo, 'torch_aoti_add_sub', 'config.pbtxt'), 'utf8');
  const variant = (name: string, config: string): void => {
    fs.mkdirSync(path.join(repo, name, '1'), { recursive: true });
    fs.copyFileSync(path.join(repo, 'torch_aoti_add_sub', PT2), path.join(repo, name, PT2));
    fs.writeFileSync(path.join(repo, name, 'config.pbtxt'), config);
  };
  variant('aoti_spec_names', base.replace(/INPUT__(\d)/g, 'ARGS[$1]').replace(/OUTPUT__(\d)/g, 'RESULT[$1]'));
  variant('aoti_unknown_name', base.replace('INPUT__1', 'y'));
  server = await startServer([`--model-repository=${repo}`, '--exit-on-error=false', '--strict-readiness=false'], 180_000);
});

after(async () => {
  assert.equal(await server.stop(), 0);
  fs.rmSync(repo, { recursive: true, force: true });
});

type Out = { name: string; datatype: string; shape: number[]; data: number[] };

test('a .pt2 package under INPUT__0/OUTPUT__0 and under ARGS[i]/RESULT[i] answers as in-process torch', async () => {
  const a: RefTensor = { datatype: 'FP32', shape: [3, 4], data: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12.5] };
  const b: RefTensor = { datatype: 'FP32', shape: [3, 4], data: [0.5, -1, 2, 0, 1, 1, 1, 1, -3, 2, 0.25, 9] };
  const want = torchReference(path.join(repo, 'torch_aoti_add_sub', PT2), [a, b]);
  for (const [model, ins, outs] of [
    ['torch_aoti_add_sub', ['INPUT__0', 'INPUT__1'], ['OUTPUT__0', 'OUTPUT__1']],
    ['aoti_spec_names', ['ARGS[0]', 'ARGS[1]'], ['RESULT[0]', 'RESULT[1]']],
  ] as const) {
    const r = await infer(server.url, model, [
      { name: ins[0], ...a },
      { name: ins[1], ...b },
    ]);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const got = r.json.outputs as Out[];
    assert.deepEqual(
      got.map((o) => [o.name, o.datatype, o.shape]),
      [
        [outs[0], 'FP32', [3, 4]],
        [outs[1], 'FP32', [3, 4]],
      ],
    );
    assert.deepEqual(got[0]!.data, want[0]!.data, `${model}: sum`);
    assert.deepEqual(got[1]!.data, want[1]!.data, `${model}: difference`);
  }
});

test('a config name the package does not have fails the load, naming the ones it has', async () => {
  const res = await fetch(`${server.url}/v2/repository/index`, { method: 'POST', body: '{}' });
  const rows = (await res.json()) as { name: string; state: string; reason?: string }[];
  const row = rows.find((x) => x.name === 'aoti_unknown_name')!;
  assert.equal(row.state, 'UNAVAILABLE');
  assert.match(
    row.reason!,
    /Input "y" for model instance "aoti_unknown_name_0" is not found in model input map\. The package takes 'ARGS\[0\]', 'INPUT__0', 'ARGS\[1\]', 'INPUT__1'/,
  );
});

test('concurrent requests are batched into the package and each gets its rows', async () => {
  const reqs = Array.from({ length: 12 }, (_, i) => ({ a: [i, i + 1, i + 2, i + 3], b: [1, 2, 3, 4] }));
  const answers = await Promise.all(
    reqs.map((q) =>
      infer(server.url, 'torch_aoti_add_sub', [
        { name: 'INPUT__0', datatype: 'FP32', shape: [1, 4], data: q.a },
        { name: 'INPUT__1', datatype: 'FP32', shape: [1, 4], data: q.b },
      ]),
    ),
  );
  for (const [i, r] of answers.entries()) {
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.deepEqual(
      (r.json.outputs as Out[])[0]!.data,
      reqs[i]!.a.map((x, j) => x + reqs[i]!.b[j]!),
    );
  }
});
