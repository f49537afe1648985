/**
 * Model churn under load: steady inference traffic to model A (`simple`)
 * while model B (`dense_classifier`, ONNX) and model C (`add_vectors`, Python:
 * one stub process) are loaded, C inferred once, and both unloaded `cycles`
 * times, and A is moved to a new version twice (explicit mode). Reports A's
 * failed requests (must be 0) and, before and after, the server's threads,
 * child processes (stubs), its /dev/shm files (`nodetron_<pid>_*`) and its
 * fds on such files (the Python backend unlinks them right after spawn):
 * after must not exceed before, nothing leaks. `runChurn` is also the bounded
 * integration test's driver.
 *
 *   node dist/bench/model-churn.js [cycles=50] [concurrency=4]
 */
import fs from 'node:fs';
import path from 'node:path';
import { inferSimple, makeRepo, post, threadCount, waitFor } from '../test/integration/repo-kit';
import { childPids, shmFds, shmFiles } from './proc-census';
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
  /** Child processes of the server (Python stubs): before, the most seen while C was loaded, after. */
  childrenBefore: number;
  childrenPeak: number;
  childrenAfter: number;
  /** /dev/shm/nodetron_<pid>_* files, and the server's open fds on such files (unlinked ones included). */
  shmFilesBefore: number;
  shmFilesAfter: number;
  shmFdsBefore: number;
  shmFdsAfter: number;
  /** Failed inferences on C right after its load (must be 0). */
  failedC: number;
}

const C_BODY = JSON.stringify({
  inputs: [
    { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
    { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [10, 20, 30, 40] },
  ],
});

export async function runChurn(url: string, pid: number, repo: string, cycles: number, concurrency = 4): Promise<ChurnResult> {
  const threadsBefore = threadCount(pid);
  const childrenBefore = childPids(pid).length;
  const shmFilesBefore = shmFiles(pid).length;
  const shmFdsBefore = shmFds(pid).length;
  let childrenPeak = childrenBefore;
  let failedC = 0;
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
  // B and C load together and unload together (each on its own model chain in the server).
  const cycleModels = ['dense_classifier', 'add_vectors'];
  const control = async (action: 'load' | 'unload', models: string[]): Promise<void> => {
    const answers = await Promise.all(models.map((m) => post(url, `/v2/repository/models/${m}/${action}`)));
    answers.forEach((a, k) => {
      if (a.status !== 200) throw new Error(`${action} ${models[k]}: ${a.status} ${a.text}`);
    });
  };
  for (let i = 0; i < cycles; i++) {
    await control('load', cycleModels);
    childrenPeak = Math.max(childrenPeak, childPids(pid).length);
    const c = await fetch(`${url}/v2/models/add_vectors/infer`, { method: 'POST', body: C_BODY });
    const cText = await c.text();
    if (c.status !== 200 || JSON.stringify((JSON.parse(cText) as { outputs: { data: number[] }[] }).outputs[0]?.data) !== '[11,22,33,44]') {
      failedC++;
      if (failures.length < 5) failures.push(`C: ${c.status} ${cText}`);
    }
    if (i === Math.floor(cycles / 3) || i === Math.floor((2 * cycles) / 3)) {
      // Move A to a new version: the old one is retired by the version policy.
      fs.cpSync(path.join(repo, 'simple', '1'), path.join(repo, 'simple', String(nextVersion++)), { recursive: true });
      const a = await post(url, '/v2/repository/models/simple/load');
      if (a.status !== 200) throw new Error(`load A: ${a.status} ${a.text}`);
    }
    await control('unload', cycleModels);
  }
  running = false;
  await Promise.all(loops);
  const seconds = (Date.now() - started) / 1000;
  // B's last unload and A's retired versions drain in the background; wait for their threads to go.
  let threadsAfter = threadCount(pid);
  await waitFor('threads back to the baseline', async () => (threadsAfter = threadCount(pid)) <= threadsBefore, 80).catch(() => undefined);
  // C's last unload stops its stub in the background too.
  let childrenAfter = childPids(pid).length;
  let shmFilesAfter = shmFiles(pid).length;
  let shmFdsAfter = shmFds(pid).length;
  const settled = async (): Promise<boolean> => {
    childrenAfter = childPids(pid).length;
    shmFilesAfter = shmFiles(pid).length;
    shmFdsAfter = shmFds(pid).length;
    return childrenAfter <= childrenBefore && shmFilesAfter <= shmFilesBefore && shmFdsAfter <= shmFdsBefore;
  };
  await waitFor('stubs and /dev/shm files gone', settled, 80).catch(() => undefined);
  const failedA = failures.filter((f) => !f.startsWith('C: ')).length;
  return {
    cycles,
    seconds,
    requestsA,
    failedA,
    failures: failures.slice(0, 5),
    versionsA: [...versions].sort(),
    threadsBefore,
    threadsAfter,
    childrenBefore,
    childrenPeak,
    childrenAfter,
    shmFilesBefore,
    shmFilesAfter,
    shmFdsBefore,
    shmFdsAfter,
    failedC,
  };
}

export async function churnServer(): Promise<{ url: string; pid: number; repo: string; stop: () => Promise<unknown> }> {
  const repo = makeRepo(['simple', 'dense_classifier', 'add_vectors']);
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
