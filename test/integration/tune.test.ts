/**
 * `nodetron tune` against the real server, the way a user runs it: on
 * `simple` (ONNX) and on `add_vectors` (Python, real stubs) with a small
 * budget, each finishing within it; the winner beats the shipped config by
 * more than the noise or the shipped config is named best; the written
 * config.tuned.pbtxt (and config.pbtxt with --write) loads and serves in a
 * fresh server. Then the models it refuses, with why, through -u on a
 * running server in explicit mode. Nothing here times the server: the
 * numbers only have to be consistent with the verdict.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parsePerfOptions } from '../../src/perf/perf-options';
import { httpTransport } from '../../src/perf/perf-runner';
import { parseModelConfigText } from '../../src/repository/config/pbtxt';
import { MODEL_REPOSITORY, REPO_ROOT, startServer, type ServerProcess } from './server-process';

const CLI = path.join(REPO_ROOT, 'dist/src/cli.js');
const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures');
const BUDGET_MINUTES = 0.4;

interface Run {
  code: number | null;
  out: string;
  err: string;
  seconds: number;
}

function tune(args: string[], timeoutMs = 120_000): Promise<Run> {
  const t0 = Date.now();
  const child = spawn(process.execPath, [CLI, 'tune', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err, seconds: (Date.now() - t0) / 1000 });
    }),
  );
}

async function inferJson(server: ServerProcess, model: string, inputs: object[]): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.url}/v2/models/${model}/infer`, { method: 'POST', body: JSON.stringify({ inputs }) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('tune on simple and add_vectors', () => {
  let repo: string;
  const results: Record<string, Record<string, unknown>> = {};

  before(() => {
    repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-tune-'));
    for (const m of ['simple', 'add_vectors']) fs.cpSync(path.join(MODEL_REPOSITORY, m), path.join(repo, m), { recursive: true });
  });
  after(() => fs.rmSync(repo, { recursive: true, force: true }));

  test('simple: finishes within its budget, and --write puts the winner in config.pbtxt', async () => {
    const shipped = fs.readFileSync(path.join(repo, 'simple/config.pbtxt'), 'utf8');
    const r = await tune(['-m', 'simple', '--model-repository', repo, '--budget-minutes', String(BUDGET_MINUTES), '-p', '300', '--format', 'json', '--write']);
    assert.equal(r.code, 0, r.err);
    // The budget covers the search; starting and stopping the server are on top.
    assert.ok(r.seconds < BUDGET_MINUTES * 60 + 30, `took ${r.seconds} s`);
    const j = JSON.parse(r.out) as Record<string, any>;
    results.simple = j;
    assert.ok(j.elapsed_seconds <= BUDGET_MINUTES * 60 + 3, `search took ${j.elapsed_seconds} s`);
    assert.ok(j.trials.length >= 2, `${j.trials.length} configs measured`);
    assert.equal(j.trials[0].config, j.shipped.config, 'the shipped config is measured first');
    assert.ok(j.shipped.chosen_point >= 0 && j.shipped.score > 0, 'the shipped config has a point');
    assert.match(r.err, /^tune: config 1\/\d+ instances=\d+ max_batch=8 dynamic=off: [\d.]+ infer\/s at concurrency \d+, p99 [\d.]+ ms$/m);
    if (j.verdict.shipped_is_best) {
      assert.match(j.verdict.text, /^the shipped config (is best|is the best one measured)/);
      assert.equal(j.winner.key, j.shipped.key);
      assert.equal(fs.readFileSync(path.join(repo, 'simple/config.pbtxt'), 'utf8'), shipped, '--write leaves a shipped config that is best');
    } else {
      assert.ok(j.winner.score > j.shipped.score * (1 + j.verdict.noise), `winner ${j.winner.score} vs shipped ${j.shipped.score}, noise ${j.verdict.noise}`);
      assert.match(j.verdict.text, /is best: \+[\d.]+% over the shipped config/);
      assert.equal(fs.readFileSync(path.join(repo, 'simple/config.pbtxt'), 'utf8'), j.tuned_config_pbtxt);
      assert.equal(fs.readFileSync(path.join(repo, 'simple/config.pbtxt.orig'), 'utf8'), shipped);
    }
    const tuned = fs.readFileSync(path.join(repo, 'simple/config.tuned.pbtxt'), 'utf8');
    assert.equal(tuned, j.tuned_config_pbtxt);
    assert.match(tuned, /^# Written by nodetron tune on /);
    assert.equal(parseModelConfigText(tuned, 'config.tuned.pbtxt').name, 'simple');
  });

  test('add_vectors (Python): instance counts only, CSV out', async () => {
    const r = await tune([
      '-m',
      'add_vectors',
      '--model-repository',
      repo,
      '--budget-minutes',
      String(BUDGET_MINUTES),
      '-p',
      '300',
      '--shape',
      'INPUT0:16',
      '--shape',
      'INPUT1:16',
      '--format',
      'csv',
    ]);
    assert.equal(r.code, 0, r.err);
    assert.ok(r.seconds < BUDGET_MINUTES * 60 + 30, `took ${r.seconds} s`);
    const [head, ...rows] = r.out.trim().split('\n');
    assert.equal(
      head,
      'config,concurrency,inferences_per_sec,p50_us,p99_us,server_cpu_us_per_request,avg_batch,noise_pct,stable,errors,chosen,winner,shipped,error',
    );
    const cells = rows.map((l) => l.split(','));
    assert.ok(
      cells.every((c) => /^instances=\d+$/.test(c[0]!)),
      'a Python model is tuned by its instance count',
    );
    assert.ok(
      cells.some((c) => c[12] === '1' && c[0] === 'instances=1'),
      'the shipped config (one instance) is measured',
    );
    assert.equal(cells.filter((c) => c[11] === '1').length, 1, 'one winning point');
    assert.ok(
      cells.every((c) => c[9] === '0'),
      'no request failed',
    );
    assert.ok(
      cells.some((c) => Number(c[5]) > 0),
      "the server's CPU per request is read from /proc",
    );
    const tuned = fs.readFileSync(path.join(repo, 'add_vectors/config.tuned.pbtxt'), 'utf8');
    assert.match(tuned, /backend: "python"/);
  });

  test('the tuned configs load and serve in a fresh server', async () => {
    for (const m of ['simple', 'add_vectors']) fs.copyFileSync(path.join(repo, m, 'config.tuned.pbtxt'), path.join(repo, m, 'config.pbtxt'));
    const server = await startServer([`--model-repository=${repo}`]);
    try {
      const a = Array.from({ length: 16 }, (_, i) => i);
      const s = await inferJson(server, 'simple', [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: a },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: a },
      ]);
      assert.equal(s.status, 200, JSON.stringify(s.body));
      const out0 = (s.body.outputs as { name: string; data: number[] }[]).find((o) => o.name === 'OUTPUT0')!;
      assert.deepEqual(
        out0.data,
        a.map((x) => 2 * x),
      );
      const config = (await (await fetch(`${server.url}/v2/models/simple/config`)).json()) as { instance_group: { count: number }[] };
      const winner = (results.simple?.winner as { candidate: { instances: number } } | undefined)?.candidate.instances;
      if (winner !== undefined) assert.equal(config.instance_group[0]!.count, winner, 'the server runs the winner');
      const v = await inferJson(server, 'add_vectors', [
        { name: 'INPUT0', datatype: 'FP32', shape: [3], data: [1, 2, 3] },
        { name: 'INPUT1', datatype: 'FP32', shape: [3], data: [10, 20, 30] },
      ]);
      assert.equal(v.status, 200, JSON.stringify(v.body));
      assert.deepEqual((v.body.outputs as { data: number[] }[])[0]!.data, [11, 22, 33]);
    } finally {
      await server.stop();
    }
  });
});

describe('models tune refuses, on a running server (-u)', () => {
  let repo: string;
  let server: ServerProcess;

  before(async () => {
    repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-tune-refuse-'));
    const copy = (from: string, name: string): void => fs.cpSync(from, path.join(repo, name), { recursive: true });
    copy(path.join(MODEL_REPOSITORY, 'simple'), 'simple');
    copy(path.join(MODEL_REPOSITORY, 'simple_ensemble'), 'simple_ensemble');
    copy(path.join(FIXTURES, 'sequence_models/running_sum'), 'running_sum');
    copy(path.join(FIXTURES, 'python_models/repeat'), 'repeat');
    copy(path.join(FIXTURES, 'python_models/init_fail'), 'init_fail');
    // A short keep-alive timeout, so the test below sees the server close idle connections.
    server = await startServer([`--model-repository=${repo}`, '--model-control-mode=explicit', '--http-keepalive-timeout-ms=300']);
  });
  after(async () => {
    await server.stop();
    fs.rmSync(repo, { recursive: true, force: true });
  });

  const cases: { model: string; want: RegExp }[] = [
    { model: 'simple_ensemble', want: /^error: tune cannot tune this model: model 'simple_ensemble' is an ensemble: .*\(nodetron tune -m simple\)$/m },
    { model: 'running_sum', want: /^error: tune cannot tune this model: model 'running_sum' uses sequence batching: / },
    { model: 'repeat', want: /^error: tune cannot tune this model: model 'repeat' is decoupled: / },
    {
      model: 'init_fail',
      want: /^error: tune cannot tune this model: model 'init_fail' did not load as shipped, so there is nothing to tune yet: .*NameError: name 'lorem_ipsum' is not defined/,
    },
  ];
  for (const c of cases) {
    test(`${c.model}: refused, saying why`, async () => {
      const r = await tune(['-m', c.model, '-u', `127.0.0.1:${server.port}`, '--budget-minutes', '0.2']);
      assert.equal(r.code, 1, r.out + r.err);
      assert.match(r.err, c.want);
      assert.equal(r.out, '');
    });
  }

  test("perf's engine opens a connection again after the server closed it idle (tune's sweeps leave some idle)", async () => {
    const load = await fetch(`${server.url}/v2/repository/models/simple/load`, { method: 'POST', body: '{}' });
    assert.equal(load.status, 200);
    const o = parsePerfOptions(['-m', 'simple', '-u', `127.0.0.1:${server.port}`]);
    const input = { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], values: new Array<number>(16).fill(1), bytes: Buffer.alloc(64) };
    const transport = await httpTransport(o, [input, { ...input, name: 'INPUT1' }]);
    try {
      const sender = await transport.open();
      assert.equal(await sender.send(), true);
      await new Promise((r) => setTimeout(r, 1500)); // past the 300 ms keep-alive timeout (checked about every 250 ms)
      assert.equal(await sender.send(), true, 'the send after the server closed the idle connection succeeds');
    } finally {
      transport.close();
    }
  });

  test('no server at -u: says so and what to do', async () => {
    const r = await tune(['-m', 'simple', '-u', '127.0.0.1:1']);
    assert.equal(r.code, 1);
    assert.match(r.err, /^error: no server answers at http:\/\/127\.0\.0\.1:1 .*start one with --model-control-mode=explicit, or give --model-repository/);
  });

  test('the server keeps serving after the refusals', async () => {
    // tune loaded the ensemble (and with it simple) and left it loaded with its repository config.
    assert.equal((await fetch(`${server.url}/v2/models/simple_ensemble/ready`)).status, 200);
    assert.equal((await fetch(`${server.url}/v2/health/live`)).status, 200);
  });
});
