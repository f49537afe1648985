/**
 * Stops a fleet can rely on, through the real server process (real Python
 * stubs, real HTTP and gRPC clients): SIGTERM under steady traffic turns
 * readiness non-200 at once, keeps serving through the grace period, then
 * exits 0 within --exit-timeout-secs with no stub process left; an idle
 * server stops after its quiet second, not after the timeout; a request held
 * past the timeout is cut and the process exits 1 with Triton's text, never
 * by a native abort (134/139); a second signal stops at once;
 * --exit-timeout-secs=0 stops an idle server at once, exit 0.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { infer } from '../../src/client/kserve-http-client';
import { createClient, int32Bytes } from './grpc-test-client';
import { MODEL_REPOSITORY, REPO_ROOT, startServer, untilPending, waitForOutput, type ServerProcess } from './server-process';

let repo: string;
let gate: string;

before(() => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-stop-'));
  for (const m of ['simple', 'add_vectors']) fs.cpSync(path.join(MODEL_REPOSITORY, m), path.join(repo, m), { recursive: true });
  fs.cpSync(path.join(REPO_ROOT, 'test/integration/fixtures/scheduling_models/gated'), path.join(repo, 'gated'), { recursive: true });
  gate = path.join(repo, 'gated', 'closed');
});

after(() => {
  fs.rmSync(repo, { recursive: true, force: true });
});

/** Python stub processes of the server `pid` (their argv names it as parent_pid). */
function stubPids(pid: number): number[] {
  const out: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let cmd = '';
    try {
      cmd = fs.readFileSync(`/proc/${entry}/cmdline`, 'latin1');
    } catch {
      continue; // gone meanwhile
    }
    if (cmd.includes('stub_main.py') && cmd.includes(`"parent_pid":${pid}`)) out.push(Number(entry));
  }
  return out;
}

/** /dev/shm files of the server `pid`'s stubs (python-backend/shm-region.ts names them). */
function shmFiles(pid: number): string[] {
  return fs.readdirSync(process.env.NODETRON_SHM_DIR ?? '/dev/shm').filter((f) => f.startsWith(`nodetron_${pid}_`));
}

/** Running (not a zombie that its reaper has not collected yet). */
function alive(pid: number): boolean {
  try {
    return !/\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, 'latin1'));
  } catch {
    return false;
  }
}

function exited(server: ServerProcess, ms: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    if (server.child.exitCode !== null) return resolve(server.child.exitCode);
    const timer = setTimeout(() => {
      server.child.kill('SIGKILL');
      reject(new Error(`the server did not exit within ${ms} ms:\n${server.output().slice(-4000)}`));
    }, ms);
    server.child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

const SIMPLE = [
  { name: 'INPUT0', datatype: 'INT32' as const, shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
  { name: 'INPUT1', datatype: 'INT32' as const, shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
];
const ADD = [
  { name: 'INPUT0', datatype: 'FP32' as const, shape: [4], data: [1, 2, 3, 4] },
  { name: 'INPUT1', datatype: 'FP32' as const, shape: [4], data: [1, 1, 1, 1] },
];

interface Outcome {
  what: string;
  sentAt: number;
  /** HTTP status or `grpc <code>`, or the socket error's code. */
  result: string;
  error?: string;
}

/** A client error as the socket saw it (refused once the listener closed, reset when a connection closed). */
function socketError(err: unknown): string {
  const e = err as { cause?: { code?: string }; code?: string };
  return e.cause?.code ?? e.code ?? String(err);
}

test('SIGTERM under steady HTTP + gRPC traffic: ready non-200 at once, requests keep succeeding through the grace period, exit 0 in time, no stub left', async () => {
  const server = await startServer([
    `--model-repository=${repo}`,
    '--allow-grpc=true',
    '--grpc-port=0',
    '--grpc-address=127.0.0.1',
    '--exit-timeout-secs=6',
    '--allow-metrics=false',
  ]);
  const stubs = stubPids(server.child.pid!);
  assert.ok(stubs.length >= 2, `the Python models have their stubs (${stubs.length})`);
  const client = createClient(server.grpcPort);
  const outcomes: Outcome[] = [];
  const probes: { sentAt: number; status: number | string; error?: string }[] = [];
  let running = true;
  const httpLoop = async (model: string, inputs: typeof SIMPLE | typeof ADD): Promise<void> => {
    while (running) {
      const sentAt = Date.now();
      try {
        const r = await infer(server.url, model, inputs);
        outcomes.push({ what: `HTTP ${model}`, sentAt, result: String(r.status), error: r.json.error as string | undefined });
      } catch (err) {
        outcomes.push({ what: `HTTP ${model}`, sentAt, result: socketError(err) });
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };
  const grpcLoop = async (): Promise<void> => {
    while (running) {
      const sentAt = Date.now();
      const result = await client
        .call('ModelInfer', {
          model_name: 'simple',
          inputs: SIMPLE.map(({ name, datatype, shape }) => ({ name, datatype, shape })),
          raw_input_contents: SIMPLE.map((t) => int32Bytes(t.data)),
        })
        .then(
          () => 'grpc 0',
          (e: grpc.ServiceError) => `grpc ${e.code}`,
        );
      outcomes.push({ what: 'GRPC simple', sentAt, result });
      if (result !== 'grpc 0') await new Promise((r) => setTimeout(r, 20));
    }
  };
  const probeLoop = async (): Promise<void> => {
    while (running) {
      const sentAt = Date.now();
      try {
        const res = await fetch(`${server.url}/v2/health/ready`);
        const text = await res.text();
        probes.push({ sentAt, status: res.status, error: text === '' ? undefined : (JSON.parse(text) as { error: string }).error });
      } catch (err) {
        probes.push({ sentAt, status: socketError(err) });
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const loops = [httpLoop('simple', SIMPLE), httpLoop('add_vectors', ADD), grpcLoop(), probeLoop()];
  try {
    await new Promise((r) => setTimeout(r, 500));
    const signalAt = Date.now();
    server.child.kill('SIGTERM');
    const code = await exited(server, 15_000);
    const exitedAfter = Date.now() - signalAt;
    running = false;
    await Promise.all(loops);
    const log = server.output();

    assert.equal(code, 0, log.slice(-4000));
    assert.ok(exitedAfter < 6000, `exited ${exitedAfter} ms after SIGTERM, within --exit-timeout-secs=6`);
    assert.ok(
      probes.some((p) => p.sentAt < signalAt && p.status === 200),
      'ready before the signal',
    );
    // The signal reaches the server and its HTTP thread within a few ms; 300 ms is slack for a loaded machine.
    const after = probes.filter((p) => p.sentAt > signalAt + 300);
    assert.ok(after.length > 0);
    for (const p of after) assert.notEqual(p.status, 200, 'readiness is non-200 from the signal on');
    assert.ok(
      after.some((p) => p.status === 503 && p.error === 'Server exiting'),
      "Triton's 503 'Server exiting' while still serving",
    );

    // The grace period: 3 s of the 6 (stop-plan.ts) while traffic goes on. Requests sent in
    // its first 2 s all succeed, on every protocol and model.
    const inGrace = outcomes.filter((o) => o.sentAt > signalAt + 300 && o.sentAt < signalAt + 2000);
    for (const what of ['HTTP simple', 'HTTP add_vectors', 'GRPC simple']) {
      const mine = inGrace.filter((o) => o.what === what);
      assert.ok(mine.length > 0, `${what} sent during the grace period`);
      for (const o of mine) assert.ok(o.result === '200' || o.result === 'grpc 0', `${what} during the grace period: ${JSON.stringify(o)}`);
    }
    // After it: refused with Triton's text, or at the socket (listener closed) — never another error.
    for (const o of outcomes) {
      const ok =
        ['200', 'grpc 0', 'grpc 14', 'ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET'].includes(o.result) || (o.result === '503' && o.error === 'Server exiting');
      assert.ok(ok, `unexpected answer: ${JSON.stringify(o)}`);
    }
    for (const line of ['Waiting for in-flight requests to complete.', 'All models are stopped, unloading models']) assert.ok(log.includes(line), line);
    assert.match(log, /Timeout \d+: Found 0 live models and 0 in-flight non-inference requests/);
    assert.deepEqual(stubs.filter(alive), [], 'every stub process ended with the server');
    assert.deepEqual(shmFiles(server.child.pid!), [], 'no /dev/shm file left');
  } finally {
    running = false;
    client.close();
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  }
});

test('SIGTERM on an idle server: it stops after its quiet second, not after --exit-timeout-secs (30)', async () => {
  const server = await startServer([`--model-repository=${repo}`, '--allow-metrics=false']);
  const signalAt = Date.now();
  server.child.kill('SIGTERM');
  const code = await exited(server, 15_000);
  assert.equal(code, 0, server.output().slice(-3000));
  assert.ok(Date.now() - signalAt < 10_000, 'well before the 30 s timeout');
  assert.match(server.output(), /Closing the endpoints: no inference in flight and none received for 1000 ms \(--exit-quiet-ms\)/);
});

test("a request held past --exit-timeout-secs is cut: the process ends by itself with exit 1 and Triton's text, not a crash; no stub left", async () => {
  const server = await startServer([`--model-repository=${repo}`, '--exit-timeout-secs=2']);
  const stubs = stubPids(server.child.pid!);
  fs.writeFileSync(gate, '');
  try {
    const held = infer(server.url, 'gated', [{ name: 'IN', datatype: 'INT32', shape: [1, 1], data: [0] }]).then(
      (r) => String(r.status),
      (err: unknown) => socketError(err),
    );
    await untilPending(server, 'gated', 1); // admitted; the gate holds it
    server.child.kill('SIGTERM');
    const code = await exited(server, 15_000);
    const log = server.output();
    assert.equal(code, 1, log.slice(-4000));
    assert.match(log, /error: failed to stop server: Internal - Exit timeout expired\. Exiting immediately\./);
    assert.match(log, /1 request\(s\) still in flight when the endpoints had to close were cut \(--exit-timeout-secs=2\)/);
    assert.notEqual(await held, '200', 'the held request was cut');
    assert.deepEqual(stubs.filter(alive), [], 'the stubs were killed, not left behind');
    assert.deepEqual(shmFiles(server.child.pid!), [], 'no /dev/shm file left');
  } finally {
    fs.rmSync(gate, { force: true });
  }
});

/** One GET on `agent` (keep-alive: a connection it already has is reused): status, body, Connection header; or the socket error. */
function get(port: number, p: string, agent: http.Agent | false): Promise<{ status: number; body: string; connection: string } | string> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, agent }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, connection: String(res.headers.connection) }));
    });
    req.on('error', (err) => resolve(socketError(err)));
  });
}

test('a request held through the whole grace period is still answered; meanwhile, once the endpoints close, a new connection is refused and a kept-alive one gets 503 + Connection: close', async () => {
  // One HTTP thread: each thread closes its idle connections as soon as it has nothing in flight, so the
  // kept-alive connection must share the thread of the held request (simple's instances would otherwise keep a second one).
  const server = await startServer([`--model-repository=${repo}`, '--exit-timeout-secs=6', '--http-thread-count=1']);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  fs.writeFileSync(gate, '');
  try {
    assert.deepEqual(
      await get(server.port, '/v2/health/live', agent),
      { status: 200, body: '', connection: 'undefined' },
      'a kept-alive connection (HTTP/1.1)',
    );
    const held = infer(server.url, 'gated', [{ name: 'IN', datatype: 'INT32', shape: [1, 1], data: [0] }]);
    await untilPending(server, 'gated', 1);
    server.child.kill('SIGTERM');
    // In flight: served on until the grace period ends (3 s of 6), then the endpoints close.
    await waitForOutput(server, /Closing the endpoints: the grace period is over/, 10_000);
    assert.deepEqual(
      await get(server.port, '/v2/health/ready', agent),
      { status: 503, body: '{"error":"Server exiting"}', connection: 'close' },
      'the open connection: refused and closed',
    );
    assert.equal(await get(server.port, '/v2/health/ready', false), 'ECONNREFUSED', 'a new connection: the listener is closed');
    fs.rmSync(gate);
    const r = await held;
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(await exited(server, 15_000), 0, server.output().slice(-3000));
  } finally {
    agent.destroy();
    fs.rmSync(gate, { force: true });
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  }
});

test('a second SIGTERM stops at once: exit 1, no stub left', async () => {
  const server = await startServer([`--model-repository=${repo}`]);
  const stubs = stubPids(server.child.pid!);
  fs.writeFileSync(gate, '');
  try {
    const held = infer(server.url, 'gated', [{ name: 'IN', datatype: 'INT32', shape: [1, 1], data: [0] }]).then(
      (r) => String(r.status),
      (err: unknown) => socketError(err),
    );
    await untilPending(server, 'gated', 1);
    server.child.kill('SIGTERM');
    await waitForOutput(server, /Waiting for in-flight requests to complete/);
    const secondAt = Date.now();
    server.child.kill('SIGTERM');
    const code = await exited(server, 15_000);
    assert.equal(code, 1, server.output().slice(-3000));
    assert.ok(Date.now() - secondAt < 5000, 'promptly, not after the 30 s timeout');
    assert.match(server.output(), /error: second signal received, exiting immediately/);
    assert.notEqual(await held, '200');
    assert.deepEqual(stubs.filter(alive), []);
  } finally {
    fs.rmSync(gate, { force: true });
  }
});

test('--exit-timeout-secs=0: an idle server closes and unloads at once, exit 0', async () => {
  const server = await startServer([`--model-repository=${repo}`, '--exit-timeout-secs=0', '--allow-metrics=false']);
  const stubs = stubPids(server.child.pid!);
  const signalAt = Date.now();
  server.child.kill('SIGTERM');
  const code = await exited(server, 15_000);
  assert.equal(code, 0, server.output().slice(-3000));
  assert.ok(Date.now() - signalAt < 5000);
  assert.deepEqual(stubs.filter(alive), []);
});

test('SIGTERM while the models load is kept: the server finishes starting, then stops (exit 0), as Triton does', async () => {
  const slow = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-stop-slow-'));
  try {
    fs.mkdirSync(path.join(slow, 'slow_init', '1'), { recursive: true });
    fs.writeFileSync(
      path.join(slow, 'slow_init', 'config.pbtxt'),
      `backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`,
    );
    fs.writeFileSync(
      path.join(slow, 'slow_init', '1', 'model.py'),
      `import time
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        time.sleep(1.5)

    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.get_input_tensor_by_name(r, "IN")]) for r in requests]
`,
    );
    const child = spawn(
      process.execPath,
      [path.join(REPO_ROOT, 'dist/src/cli.js'), `--model-repository=${slow}`, '--http-port=0', '--allow-grpc=false', '--allow-metrics=false'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const server = { output: () => out };
    await waitForOutput(server, /python stub process for instance slow_init\S* started/, 30_000);
    child.kill('SIGTERM'); // initialize() is still sleeping
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    assert.equal(await code, 0, out.slice(-3000));
    clearTimeout(timer);
    assert.ok(out.indexOf('Started HTTPService') < out.indexOf('Waiting for in-flight requests to complete.'), 'the stop began once the server was up');
    assert.ok(out.includes("successfully loaded 'slow_init'"));
  } finally {
    fs.rmSync(slow, { recursive: true, force: true });
  }
});
