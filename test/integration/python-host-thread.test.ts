/**
 * The Python backend's host side runs off the main thread: each instance has
 * its own thread (`nt:py-<instance>`, seen in the server's thread names),
 * and the stub is that thread's child. A stub SIGKILLed from outside while
 * it runs a batch, with the next batch already handed over (pipelining,
 * process-instance.ts), fails both with Triton's "not healthy" text; a new
 * thread and stub take over and serve. An output that is a view of its
 * input is not copied through the stub's s2h region. Real server, real
 * Python stubs.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { startServer, waitForOutput } from './server-process';
import type { ServerProcess } from './server-process';

let server: ServerProcess;
let repo: string;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-py-thread-'));
  fs.mkdirSync(path.join(repo, 'slowid', '1'), { recursive: true });
  fs.writeFileSync(
    path.join(repo, 'slowid', 'config.pbtxt'),
    [
      'backend: "python"',
      'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]',
      'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]',
    ].join('\n'),
  );
  fs.writeFileSync(
    path.join(repo, 'slowid', '1', 'model.py'),
    [
      '"""Echo; sleeps INPUT0[0] seconds first when it is positive."""',
      'import time',
      'import triton_python_backend_utils as pb_utils',
      'class TritonPythonModel:',
      '    def execute(self, requests):',
      '        out = []',
      '        for r in requests:',
      '            x = pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()',
      '            if x.size > 0 and x[0] > 0:',
      '                time.sleep(float(x[0]))',
      '            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", x.copy())]))',
      '        return out',
    ].join('\n'),
  );
  fs.mkdirSync(path.join(repo, 'viewid', '1'), { recursive: true });
  fs.writeFileSync(path.join(repo, 'viewid', 'config.pbtxt'), fs.readFileSync(path.join(repo, 'slowid', 'config.pbtxt')));
  fs.writeFileSync(
    path.join(repo, 'viewid', '1', 'model.py'),
    [
      '"""Returns a view of its input (a slice: no copy in Python)."""',
      'import triton_python_backend_utils as pb_utils',
      'class TritonPythonModel:',
      '    def execute(self, requests):',
      '        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()[1:])])',
      '                for r in requests]',
    ].join('\n'),
  );
  server = await startServer([`--model-repository=${repo}`]);
});

after(async () => {
  assert.equal(await server.stop(), 0);
  fs.rmSync(repo, { recursive: true, force: true });
});

/** tid → name of every thread of the server process. */
function threads(): Map<number, string> {
  const pid = server.child.pid!;
  const out = new Map<number, string>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      out.set(Number(tid), fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim());
    } catch {
      // ended meanwhile
    }
  }
  return out;
}

function hostThreadIds(): number[] {
  return [...threads()].filter(([, name]) => name === 'nt:py-slowid_0').map(([tid]) => tid);
}

function stubPids(instance = 'slowid_0'): number[] {
  const re = new RegExp(`python stub process for instance ${instance} started \\(pid (\\d+)\\)`, 'g');
  return [...server.output().matchAll(re)].map((m) => Number(m[1]));
}

/** Bytes of the stub's s2h region (its fd 6, stub-process.ts), which the stub grows when it copies an output in. */
function s2hBytes(pid: number): number {
  return fs.statSync(`/proc/${pid}/fd/6`).size;
}

function parentOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

const vec = (data: number[]) => [{ name: 'INPUT0', datatype: 'FP32', shape: [data.length], data }];

test('each Python instance has its own host thread, and its stub is a child of the server', async () => {
  const r = await infer(server.url, 'slowid', vec([0, 2, 3]));
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.equal(hostThreadIds().length, 1, `threads: ${[...threads().values()].join(', ')}`);
  await waitForOutput(server, /python stub process for instance slowid_0 started/);
  const [pid] = stubPids();
  assert.ok(pid !== undefined, 'the spawn log line names the stub pid');
  assert.equal(parentOf(pid), server.child.pid);
});

test('a stub killed mid-batch fails that batch and the one queued behind it, then a new host serves', async () => {
  const [oldTid] = hostThreadIds();
  const [oldPid] = stubPids();
  const running = infer(server.url, 'slowid', vec([2, 1]));
  const queued = infer(server.url, 'slowid', vec([0.01, 7]));
  await new Promise((r) => setTimeout(r, 500));
  process.kill(oldPid!, 'SIGKILL');
  for (const r of await Promise.all([running, queued])) {
    assert.equal(r.status, 500, JSON.stringify(r.json));
    assert.equal(r.json.error, "Stub process 'slowid_0' is not healthy.");
  }
  await waitForOutput(server, /instance slowid_0 of model 'slowid' restarted \(pid \d+\)/, 20_000);
  const again = await infer(server.url, 'slowid', vec([0, 5]));
  assert.equal(again.status, 200, JSON.stringify(again.json));
  assert.deepEqual((again.json.outputs as { data: number[] }[])[0]!.data, [0, 5]);
  let tids = hostThreadIds();
  for (let i = 0; i < 100 && tids.length !== 1; i++) {
    await new Promise((r) => setTimeout(r, 50));
    tids = hostThreadIds();
  }
  assert.equal(tids.length, 1, 'the old host thread ended');
  assert.notEqual(tids[0], oldTid, 'a new host thread runs the new stub');
  assert.match(server.output(), /process \d+ killed by SIGKILL; restarting it/);
});

test('an output that is a view of its own input (above the inline size) is not copied into s2h; a copied one is', async () => {
  await waitForOutput(server, /python stub process for instance viewid_0 started/);
  const data = Array.from({ length: 400_000 }, (_, i) => i % 1000);
  const view = await infer(server.url, 'viewid', vec(data));
  assert.equal(view.status, 200, JSON.stringify(view.json).slice(0, 300));
  const out = (view.json.outputs as { data: number[]; shape: number[] }[])[0]!;
  assert.deepEqual(out.shape, [data.length - 1]);
  assert.deepEqual(out.data, data.slice(1), 'the slice read back from the input region');
  assert.equal(s2hBytes(stubPids('viewid_0').at(-1)!), 1024 * 1024, 's2h kept its default size: nothing was copied in');
  const copied = await infer(server.url, 'slowid', vec(data));
  assert.equal(copied.status, 200);
  assert.deepEqual((copied.json.outputs as { data: number[] }[])[0]!.data, data);
  assert.ok(s2hBytes(stubPids().at(-1)!) > data.length * 4, 'x.copy() went through s2h, which grew');
});
