/**
 * "No hop for tiny models", through the real server: with
 * --inline-execution-max-us, simple's first instance lives on the HTTP
 * thread (no `nt:simple_0` thread of its own) and the requests that thread
 * admits run there; gRPC requests reach the same instance through the
 * scheduler; the statistics and metrics count every request once; a burst
 * loses and doubles nothing; an unload during traffic drains and a load
 * brings it back; an HTTP thread killed with the instance on it leaves the
 * instance running on a thread of its own; a model whose probe run is too
 * long keeps its threads. With the flag at 0 nothing is hosted.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { createClient, int32Bytes, int32Values, type GrpcTestClient } from './grpc-test-client';
import { MODEL_REPOSITORY, directResponses, startServer, waitForOutput, type ServerProcess } from './server-process';

let repo: string;
let server: ServerProcess;
let grpc: GrpcTestClient;

// One HTTP thread, so one instance of simple is hosted.
const HOSTED = [
  '--http-thread-count=1',
  '--allow-metrics=true',
  '--metrics-port=0',
  '--allow-grpc=true',
  '--grpc-port=0',
  '--model-control-mode=explicit',
  '--load-model=simple',
  '--load-model=image_classifier',
];

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-inline-'));
  for (const m of ['simple', 'image_classifier']) fs.cpSync(path.join(MODEL_REPOSITORY, m), path.join(repo, m), { recursive: true });
  process.env.NODETRON_TEST_FAULTS = 'http-crash';
  // image_classifier's probe (2-8 ms here) is over 1.5 ms, simple's (0.1-0.3 ms) under: only simple is hosted.
  server = await startServer([`--model-repository=${repo}`, '--inline-execution-max-us=1500', ...HOSTED]);
  delete process.env.NODETRON_TEST_FAULTS;
  grpc = createClient(server.grpcPort);
});

after(async () => {
  grpc.close();
  assert.equal(await server.stop(), 0, server.output().slice(-3000));
  fs.rmSync(repo, { recursive: true, force: true });
});

/** The OS names of the server's threads (thread-name.ts: `nt:<instance>` for an instance's own thread). */
function threadNames(pid: number): string[] {
  return fs.readdirSync(`/proc/${pid}/task`).map((t) => {
    try {
      return fs.readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim();
    } catch {
      return '';
    }
  });
}

const A = Array.from({ length: 16 }, (_, i) => i);
function simpleInputs(k: number): { name: string; datatype: string; shape: number[]; data: number[] }[] {
  return [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: A.map((v) => v + k) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(1) },
  ];
}

async function stats(model: string): Promise<{ success: number; executions: number; inferences: number }> {
  const j = (await (await fetch(`${server.url}/v2/models/${model}/stats`)).json()) as {
    model_stats: { execution_count: number; inference_count: number; inference_stats: { success: { count: number } } }[];
  };
  const s = j.model_stats[0]!;
  return { success: s.inference_stats.success.count, executions: s.execution_count, inferences: s.inference_count };
}

async function until(cond: () => Promise<boolean> | boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${server.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('simple_0 lives on the HTTP thread, simple_1 and image_classifier on threads of their own', () => {
  const names = threadNames(server.child.pid!);
  assert.ok(!names.includes('nt:simple_0'), `simple_0 must be hosted, not a thread: ${names.join(', ')}`);
  assert.ok(names.includes('nt:simple_1'), `simple_1 keeps its thread (one HTTP thread hosts one instance): ${names.join(', ')}`);
  assert.ok(names.includes('nt:image_classi'), `image_classifier's probe is too long to host: ${names.join(', ')}`);
  assert.match(
    server.output(),
    /instance image_classifier_0 of model 'image_classifier' runs on a thread of its own: its probe run took \d+ us, over --inline-execution-max-us/,
  );
  assert.match(server.output(), /instance simple_0 of model 'simple' runs on HTTP thread 0: its probe run took \d+ us \(--inline-execution-max-us\)/);
});

test('HTTP requests run inline with the right answers, counted once each in the statistics and metrics', async () => {
  const before = await stats('simple');
  const n = 200;
  const results = await Promise.all(Array.from({ length: n }, (_, k) => infer(server.url, 'simple', simpleInputs(k))));
  for (const [k, r] of results.entries()) {
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const out = (r.json as { outputs: { name: string; data: number[] }[] }).outputs;
    assert.deepEqual(
      out.find((o) => o.name === 'OUTPUT0')!.data,
      A.map((v) => v + k + 1),
    );
    assert.deepEqual(
      out.find((o) => o.name === 'OUTPUT1')!.data,
      A.map((v) => v + k - 1),
    );
  }
  await until(async () => (await stats('simple')).success === before.success + n, `${n} more successes`);
  const after = await stats('simple');
  assert.equal(after.inferences - before.inferences, n, 'each request is one inference, counted once');
  assert.ok(after.executions - before.executions <= n, 'no execution counted twice');
  const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  assert.match(metrics, new RegExp(`nv_inference_request_success\\{model="simple",version="1"\\} ${after.success}\\b`));
});

test('gRPC requests reach the hosted instance through the scheduler, and its responses go straight to the gRPC thread', async () => {
  const direct = await directResponses(server);
  for (let k = 0; k < 20; k++) {
    const res = await grpc.call<{ raw_output_contents: Buffer[]; outputs: { name: string }[] }>('ModelInfer', {
      model_name: 'simple',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
      ],
      raw_input_contents: [int32Bytes(A.map((v) => v * k)), int32Bytes(Array(16).fill(2))],
    });
    const i = res.outputs.findIndex((o) => o.name === 'OUTPUT0');
    assert.deepEqual(
      int32Values(res.raw_output_contents[i]!),
      A.map((v) => v * k + 2),
    );
  }
  // simple_0 (on the HTTP thread) and simple_1 (its own thread) both answer the gRPC thread directly.
  assert.equal((await directResponses(server)) - direct, 20);
});

test('an unload while requests arrive answers every request once, and a load serves inline again', async () => {
  let stop = false;
  const answers: number[] = [];
  const load = (async () => {
    let k = 0;
    while (!stop) {
      const r = await infer(server.url, 'simple', simpleInputs(k++));
      answers.push(r.status);
    }
  })();
  await until(() => answers.length > 20, 'traffic before the unload');
  const un = await fetch(`${server.url}/v2/repository/models/simple/unload`, { method: 'POST', body: '{}' });
  assert.equal(un.status, 200, await un.text());
  await until(() => answers.some((s) => s !== 200), 'requests refused once simple is unloaded');
  stop = true;
  await load;
  // Each request got one answer: a result while simple served, Triton's unknown-model refusal after.
  assert.ok(
    answers.every((s) => s === 200 || s === 400 || s === 404),
    `only answers or refusals: ${[...new Set(answers)].join(', ')}`,
  );
  await waitForOutput(server, /successfully unloaded 'simple' version 1/);
  const ld = await fetch(`${server.url}/v2/repository/models/simple/load`, { method: 'POST', body: '{}' });
  assert.equal(ld.status, 200, await ld.text());
  assert.ok(!threadNames(server.child.pid!).includes('nt:simple_0'), 'reloaded simple_0 is hosted again');
  const r = await infer(server.url, 'simple', simpleInputs(3));
  assert.equal(r.status, 200, JSON.stringify(r.json));
});

test('an HTTP thread that dies with an instance on it: the instance goes on, on a thread of its own', async () => {
  const crash = await fetch(`${server.url}/nodetron-test/crash`, { method: 'POST' }).then(
    (r) => r.status,
    (e: Error) => e.name,
  );
  assert.notEqual(crash, 200);
  await waitForOutput(server, /instance simple_0 of model 'simple' lost its HTTP thread; starting it on a thread of its own/, 10_000);
  await waitForOutput(server, /HTTP thread 0 restarted/, 10_000);
  await until(() => threadNames(server.child.pid!).includes('nt:simple_0'), 'simple_0 on a thread of its own');
  for (let k = 0; k < 10; k++) {
    const r = await infer(server.url, 'simple', simpleInputs(k));
    assert.equal(r.status, 200, JSON.stringify(r.json));
  }
  const res = await grpc.call<{ outputs: unknown[] }>('ModelInfer', {
    model_name: 'simple',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
    ],
    raw_input_contents: [int32Bytes(A), int32Bytes(A)],
  });
  assert.equal(res.outputs.length, 2);
});

test('--inline-execution-max-us=0 hosts nothing', async () => {
  const off = await startServer([
    `--model-repository=${repo}`,
    '--inline-execution-max-us=0',
    '--http-thread-count=1',
    '--model-control-mode=explicit',
    '--load-model=simple',
  ]);
  try {
    const names = threadNames(off.child.pid!);
    assert.ok(names.includes('nt:simple_0') && names.includes('nt:simple_1'), names.join(', '));
    assert.equal((await infer(off.url, 'simple', simpleInputs(1))).status, 200);
  } finally {
    assert.equal(await off.stop(), 0, off.output().slice(-3000));
  }
});
