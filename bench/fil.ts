/**
 * The FIL backend against the native libraries, side by side in one run
 * (issue 17's target: at least half the native rows/s at batch 1 and at
 * batch 1,024 through the server). Models: bench/fil_bench_models.py (a
 * LightGBM and an XGBoost binary classifier, 100 trees each, 32 features).
 * Native: the library's predict() in a Python loop on the same rows, with 1
 * and with all cores' threads (the faster is the reference). Native and
 * server take turns, three rounds, and the medians are compared. Server:
 * nodetron (2 FIL instances, dynamic batching) driven by src/perf (binary
 * tensors, closed loop) from this process, on the same cores. Batch 1 is
 * measured at concurrency 32, 64 and 128 (closed loop: more requests in
 * flight, bigger dynamic batches), and the best median counts, as a
 * perf_analyzer sweep finds a server's throughput; every concurrency's row is
 * printed. Each row also gives the server's CPU per request (all its threads,
 * from /proc) and the load generator's. The server is warmed up (JIT) on
 * each model for WARM_S seconds before its rounds. Usage:
 *   node dist/bench/fil.js [seconds=3]
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parsePerfOptions } from '../src/perf/perf-options';
import { runPerf } from '../src/perf/perf-runner';
import { REPO_ROOT, startServer } from '../test/integration/server-process';
import { successCount, treeCpuSeconds } from './bench-procs';
import { median } from './soak-verdict';

const SECONDS = Number(process.argv[2] ?? 3);
const SCRIPT = path.join(REPO_ROOT, 'bench/fil_bench_models.py');
const CORES = os.availableParallelism();
const ROUNDS = 3;
/** Seconds of load on each model before its first round: V8 compiles the hot path in the first seconds. */
const WARM_S = 3;

interface Model {
  name: string;
  lib: 'lightgbm' | 'xgboost';
  python: string;
  file: string;
}

function nativeRowsPerSec(m: Model, dir: string, batch: number, threads: number): number {
  const r = spawnSync(m.python, [SCRIPT, 'native', m.lib, path.join(dir, m.name, '1', m.file), String(batch), String(SECONDS), String(threads)], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`native ${m.lib}: ${r.stderr}`);
  return (JSON.parse(r.stdout.trim().split('\n').pop()!) as { rows_per_s: number }).rows_per_s;
}

interface ServerStep {
  rows: number;
  p50Ms: number;
  avgBatch: number;
  /** CPU of the server's process tree and of this process (the load generator), µs per request. */
  serverUs: number;
  generatorUs: number;
}

async function serverRowsPerSec(url: string, pid: number, model: string, batch: number, concurrency: number, warmMs = 500): Promise<ServerStep> {
  const o = parsePerfOptions(['-m', model, '-u', url, `--concurrency-range=${concurrency}`, '-p', String(SECONDS * 1000), '-r', '1', '-b', String(batch)]);
  await runPerf({ ...o, measurementIntervalMs: warmMs, maxTrials: 1, stabilityPercentage: 100 }, () => undefined);
  const n0 = await successCount(url, model);
  const cpu0 = treeCpuSeconds(pid);
  const gen0 = process.cpuUsage();
  const run = await runPerf(o, () => undefined);
  const gen = process.cpuUsage(gen0);
  const cpu = treeCpuSeconds(pid) - cpu0;
  const requests = (await successCount(url, model)) - n0;
  const r = run.results[0]!;
  if (r.errors > 0) throw new Error(`${model}: ${r.errors} errors`);
  return {
    rows: r.inferencesPerSec,
    p50Ms: r.latency.p50Us / 1000,
    avgBatch: r.server?.avgBatch ?? 0,
    serverUs: (cpu * 1e6) / requests,
    generatorUs: (gen.user + gen.system) / requests,
  };
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-fil-bench-'));
  const models: Model[] = [
    { name: 'lgb_bench', lib: 'lightgbm', python: 'python3', file: 'model.txt' },
    { name: 'xgb_bench', lib: 'xgboost', python: '/usr/bin/python3', file: 'xgboost.json' },
  ];
  for (const m of models) {
    const r = spawnSync(m.python, [SCRIPT, m.lib, dir], { stdio: ['ignore', 'ignore', 'inherit'] });
    if (r.status !== 0) throw new Error(`generating ${m.name} failed`);
  }
  const server = await startServer([`--model-repository=${dir}`, '--allow-grpc=false']);
  const pid = server.child.pid!;
  const rows: string[] = [];
  try {
    for (const m of models) {
      await serverRowsPerSec(server.url, pid, m.name, 1, 64, WARM_S * 1000);
      for (const [batch, concurrencies] of [
        [1, [32, 64, 128]],
        [1024, [4]],
      ] as const) {
        // The box is shared: native and server take turns, ROUNDS times, and each side's median counts.
        const n1: number[] = [];
        const nAll: number[] = [];
        const srv = new Map<number, ServerStep[]>(concurrencies.map((c) => [c, []]));
        for (let round = 0; round < ROUNDS; round++) {
          n1.push(nativeRowsPerSec(m, dir, batch, 1));
          nAll.push(nativeRowsPerSec(m, dir, batch, CORES));
          for (const c of concurrencies) srv.get(c)!.push(await serverRowsPerSec(server.url, pid, m.name, batch, c));
        }
        const native = Math.max(median(n1), median(nAll));
        const medians = concurrencies.map((c) => {
          const steps = srv.get(c)!.sort((a, b) => a.rows - b.rows);
          return { c, s: steps[Math.floor(steps.length / 2)]! };
        });
        const best = medians.reduce((a, b) => (b.s.rows > a.s.rows ? b : a));
        for (const { c, s } of medians) {
          const ratio = s.rows / native;
          const verdict = c === best.c ? (ratio >= 0.5 ? ' met' : ' NOT met') : '';
          const line = `| ${m.lib} | ${batch} | ${median(n1).toFixed(0)} / ${median(nAll).toFixed(0)} | ${s.rows.toFixed(0)} (c=${c}, p50 ${s.p50Ms.toFixed(2)} ms, server batch ${s.avgBatch.toFixed(1)}) | ${s.serverUs.toFixed(0)} / ${s.generatorUs.toFixed(0)} | ${ratio.toFixed(2)}x${verdict} |`;
          console.log(line);
          rows.push(line);
        }
      }
    }
  } finally {
    await server.stop({ checkArena: false });
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\nrows/s, medians of ${ROUNDS} alternating rounds of ${SECONDS} s, ${CORES} cores; the verdict is on each case's best concurrency\n`);
  console.log(
    '| library | rows per request | native rows/s, 1 / ' +
      CORES +
      ' threads | nodetron rows/s | CPU µs per request, server / generator | nodetron / best native (target 0.5x) |',
  );
  console.log('|---|---:|---:|---:|---:|---|');
  for (const r of rows) console.log(r);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
