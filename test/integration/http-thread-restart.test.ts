/**
 * A dead HTTP thread is replaced, through the real server: the thread is
 * made to throw an uncaught error (NODETRON_TEST_FAULTS=http-crash, a route
 * only that variable turns on) while a request it admitted waits in the
 * scheduler (the gated Python model holds it). The process keeps running,
 * the log names the thread, the reason and the request that failed with it,
 * a replacement listens on the same port, the held request's arena blocks are
 * released when it finishes, and the server stops with exit 0.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { MODEL_REPOSITORY, REPO_ROOT, startServer, waitForOutput } from './server-process';
import type { ServerProcess } from './server-process';

let server: ServerProcess;
let repo: string;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-http-restart-'));
  fs.cpSync(path.join(MODEL_REPOSITORY, 'simple'), path.join(repo, 'simple'), { recursive: true });
  fs.cpSync(path.join(REPO_ROOT, 'test/integration/fixtures/scheduling_models/gated'), path.join(repo, 'gated'), { recursive: true });
  process.env.NODETRON_TEST_FAULTS = 'http-crash';
  server = await startServer([`--model-repository=${repo}`, '--http-thread-count=1', '--allow-metrics=true', '--metrics-port=0']);
  delete process.env.NODETRON_TEST_FAULTS;
});

after(async () => {
  fs.rmSync(path.join(repo, 'gated', 'closed'), { force: true });
  assert.equal(await server.stop(), 0, server.output().slice(-3000));
  fs.rmSync(repo, { recursive: true, force: true });
});

const SIMPLE = [
  { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
  { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(1) },
];

async function metricsText(): Promise<string> {
  return (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
}

async function until(cond: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${server.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a thread that dies is logged with its reason, replaced on the same port, and its held request is released', async () => {
  assert.equal((await infer(server.url, 'simple', SIMPLE)).status, 200);

  // A request the thread admitted, held in the gated model while the thread dies.
  fs.writeFileSync(path.join(repo, 'gated', 'closed'), '');
  const held = infer(server.url, 'gated', [{ name: 'IN', datatype: 'INT32', shape: [1, 1], data: [7] }]).then(
    (r) => ({ status: r.status }),
    (err: Error) => ({ error: (err.cause as { code?: string } | undefined)?.code ?? err.message }),
  );
  await until(async () => /nv_inference_pending_request_count\{model="gated",version="1"\} 1/.test(await metricsText()), 'the gated request to be admitted');

  const crash = await fetch(`${server.url}/nodetron-test/crash`, { method: 'POST' }).then(
    (r) => r.status,
    (e: Error) => e.name,
  );
  assert.notEqual(crash, 200, 'the crash route must not answer');
  const out = await waitForOutput(server, /HTTP thread 0 restarted, listening on port \d+/, 10_000);
  assert.match(out, /HTTP thread 0 died: Error: fault injected: POST \/nodetron-test\/crash/);
  assert.match(out, /1 request\(s\) it had in flight fail with it \(their connections were reset\); restarting it/);
  assert.deepEqual(await held, { error: 'UND_ERR_SOCKET' }, 'the held client sees its connection reset, not an answer');

  // The replacement serves on the same port, and simple's instance thread
  // answers it directly (a ring to the new thread was made when it started).
  const direct = async (): Promise<number> => Number(/^nodetron_dataplane_direct_responses_total (\d+)$/m.exec(await metricsText())?.[1]);
  const directBefore = await direct();
  const r = await infer(server.url, 'simple', SIMPLE);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.equal(await direct(), directBefore + 1, 'the response came straight from the instance thread');
  assert.equal((await fetch(`${server.url}/v2/health/ready`)).status, 200);

  // The held request finishes in the model; its inputs and outputs go back to the arena.
  fs.rmSync(path.join(repo, 'gated', 'closed'));
  await until(async () => /nv_inference_request_success\{model="gated",version="1"\} 1/.test(await metricsText()), 'the held request to finish');
  assert.equal((await infer(server.url, 'simple', SIMPLE)).status, 200);
});

test('repeated deaths are each followed by a replacement', async () => {
  for (let i = 0; i < 3; i++) {
    const before = (server.output().match(/HTTP thread 0 restarted/g) ?? []).length;
    await fetch(`${server.url}/nodetron-test/crash`, { method: 'POST' }).catch(() => undefined);
    await waitForOutput(server, new RegExp(`(HTTP thread 0 restarted[^]*){${before + 1}}`), 15_000);
    assert.equal((await infer(server.url, 'simple', SIMPLE)).status, 200);
  }
});
