/**
 * The gRPC thread (`nt:grpc`) through the real server and a real grpc-js
 * client: control rpcs forwarded to the main thread answer right (their
 * request, their metadata, their texts) while inferences run concurrently
 * on the same connection; and a gRPC thread that dies
 * (NODETRON_TEST_FAULTS=grpc-crash) while a request it admitted waits in the
 * scheduler is logged, swept (the tensor arena back at its baseline) and
 * replaced on the same port; and SIGTERM stops it gracefully: a call in
 * flight is answered, an idle stream is ended, the process exits 0.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { createClient, int32Bytes, int32Values } from './grpc-test-client';
import { MODEL_REPOSITORY, REPO_ROOT, startServer, waitForOutput } from './server-process';
import type { ServerProcess } from './server-process';

let server: ServerProcess;
let repo: string;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-grpc-thread-'));
  fs.cpSync(path.join(MODEL_REPOSITORY, 'simple'), path.join(repo, 'simple'), { recursive: true });
  fs.cpSync(path.join(REPO_ROOT, 'test/integration/fixtures/scheduling_models/gated'), path.join(repo, 'gated'), { recursive: true });
  process.env.NODETRON_TEST_FAULTS = 'grpc-crash';
  server = await startServer([
    `--model-repository=${repo}`,
    '--allow-grpc=true',
    '--grpc-port=0',
    '--grpc-address=127.0.0.1',
    '--http-thread-count=1',
    '--allow-metrics=true',
    '--metrics-port=0',
    '--grpc-restricted-protocol=statistics:admin-key=secret',
  ]);
  delete process.env.NODETRON_TEST_FAULTS;
});

after(async () => {
  fs.rmSync(path.join(repo, 'gated', 'closed'), { force: true });
  assert.equal(await server.stop(), 0, server.output().slice(-3000));
  fs.rmSync(repo, { recursive: true, force: true });
});

const in0 = Array.from({ length: 16 }, (_, i) => i);
const in1 = Array.from({ length: 16 }, () => 1);

function simpleRequest(id: string): object {
  return {
    model_name: 'simple',
    id,
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
    ],
    raw_input_contents: [int32Bytes(in0), int32Bytes(in1)],
  };
}

function admin(): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set('triton-grpc-protocol-admin-key', 'secret');
  return md;
}

async function failure(p: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as grpc.ServiceError;
    return { code: e.code, details: e.details };
  }
  throw new Error('the call succeeded');
}

async function until(cond: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${server.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function metricsText(): Promise<string> {
  return (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
}

test('control rpcs forwarded to the main thread answer their own call while inferences run concurrently', async () => {
  const client = createClient(server.grpcPort);
  try {
    let stop = false;
    let inferred = 0;
    // 16 closed loops of ModelInfer on the same channel as the control calls.
    const loops = Array.from({ length: 16 }, async (_, k) => {
      for (let i = 0; !stop; i++) {
        const id = `${k}-${i}`;
        const res = await client.call<Record<string, any>>('ModelInfer', simpleRequest(id));
        assert.equal(res.id, id);
        assert.deepEqual(
          int32Values(res.raw_output_contents[0]),
          in0.map((v) => v + 1),
        );
        inferred++;
      }
    });
    const restricted = "This protocol is restricted, expecting header 'triton-grpc-protocol-admin-key'";
    for (let round = 0; round < 20; round++) {
      // Different rpcs, different answers, all in flight at once: each must get its own.
      const [stats, unknown, denied, index, shm, log, trace, ready] = await Promise.all([
        client.call<{ model_stats: Record<string, any>[] }>('ModelStatistics', { name: 'simple' }, admin()),
        failure(client.call('ModelStatistics', { name: 'nope' }, admin())),
        failure(client.call('ModelStatistics', { name: 'simple' })),
        client.call<{ models: Record<string, string>[] }>('RepositoryIndex', { ready: true }),
        failure(client.call('SystemSharedMemoryStatus', { name: `region-${round}` })),
        client.call<{ settings: Record<string, Record<string, unknown>> }>('LogSettings', {}),
        client.call<{ settings: Record<string, { value: string[] }> }>('TraceSetting', { model_name: 'simple' }),
        client.call('ModelReady', { name: 'simple', version: '' }),
      ]);
      assert.deepEqual(
        stats.model_stats.map((m) => [m.name, m.version]),
        [['simple', '1']],
      );
      assert.deepEqual(unknown, { code: grpc.status.INVALID_ARGUMENT, details: "requested model 'nope' is not available" });
      assert.deepEqual(denied, { code: grpc.status.UNAVAILABLE, details: restricted });
      assert.deepEqual(
        index.models.map((m) => m.name),
        ['gated', 'simple'],
      );
      assert.deepEqual(shm, { code: grpc.status.NOT_FOUND, details: `Unable to find system shared memory region: 'region-${round}'` });
      assert.equal(log.settings.log_info.bool_param, true);
      assert.ok(Array.isArray(trace.settings.trace_level.value));
      assert.deepEqual(ready, { ready: true });
    }
    stop = true;
    await Promise.all(loops);
    assert.ok(inferred > 0, 'inferences ran beside the control calls');
    // Counted by the main thread's statistics: every inference above succeeded.
    const { model_stats } = await client.call<{ model_stats: Record<string, any>[] }>('ModelStatistics', { name: 'simple' }, admin());
    assert.ok(Number(model_stats[0].inference_stats.success.count) >= inferred);
  } finally {
    client.close();
  }
});

test('a gRPC thread that dies is logged, its arena blocks swept, and it is replaced on the same port', async () => {
  const baseline = await server.arenaUsedBytes();
  const client = createClient(server.grpcPort);
  // A request the thread admitted, held in the gated model while the thread dies.
  fs.writeFileSync(path.join(repo, 'gated', 'closed'), '');
  const held = failure(
    client.call('ModelInfer', {
      model_name: 'gated',
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [1, 1] }],
      raw_input_contents: [int32Bytes([7])],
    }),
  );
  await until(async () => /nv_inference_pending_request_count\{model="gated",version="1"\} 1/.test(await metricsText()), 'the gated request to be admitted');
  assert.ok((await server.arenaUsedBytes()) > baseline, "the held request's inputs are in the arena");

  const md = new grpc.Metadata();
  md.set('nodetron-test-crash', '1');
  const crash = await failure(client.call('ServerLive', {}, md));
  assert.equal(crash.code, grpc.status.UNAVAILABLE, crash.details);
  const out = await waitForOutput(server, /GRPC thread restarted, listening on port \d+/, 10_000);
  assert.match(out, /GRPC thread died: Error: fault injected: ServerLive with nodetron-test-crash/);
  assert.match(out, /1 request\(s\) it had in flight fail with it/);
  assert.equal((await held).code, grpc.status.UNAVAILABLE, 'the held call ends with the connection, unanswered');
  client.close();
  // The sweep freed the inputs the dead thread admitted (the model has copied them already).
  assert.equal(await server.arenaUsedBytes(), baseline);

  // The replacement serves on the same port.
  const again = createClient(server.grpcPort);
  try {
    const res = await again.call<Record<string, any>>('ModelInfer', simpleRequest('after'));
    assert.deepEqual(
      int32Values(res.raw_output_contents[1]),
      in0.map((v) => v - 1),
    );
    assert.deepEqual(await again.call('ServerReady', {}), { ready: true });

    // The held request finishes in the model; its outputs, given to nobody, go back to the arena.
    fs.rmSync(path.join(repo, 'gated', 'closed'));
    await until(async () => /nv_inference_request_success\{model="gated",version="1"\} 1/.test(await metricsText()), 'the held request to finish');
    await until(async () => (await server.arenaUsedBytes()) === baseline, 'the arena to be back at its baseline');
    assert.equal((await again.call<Record<string, any>>('ModelInfer', simpleRequest('last'))).id, 'last');
  } finally {
    again.close();
  }
});

test('repeated deaths are each followed by a replacement', async () => {
  for (let i = 0; i < 3; i++) {
    const before = (server.output().match(/GRPC thread restarted/g) ?? []).length;
    const c = createClient(server.grpcPort);
    const md = new grpc.Metadata();
    md.set('nodetron-test-crash', '1');
    await failure(c.call('ServerLive', {}, md));
    c.close();
    await waitForOutput(server, new RegExp(`(GRPC thread restarted[^]*){${before + 1}}`), 15_000);
    const d = createClient(server.grpcPort);
    try {
      assert.equal((await d.call<Record<string, any>>('ModelInfer', simpleRequest(`r${i}`))).id, `r${i}`);
    } finally {
      d.close();
    }
  }
});

test('SIGTERM: the gRPC thread answers the call in flight, ends an idle stream, and the server exits 0', async () => {
  const own = await startServer([
    `--model-repository=${repo}`,
    '--allow-grpc=true',
    '--grpc-port=0',
    '--grpc-address=127.0.0.1',
    '--http-thread-count=1',
    '--allow-metrics=false',
  ]);
  const client = createClient(own.grpcPort);
  try {
    fs.writeFileSync(path.join(repo, 'gated', 'closed'), '');
    const held = client.call<Record<string, any>>('ModelInfer', {
      model_name: 'gated',
      id: 'held',
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [1, 1] }],
      raw_input_contents: [int32Bytes([7])],
    });
    const stream = client.inference.ModelStreamInfer() as grpc.ClientDuplexStream<object, unknown>;
    const streamEnded = new Promise<string>((resolve) => {
      stream.on('data', () => undefined);
      stream.on('end', () => resolve('end'));
      stream.on('error', (e: grpc.ServiceError) => resolve(`error ${e.code}`));
    });
    stream.write(simpleRequest('s1')); // answered; then the stream sits idle
    await until(async () => /Started GRPCInferenceService/.test(own.output()), 'the server');
    await new Promise((r) => setTimeout(r, 300));
    const exited = new Promise<number | null>((resolve) => own.child.once('exit', resolve));
    own.child.kill('SIGTERM');
    await waitForOutput(own, /Waiting for in-flight requests to complete/, 10_000);
    // The grace period: the call in flight keeps the server serving; once it
    // is answered and the traffic is quiet, the endpoints close.
    fs.rmSync(path.join(repo, 'gated', 'closed'));
    const res = await held;
    assert.equal(res.id, 'held');
    assert.deepEqual(int32Values(res.raw_output_contents[0]), [0]);
    assert.equal(await streamEnded, 'end', 'the idle stream is ended by the stop, with OK');
    assert.equal(await exited, 0, own.output().slice(-3000));
  } finally {
    fs.rmSync(path.join(repo, 'gated', 'closed'), { force: true });
    client.close();
    if (own.child.exitCode === null) own.child.kill('SIGKILL');
  }
});
