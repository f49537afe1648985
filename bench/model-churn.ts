/**
 * Model churn under load: steady inference traffic to model A (`simple`)
 * while model B (`dense_classifier`) is loaded and unloaded `cycles` times and
 * A is moved to a new version twice (explicit mode). Reports A's failed
 * requests (must be 0) and the server's thread count before and after (equal:
 * nothing leaks). `runChurn` is also the bounded integration test's driver.
 *
 *   node dist/bench/model-churn.js [cycles=50] [concurrency=4]
 */
import fs from 'node:fs';
import path from 'node:path';
import { inferSimple, makeRepo, post, threadCount, waitFor } from '../test/integration/repo-kit';
import { startServer } from '../test/integration/server-process';

export interface ChurnResult {
  cycles: number;
  seconds: number;
  requestsA: number;
  failedA: number;
  failures: string[];
  versionsA: string[];
  threadsBefore: number;
  threadsAfter: number;
}

export async function runChurn(url: string, pid: number, repo: string, cycles: number, concurrency = 4): Promise<ChurnResult> {
  const threadsBefore = threadCount(pid);
  const started = Date.now();
  let running = true;
  let requestsA = 0;
  const failures: string[] = [];
  const versions = new Set<string>();
  const loops = Array.from({ length: concurrency }, async () => {
    while (running) {
      const r = await inferSimple(url);
      requestsA++;
      if (r.status === 200) versions.add(r.version ?? '?');
      else failures.push(`${r.status} ${r.text}`);
    }
  });
  let nextVersion = 2;
  for (let i = 0; i < cycles; i++) {
    const load = await post(url, '/v2/repository/models/dense_classifier/load');
    if (load.status !== 200) throw new Error(`load B: ${load.status} ${load.text}`);
    if (i === Math.floor(cycles / 3) || i === Math.floor((2 * cycles) / 3)) {
      // Move A to a new version: the old one is retired by the version policy.
      fs.cpSync(path.join(repo, 'simple', '1'), path.join(repo, 'simple', String(nextVersion++)), { recursive: true });
      const a = await post(url, '/v2/repository/models/simple/load');
      if (a.status !== 200) throw new Error(`load A: ${a.status} ${a.text}`);
    }
    const unload = await post(url, '/v2/repository/models/dense_classifier/unload');
    if (unload.status !== 200) throw new Error(`unload B: ${unload.status} ${unload.text}`);
  }
  running = false;
  await Promise.all(loops);
  const seconds = (Date.now() - started) / 1000;
  // B's last unload and A's retired versions drain in the background; wait for their threads to go.
  let threadsAfter = threadCount(pid);
  await waitFor('threads back to the baseline', async () => (threadsAfter = threadCount(pid)) <= threadsBefore, 80).catch(() => undefined);
  return { cycles, seconds, requestsA, failedA: failures.length, failures: failures.slice(0, 5), versionsA: [...versions].sort(), threadsBefore, threadsAfter };
}

export async function churnServer(): Promise<{ url: string; pid: number; repo: string; stop: () => Promise<unknown> }> {
  const repo = makeRepo(['simple', 'dense_classifier']);
  const server = await startServer([`--model-repository=${repo}`, '--model-control-mode=explicit', '--load-model=simple']);
  return {
    url: server.url,
    pid: server.child.pid!,
    repo,
    stop: async () => {
      await server.stop();
      fs.rmSync(repo, { recursive: true, force: true });
    },
  };
}

async function main(): Promise<void> {
  const cycles = Number(process.argv[2] ?? 50);
  const concurrency = Number(process.argv[3] ?? 4);
  const s = await churnServer();
  try {
    const r = await runChurn(s.url, s.pid, s.repo, cycles, concurrency);
    console.log(JSON.stringify(r, null, 2));
  } finally {
    await s.stop();
  }
}

if (require.main === module) void main();
