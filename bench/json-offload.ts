/**
 * Does the codec pool (`--http-codec-offload-bytes`) keep small requests
 * fast while large JSON bodies arrive on the same port? One nodetron at a
 * time (model_repository/, `simple` and `image_classifier`, default flags:
 * one uWS thread on 2 cores), alternately with offload on (the default
 * threshold) and off (0), fresh process each run. Each run: a warm-up with
 * both loads (unrecorded), then `simple` JSON requests alone at a fixed
 * concurrency, then the same while `large` closed-loop connections send
 * ResNet-50-shaped 1.1 MB JSON bodies ([1,3,224,224] FP32, json-bodies.ts)
 * to image_classifier (a small CNN: the body, not the model, is the cost).
 * Load from this process (bench/load.ts, node:http keep-alive), on the same
 * cores as the server. Server CPU from /proc: the process tree per request,
 * and by thread name (uWS `http-0`, pool `codec-0`, main, instances).
 *   node dist/bench/json-offload.js [seconds=8] [runs=2] [smallConcurrency=8] [large=2] [server flags...]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, sampleThreads, startProc, threadCpuUs, treeCpuSeconds, type Proc } from './bench-procs';
import { imageTensorJson } from './json-bodies';
import { runLoad, type LoadResult } from './load';

const [secondsText = '8', runsText = '2', smallText = '8', largeText = '2', ...extraFlags] = process.argv.slice(2);
const SECONDS = Number(secondsText);
const RUNS = Number(runsText);
const SMALL_C = Number(smallText);
const LARGE_C = Number(largeText);
const WARMUP_MS = 3000;
const ROOT = path.resolve(__dirname, '../..');

const SMALL = Buffer.from(
  JSON.stringify({
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
    ],
  }),
);
const LARGE = imageTensorJson(42);

type PhaseName = 'simple alone' | 'large alone' | 'both';

interface Phase {
  small?: LoadResult;
  large?: LoadResult;
  /** Server process tree CPU µs per answered request (small + large). */
  cpuPerReqUs: number;
  /** Cores busy (server tree) over the phase. */
  cores: number;
  /** Cores busy by thread name. */
  threads: Map<string, number>;
  /** Cores busy in this process (the load generator). */
  generatorCores: number;
  /** The machine's 1-minute load average when the phase began (other jobs share it). */
  loadAvg: number;
}

interface Run {
  config: 'on' | 'off';
  order: number;
  phases: Map<PhaseName, Phase>;
}

function load(url: string, model: string, body: Buffer, concurrency: number, ms: number): Promise<LoadResult> {
  return runLoad({ url, path: `/v2/models/${model}/infer`, body, headers: { 'Content-Type': 'application/json' }, concurrency, durationMs: ms, warmupMs: 0 });
}

async function phase(p: Proc, name: PhaseName): Promise<Phase> {
  const pid = p.child.pid!;
  const url = `http://127.0.0.1:${p.port}`;
  const loadAvg = os.loadavg()[0];
  const t0 = performance.now();
  const [cpu0, th0, gen0] = [treeCpuSeconds(pid), sampleThreads(pid), process.cpuUsage()];
  const [small, large] = await Promise.all([
    name !== 'large alone' ? load(url, 'simple', SMALL, SMALL_C, SECONDS * 1000) : Promise.resolve(undefined),
    name !== 'simple alone' ? load(url, 'image_classifier', LARGE, LARGE_C, SECONDS * 1000) : Promise.resolve(undefined),
  ]);
  const wallS = (performance.now() - t0) / 1000;
  const gen = process.cpuUsage(gen0);
  const [cpu1, th1] = [treeCpuSeconds(pid), sampleThreads(pid)];
  const requests = (small?.requests ?? 0) + (large?.requests ?? 0);
  const threads = new Map([...threadCpuUs(th0, th1)].map(([k, us]) => [k, us / 1e6 / wallS]));
  return {
    small,
    large,
    cpuPerReqUs: ((cpu1 - cpu0) * 1e6) / requests,
    cores: (cpu1 - cpu0) / wallS,
    threads,
    generatorCores: (gen.user + gen.system) / 1e6 / wallS,
    loadAvg,
  };
}

async function oneRun(config: 'on' | 'off', order: number): Promise<Run> {
  const port = await freePort();
  const flags = [
    path.join(ROOT, 'dist/src/cli.js'),
    `--model-repository=${path.join(ROOT, 'model_repository')}`,
    `--http-port=${port}`,
    '--allow-grpc=false',
    '--allow-metrics=false',
    '--model-control-mode=explicit',
    '--load-model=simple',
    '--load-model=image_classifier',
    ...(config === 'off' ? ['--http-codec-offload-bytes=0'] : []),
    ...extraFlags,
  ];
  const p = await startProc(process.execPath, flags, port);
  try {
    const url = `http://127.0.0.1:${port}`;
    await Promise.all([load(url, 'simple', SMALL, SMALL_C, WARMUP_MS), load(url, 'image_classifier', LARGE, LARGE_C, WARMUP_MS)]);
    const phases = new Map<PhaseName, Phase>();
    for (const name of PHASES) phases.set(name, await phase(p, name));
    return { config, order, phases };
  } finally {
    await p.stop();
  }
}

const PHASES: PhaseName[] = ['simple alone', 'large alone', 'both'];
const ms = (x: number): string => x.toFixed(2);
const THREADS = ['http-0', 'codec-0', 'main'];

function row(r: Run, which: PhaseName): string {
  const ph = r.phases.get(which)!;
  const inst = [...ph.threads].filter(([k]) => !THREADS.includes(k) && !k.startsWith('other')).reduce((a, [, v]) => a + v, 0);
  const other = [...ph.threads].filter(([k]) => k.startsWith('other')).reduce((a, [, v]) => a + v, 0);
  const split = [...THREADS.map((t) => ph.threads.get(t) ?? 0), inst, other].map((c) => c.toFixed(2)).join(' / ');
  const large = ph.large
    ? `${ph.large.rps.toFixed(1)} (p50 ${ms(ph.large.p50Ms)}, p99 ${ms(ph.large.p99Ms)})${ph.large.errors ? ` ${ph.large.errors} err` : ''}`
    : '–';
  const small = ph.small ? `${ph.small.rps.toFixed(0)} | ${ms(ph.small.p50Ms)} | ${ms(ph.small.p99Ms)} | ${ph.small.errors}` : '– | – | – | –';
  return `| ${r.order} | ${r.config} | ${which} | ${small} | ${large} | ${ph.cpuPerReqUs.toFixed(0)} | ${ph.cores.toFixed(2)} | ${split} | ${ph.generatorCores.toFixed(2)} | ${ph.loadAvg.toFixed(1)} |`;
}

async function main(): Promise<void> {
  const started = new Date();
  console.log(
    `large body: ${LARGE.length} bytes; small body: ${SMALL.length} bytes; ${SECONDS} s per phase; load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  const runs: Run[] = [];
  let order = 0;
  for (let i = 0; i < RUNS; i++) {
    for (const config of ['on', 'off'] as const) {
      const r = await oneRun(config, ++order);
      runs.push(r);
      for (const name of PHASES) console.log(row(r, name));
    }
  }
  const header = [
    `Run: \`node dist/bench/json-offload.js ${process.argv.slice(2).join(' ')}\`, ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC, ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, load average at the end ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}.`,
    `simple JSON at c=${SMALL_C}; large: ${LARGE_C} connections of ${LARGE.length}-byte JSON bodies to image_classifier; ${SECONDS} s per phase after ${WARMUP_MS} ms of warm-up; offload on = default threshold, off = --http-codec-offload-bytes=0.`,
    '',
    '| # | offload | phase | simple req/s | simple p50 ms | simple p99 ms | simple errors | large req/s (latency ms) | server CPU µs per request (of the phase) | server cores | cores: uWS / codec / main / instances / other | generator cores | load avg |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...runs.flatMap((r) => PHASES.map((name) => row(r, name))),
  ].join('\n');
  console.log(`\n${header}`);
  fs.mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
  const file = path.join(ROOT, `bench/results/json-offload-${started.toISOString().replace(/[:.]/g, '-')}.md`);
  fs.writeFileSync(file, header + '\n');
  console.log(`\nwritten to ${path.relative(ROOT, file)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
