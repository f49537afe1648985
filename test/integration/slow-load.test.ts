/**
 * Loads never block each other (explicit mode): while a Python model spends
 * 20 s in `initialize`, a steady client on `simple` is answered with a p99
 * under 10 ms and no failure, the repository index, health and metadata
 * answer at once, and a third model loads in its usual time. Loads and
 * unloads of the slow model itself are serialized as Triton does: a second
 * load waits for the first, an unload sent during the load waits for it and
 * then unloads.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { inferSimple, makeRepo, post, repoIndex, SIMPLE_BODY, waitFor } from './repo-kit';
import { startServer, type ServerProcess } from './server-process';

const INIT_SECONDS = 20;
let server: ServerProcess;
let repo: string;

before(async () => {
  repo = makeRepo(['simple']);
  // A third model, as quick to load as simple: simple's files under another name.
  fs.cpSync(path.join(repo, 'simple'), path.join(repo, 'other'), { recursive: true });
  const cfg = path.join(repo, 'other/config.pbtxt');
  fs.writeFileSync(cfg, fs.readFileSync(cfg, 'utf8').replace('name: "simple"', 'name: "other"'));
  fs.mkdirSync(path.join(repo, 'slow_init/1'), { recursive: true });
  fs.writeFileSync(
    path.join(repo, 'slow_init/config.pbtxt'),
    `backend: "python"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
`,
  );
  fs.writeFileSync(
    path.join(repo, 'slow_init/1/model.py'),
    `import time
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        time.sleep(${INIT_SECONDS})

    def execute(self, requests):
        return [pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor("OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())]) for r in requests]
`,
  );
  server = await startServer([`--model-repository=${repo}`, '--model-control-mode=explicit', '--load-model=simple']);
});

after(async () => {
  assert.equal(await server.stop(), 0, server.output().slice(-3000));
  fs.rmSync(repo, { recursive: true, force: true });
});

/** Runs `fn` and resolves with what it resolved to and the ms it took. */
async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number; endedAt: number }> {
  const t0 = performance.now();
  const value = await fn();
  const endedAt = performance.now();
  return { value, ms: endedAt - t0, endedAt };
}

function postSimple(agent: http.Agent): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: hostname,
        port,
        agent,
        method: 'POST',
        path: '/v2/models/simple/infer',
        headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(SIMPLE_BODY) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject);
    req.end(SIMPLE_BODY);
  });
}

async function getMs(p: string): Promise<{ status: number; ms: number }> {
  const r = await timed(() => fetch(server.url + p).then(async (res) => (await res.arrayBuffer(), res.status)));
  return { status: r.value, ms: r.ms };
}

test(`a ${INIT_SECONDS} s initialize delays no other model, route or client; the slow model's own loads and unloads wait their turn`, async () => {
  // The third model's usual load time, measured first.
  const usual = await timed(() => post(server.url, '/v2/repository/models/other/load'));
  assert.equal(usual.value.status, 200, usual.value.text);
  assert.equal((await post(server.url, '/v2/repository/models/other/unload')).status, 200);

  // A steady client on simple for the whole test.
  const latencies: number[] = [];
  const failures: string[] = [];
  let steady = true;
  // node:http on one kept-alive connection, back to back (fetch alone costs milliseconds here, and
  // a client that sleeps between requests measures this VM's wake-up latency instead of the server).
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const client = (async () => {
    while (steady) {
      const r = await timed(() => postSimple(agent));
      latencies.push(r.ms);
      if (r.value.status !== 200) failures.push(`${r.value.status} ${r.value.text.slice(0, 200)}`);
    }
  })();

  try {
    await beside(usual.ms, latencies, failures);
  } finally {
    steady = false;
    await client;
    agent.destroy();
  }
});

/** The slow load and everything that must not wait for it, while the steady client runs. */
async function beside(usualMs: number, latencies: number[], failures: string[]): Promise<void> {
  const first = timed(() => post(server.url, '/v2/repository/models/slow_init/load'));
  await new Promise((r) => setTimeout(r, 500));

  // The index, health and metadata answer at once, and say the slow model is loading.
  const index = await timed(() => repoIndex(server.url));
  assert.ok(index.ms < 200, `index took ${index.ms.toFixed(0)} ms`);
  assert.equal(index.value.find((e) => e.name === 'slow_init')?.state, 'LOADING', JSON.stringify(index.value));
  // Ready is 400 meanwhile, as Triton's strict readiness answers while a wanted model is not READY.
  for (const [p, status] of [
    ['/v2/health/live', 200],
    ['/v2/health/ready', 400],
    ['/v2/models/simple', 200],
    ['/v2/models/simple/config', 200],
  ] as const) {
    const r = await getMs(p);
    assert.equal(r.status, status, p);
    assert.ok(r.ms < 200, `${p} took ${r.ms.toFixed(0)} ms`);
  }

  // Another model loads in its usual time.
  const third = await timed(() => post(server.url, '/v2/repository/models/other/load'));
  assert.equal(third.value.status, 200, third.value.text);
  assert.ok(third.ms < usualMs * 3 + 1000, `other loaded in ${third.ms.toFixed(0)} ms beside the slow load (${usualMs.toFixed(0)} ms alone)`);
  assert.equal((await inferSimple(server.url, 'other')).status, 200);

  // A second load of the slow model waits for the first; an unload sent meanwhile waits for both, then unloads.
  const second = timed(() => post(server.url, '/v2/repository/models/slow_init/load'));
  await new Promise((r) => setTimeout(r, 200));
  const unload = timed(() => post(server.url, '/v2/repository/models/slow_init/unload'));
  const [a, b, c] = await Promise.all([first, second, unload]);
  assert.equal(a.value.status, 200, a.value.text);
  assert.equal(b.value.status, 200, b.value.text);
  assert.equal(c.value.status, 200, c.value.text);
  assert.ok(a.ms >= INIT_SECONDS * 1000 - 500, `the first load took ${a.ms.toFixed(0)} ms`);
  // Both waited for the first load (answers on two connections may cross by a few ms on the way back).
  assert.ok(
    b.endedAt >= a.endedAt - 50 && c.endedAt >= a.endedAt - 50,
    `the second load and the unload waited for the first load: ended at ${a.endedAt.toFixed(0)}, ${b.endedAt.toFixed(0)}, ${c.endedAt.toFixed(0)} ms`,
  );
  // The unload is answered once UNLOADING (as Triton's); the stub is gone soon after.
  await waitFor('slow_init UNAVAILABLE', async () => (await repoIndex(server.url)).find((e) => e.name === 'slow_init')?.state === 'UNAVAILABLE', 40);

  assert.deepEqual(failures, [], 'the steady client never failed');
  const sorted = [...latencies].sort((x, y) => x - y);
  const p99 = sorted[Math.floor(sorted.length * 0.99)]!;
  assert.ok(latencies.length > 500, `${latencies.length} requests`);
  assert.ok(p99 < 10, `simple's p99 beside the slow load: ${p99.toFixed(2)} ms over ${latencies.length} requests`);
}
