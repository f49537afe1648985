/**
 * 50 copies of `simple` loaded vs one: `npm run bench:many-models [-- --quick]`.
 * Two temporary repositories (model_repository/simple alone; simple plus
 * simple_1..simple_49, each its own model with its own instance), servers
 * started alternately A, B, A, B on this machine: start-to-ready, idle RSS,
 * then `simple` HTTP JSON at 32 connections (closed loop, src/perf in this
 * process, on the same cores) with the server's CPU per request.
 * Target (data-plane issue): throughput within 10% of the one-model case,
 * start to ready under 5 s.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parsePerfOptions } from '../src/perf/perf-options';
import { runPerf } from '../src/perf/perf-runner';
import { freePort, startProc, treeCpuSeconds, treeRssMb } from './bench-procs';

const ROOT = path.resolve(__dirname, '../..');
const CLI = path.join(ROOT, 'dist/src/cli.js');
const SIMPLE = path.join(ROOT, 'model_repository/simple');
const quick = process.argv.includes('--quick');
const COPIES = 50;
const ROUNDS = quick ? 1 : 2;
const INTERVAL_MS = quick ? 1000 : 3000;

function makeRepo(copies: number): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `nodetron-many-${copies}-`));
  fs.cpSync(SIMPLE, path.join(dir, 'simple'), { recursive: true });
  const config = fs.readFileSync(path.join(SIMPLE, 'config.pbtxt'), 'utf8');
  for (let i = 1; i < copies; i++) {
    const name = `simple_${i}`;
    fs.cpSync(SIMPLE, path.join(dir, name), { recursive: true });
    fs.writeFileSync(path.join(dir, name, 'config.pbtxt'), config.replace(/^name: "simple"/m, `name: "${name}"`));
  }
  return dir;
}

interface Row {
  copies: number;
  readyMs: number;
  rssMb: number;
  rps: number;
  p99Ms: number;
  cpuUs: number;
  errors: number;
}

async function one(repo: string, copies: number): Promise<Row> {
  const port = await freePort();
  const proc = await startProc(
    process.execPath,
    [CLI, `--model-repository=${repo}`, `--http-port=${port}`, '--allow-grpc=false', '--allow-metrics=false'],
    port,
  );
  try {
    await new Promise((r) => setTimeout(r, 1000));
    const rssMb = treeRssMb(proc.child.pid!);
    const o = parsePerfOptions([
      '-m',
      'simple',
      '-u',
      `127.0.0.1:${port}`,
      '--concurrency-range=32',
      '-p',
      String(INTERVAL_MS),
      '-r',
      '3',
      '--input-tensor-format=json',
      '--output-tensor-format=json',
    ]);
    await runPerf({ ...o, measurementIntervalMs: 1500, maxTrials: 1, stabilityPercentage: 100 }, () => undefined);
    const t0 = performance.now();
    const cpu0 = treeCpuSeconds(proc.child.pid!);
    const run = await runPerf(o, () => undefined);
    const wallS = (performance.now() - t0) / 1000;
    const r = run.results[0]!;
    const cpuUs = (((treeCpuSeconds(proc.child.pid!) - cpu0) / wallS) * 1e6) / r.requestsPerSec;
    return { copies, readyMs: proc.readyMs, rssMb, rps: r.requestsPerSec, p99Ms: r.latency.p99Us / 1000, cpuUs, errors: r.errors };
  } finally {
    await proc.stop();
  }
}

async function main(): Promise<void> {
  const repos = { 1: makeRepo(1), [COPIES]: makeRepo(COPIES) } as Record<number, string>;
  const rows: Row[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const copies of [1, COPIES]) {
        const row = await one(repos[copies], copies);
        rows.push(row);
        console.log(
          `copies=${copies} ready ${row.readyMs.toFixed(0)} ms  rss ${row.rssMb.toFixed(0)} MB  ${row.rps.toFixed(0)} req/s  p99 ${row.p99Ms.toFixed(2)} ms  cpu/req ${row.cpuUs.toFixed(0)} us  errors ${row.errors}`,
        );
      }
    }
  } finally {
    for (const d of Object.values(repos)) fs.rmSync(d, { recursive: true, force: true });
  }
  const mean = (copies: number, f: (r: Row) => number): number => {
    const xs = rows.filter((r) => r.copies === copies).map(f);
    return xs.reduce((a, b) => a + b, 0) / xs.length;
  };
  console.log('\n| models loaded | start to ready (ms) | idle RSS (MB) | simple JSON c=32 (req/s) | p99 (ms) | server CPU/req (µs) |');
  console.log('|---:|---:|---:|---:|---:|---:|');
  for (const c of [1, COPIES]) {
    console.log(
      `| ${c} | ${mean(c, (r) => r.readyMs).toFixed(0)} | ${mean(c, (r) => r.rssMb).toFixed(0)} | ${mean(c, (r) => r.rps).toFixed(0)} | ` +
        `${mean(c, (r) => r.p99Ms).toFixed(2)} | ${mean(c, (r) => r.cpuUs).toFixed(0)} |`,
    );
  }
  console.log(
    `\nthroughput with ${COPIES} models / with 1: ${(mean(COPIES, (r) => r.rps) / mean(1, (r) => r.rps)).toFixed(2)}x ` + `(rounds alternated, ${ROUNDS} each)`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
