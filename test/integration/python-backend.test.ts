/**
 * The Python backend through the real server and real Python stubs, in one
 * server start over a temporary repository: the example models add_vectors
 * and text_length (BYTES in, UTF-8 byte counts out), an exception in execute,
 * a TritonError response, a failing initialize (with --exit-on-error=false
 * the server keeps serving and the table shows the Python error), a stub that
 * SIGKILLs itself mid-execute (its request fails with "not healthy", the
 * instance comes back), a decoupled model's N responses through BLS and the
 * scheduler, sync/async BLS, and no /dev/shm file left behind.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { MODEL_REPOSITORY, REPO_ROOT, startServer, unwrapTables, waitForOutput } from './server-process';
import type { ServerProcess } from './server-process';

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures/python_models');
const MODELS = ['exec_error', 'init_fail', 'crash', 'repeat_py', 'bls_repeat', 'bls_add', 'printer'];

let server: ServerProcess;
let repo: string;

function shmFilesOf(pid: number | undefined): string[] {
  if (!fs.existsSync('/dev/shm')) return [];
  return fs.readdirSync('/dev/shm').filter((f) => f.startsWith(`nodetron_${pid}_`));
}

async function sleep(ms: number): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
}

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-python-'));
  for (const m of ['add_vectors', 'text_length']) fs.cpSync(path.join(MODEL_REPOSITORY, m), path.join(repo, m), { recursive: true });
  for (const m of MODELS) fs.cpSync(path.join(FIXTURES, m), path.join(repo, m), { recursive: true });
  server = await startServer([`--model-repository=${repo}`, '--exit-on-error=false']);
});

after(async () => {
  const pid = server.child.pid;
  assert.equal(await server.stop(), 0);
  assert.deepEqual(shmFilesOf(pid), [], 'no shared-memory file survives the server');
  fs.rmSync(repo, { recursive: true, force: true });
});

const vec = (name: string, data: number[]) => ({ name, datatype: 'FP32', shape: [data.length], data });

test('add_vectors adds two FP32 vectors', async () => {
  const r = await infer(server.url, 'add_vectors', [vec('INPUT0', [1, 2, 3.5]), vec('INPUT1', [10, 20, 30])]);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const out = (r.json.outputs as { name: string; shape: number[]; data: number[] }[])[0]!;
  assert.equal(out.name, 'OUTPUT');
  assert.deepEqual(out.shape, [3]);
  assert.deepEqual(out.data, [11, 22, 33.5]);
});

test('tensors above the inline size (64 KiB) go through shared memory, empty ones inline', async () => {
  for (const n of [20_000, 16_384, 16_385, 0]) {
    const a = Array.from({ length: n }, (_, i) => i);
    const b = Array.from({ length: n }, (_, i) => 2 * i);
    const r = await infer(server.url, 'add_vectors', [vec('INPUT0', a), vec('INPUT1', b)]);
    assert.equal(r.status, 200, JSON.stringify(r.json).slice(0, 300));
    const out = (r.json.outputs as { shape: number[]; data: number[] }[])[0]!;
    assert.deepEqual(out.shape, [n]);
    assert.deepEqual(
      out.data,
      a.map((x) => 3 * x),
    );
  }
});

test('a TritonError response fails that request alone, with its code', async () => {
  const r = await infer(server.url, 'add_vectors', [vec('INPUT0', [1, 2, 3]), vec('INPUT1', [1, 2])]);
  assert.equal(r.status, 400);
  assert.equal(r.json.error, 'INPUT0 and INPUT1 must have the same shape, got [3] and [2]');
});

test('text_length counts UTF-8 bytes (Arabic: bytes, not characters), batched', async () => {
  const words = ['hello', 'مرحبا', '', 'naïve 🙂'];
  const r = await infer(server.url, 'text_length', [{ name: 'TEXT', datatype: 'BYTES', shape: [4, 1], data: words }]);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const out = (r.json.outputs as { shape: number[]; data: number[] }[])[0]!;
  assert.deepEqual(out.shape, [4, 1]);
  assert.deepEqual(
    out.data,
    words.map((w) => Buffer.byteLength(w, 'utf8')),
  );
  assert.equal(out.data[1], 10, "'مرحبا' is 5 characters and 10 bytes");
  const many = await Promise.all(
    Array.from({ length: 16 }, (_, i) => infer(server.url, 'text_length', [{ name: 'TEXT', datatype: 'BYTES', shape: [1, 1], data: ['x'.repeat(i)] }])),
  );
  many.forEach((m, i) => assert.deepEqual((m.json.outputs as { data: number[] }[])[0]!.data, [i]));
});

test('an exception in execute fails the batch with the model named and the Python error', async () => {
  const r = await infer(server.url, 'exec_error', [vec('INPUT0', [1])]);
  assert.equal(r.status, 500);
  const msg = String(r.json.error);
  assert.ok(msg.startsWith("Failed to process the request(s) for model 'exec_error_0', message: NameError: name 'undefined_in_execute' is not defined"), msg);
  assert.match(msg, /At:\n {2}\S*exec_error\/1\/model\.py\(3\): execute\n$/);
});

test("the exception in execute is logged once, with the traceback at the author's model.py line", async () => {
  const r = await infer(server.url, 'exec_error', [vec('INPUT0', [2])]);
  assert.equal(r.status, 500);
  const text = await waitForOutput(
    server,
    /^E.*Failed to process the request\(s\) for model 'exec_error_0'.*\n(?:.*\n){0,6}.*exec_error\/1\/model\.py\(3\): execute/m,
  );
  assert.match(text, /NameError: name 'undefined_in_execute' is not defined/);
  const before = server.output().split("Failed to process the request(s) for model 'exec_error_0'").length;
  await infer(server.url, 'exec_error', [vec('INPUT0', [3])]);
  await waitForOutput(server, new RegExp(`(?:Failed to process the request\\(s\\) for model 'exec_error_0'[^]*){${before}}`));
  await sleep(200);
  assert.equal(server.output().split("Failed to process the request(s) for model 'exec_error_0'").length, before + 1, 'one log record per failed execution');
});

test('print() and stderr of a model reach the server log a line each, prefixed with the model and instance, at info and warn; pb_utils.Logger keeps its level', async () => {
  assert.match(server.output(), /^I.*"model 'printer' instance 'printer_0': printer says hello from initialize"/m);
  const r = await infer(server.url, 'printer', [vec('INPUT0', [4, 5])]);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  await waitForOutput(server, /^I.*"model 'printer' instance 'printer_0': printer got 1 request\(s\)"/m);
  await waitForOutput(server, /^W.*"model 'printer' instance 'printer_0': printer warns on stderr"/m);
  await waitForOutput(server, /^W.*model\.py:\d+\] "printer logs a warning through pb_utils.Logger"/m);
});

test("GET /v2/nodetron/models/<model>/log: the model's own lines (its load, what its stub printed and logged), each numbered; ?after= gives only newer ones; an unknown model is 404", async () => {
  type Log = { model: string; lines: { seq: number; text: string }[] };
  const logOf = async (model: string, after?: number): Promise<Log> => {
    const res = await fetch(`${server.url}/v2/nodetron/models/${model}/log${after === undefined ? '' : `?after=${after}`}`);
    assert.equal(res.status, 200);
    return (await res.json()) as Log;
  };
  const first = await logOf('printer');
  const texts = first.lines.map((l) => l.text).join('\n');
  assert.match(texts, /loading: printer:1/);
  assert.match(texts, /printer says hello from initialize/);
  assert.match(texts, /successfully loaded 'printer'/);
  assert.doesNotMatch(texts, /text_length|add_vectors/, "only this model's lines");
  const last = first.lines[first.lines.length - 1]!.seq;
  assert.ok(
    first.lines.every((l, i) => i === 0 || l.seq > first.lines[i - 1]!.seq),
    'numbered in order',
  );
  assert.equal((await infer(server.url, 'printer', [vec('INPUT0', [1])])).status, 200);
  const end = Date.now() + 5000;
  let newer: Log;
  do newer = await logOf('printer', last);
  while (!newer.lines.some((l) => /printer got 1 request/.test(l.text)) && Date.now() < end && (await sleep(50), true));
  assert.ok(newer.lines.length > 0 && newer.lines.every((l) => l.seq > last), JSON.stringify(newer));
  assert.ok(
    newer.lines.some((l) => /printer got 1 request/.test(l.text)),
    JSON.stringify(newer),
  );
  assert.ok(
    newer.lines.some((l) => /^W.*printer logs a warning through pb_utils.Logger/.test(l.text)),
    JSON.stringify(newer),
  );
  const errors = (await logOf('exec_error')).lines.map((l) => l.text).join('\n');
  assert.match(errors, /Failed to process the request\(s\) for model 'exec_error_0'[^]*exec_error\/1\/model\.py\(3\): execute/, 'the traceback, a line each');
  const unknown = await fetch(`${server.url}/v2/nodetron/models/no_such_model/log`);
  assert.equal(unknown.status, 404);
  assert.match(((await unknown.json()) as { error: string }).error, /model 'no_such_model' is not in the model repository/);
});

test('an exception in initialize leaves the model UNAVAILABLE with the Python error as reason', async () => {
  const out = server.output();
  assert.match(unwrapTables(out), /\| init_fail\s+\| 1\s+\| UNAVAILABLE: Internal: NameError: name 'lorem_ipsum' is not defined/);
  const r = await infer(server.url, 'init_fail', [vec('INPUT0', [1])]);
  assert.notEqual(r.status, 200);
});

test('a stub killed mid-execute fails its request as not healthy, and the instance comes back', async () => {
  const before = /python stub process for instance crash_0 started \(pid (\d+)\)/.exec(server.output());
  assert.ok(before, 'the spawn log line names the pid');
  const r = await infer(server.url, 'crash', [vec('INPUT0', [1, 2])]);
  assert.equal(r.status, 500);
  assert.equal(r.json.error, "Stub process 'crash_0' is not healthy.");
  let ok = false;
  for (let i = 0; i < 100 && !ok; i++) {
    const again = await infer(server.url, 'crash', [vec('INPUT0', [5, 6])]);
    ok = again.status === 200;
    if (ok) assert.deepEqual((again.json.outputs as { data: number[] }[])[0]!.data, [5, 6]);
    else await sleep(100);
  }
  assert.ok(ok, 'the instance serves again after the restart');
  assert.match(server.output(), /instance crash_0 of model 'crash' restarted \(pid \d+\)/);
  // The console's instance health counts the restart (GET /v2/nodetron/status).
  const status = (await (await fetch(`${server.url}/v2/nodetron/status`)).json()) as {
    instances: { model: string; instances: { name: string; restarts: number; unready?: string }[] }[];
  };
  const crash = status.instances.find((v) => v.model === 'crash')?.instances.find((i) => i.name === 'crash_0');
  assert.ok(crash !== undefined && crash.restarts >= 1 && crash.unready === undefined, JSON.stringify(crash));
  const live = await fetch(`${server.url}/v2/health/live`);
  assert.equal(live.status, 200);
});

test('a decoupled model sends N responses through BLS and the scheduler', async () => {
  const r = await infer(server.url, 'bls_repeat', [{ name: 'IN', datatype: 'INT32', shape: [4], data: [4, 2, 0, 1] }]);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const by = Object.fromEntries((r.json.outputs as { name: string; data: number[] }[]).map((o) => [o.name, o.data]));
  assert.deepEqual(by['COUNT'], [4]);
  assert.deepEqual(by['SUM'], [7]);
  assert.deepEqual(by['IDXS'], [0, 1, 2, 3]);
  const empty = await infer(server.url, 'bls_repeat', [{ name: 'IN', datatype: 'INT32', shape: [0], data: [] }]);
  assert.deepEqual(Object.fromEntries((empty.json.outputs as { name: string; data: number[] }[]).map((o) => [o.name, o.data]))['COUNT'], [0]);
});

test('HTTP refuses the decoupled model itself with 501', async () => {
  const r = await infer(server.url, 'repeat_py', [{ name: 'IN', datatype: 'INT32', shape: [1], data: [1] }]);
  assert.equal(r.status, 501);
});

test('async BLS into another model, and a BLS error for an unknown model', async () => {
  const name = (n: string) => ({ name: 'MODEL_NAME', datatype: 'BYTES', shape: [1], data: [n] });
  const r = await infer(server.url, 'bls_add', [name('add_vectors'), vec('INPUT0', [1, 2]), vec('INPUT1', [3, 4])]);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.deepEqual((r.json.outputs as { data: number[] }[])[0]!.data, [4, 6]);
  const bad = await infer(server.url, 'bls_add', [name('nope'), vec('INPUT0', [1]), vec('INPUT1', [3])]);
  assert.equal(bad.status, 500);
  assert.match(String(bad.json.error), /TritonModelException: Model nope - Error when running inference: Request for unknown model: 'nope' is not found/);
});

test('shared-memory files have no names while stubs run', () => {
  assert.deepEqual(shmFilesOf(server.child.pid), []);
});
