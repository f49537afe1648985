/**
 * The side-by-side bench, one command: `npm run bench -- [--quick]`.
 * In one session on this machine: nodetron; the node:http + onnxruntime-node
 * peer; FastAPI + uvicorn + onnxruntime; the uWS frontend ceiling; raw
 * in-process onnxruntime-node at batch 1..32 (compute ceiling). One server
 * runs at a time; the load generator (src/perf, closed loop) runs in this
 * process on the same cores. Prints a markdown report and writes it to
 * bench/results/ (gitignored). Models: bench/gen_bench_models.py.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MAIN_NODE_FLAG } from '../src/core/young-generation';
import { parsePerfOptions } from '../src/perf/perf-options';
import { httpRequestBytes, runPerf } from '../src/perf/perf-runner';
import type { PerfTensor } from '../src/perf/input-tensors';
import type { StepResult } from '../src/perf/load-driver';
import { freePort, hasWrk, startProc, treeCpuSeconds, treeRssMb, wrkRps, type Proc } from './bench-procs';
import { ortCeiling, type CeilingRow } from './peers/ort-ceiling';

const ROOT = path.resolve(__dirname, '../..');
const REPO = path.join(ROOT, 'bench/models/repo');
const quick = process.argv.includes('--quick');
/** `--only=a,b`: just the scenarios whose id contains one of these (no start-up rows; ceilings of their models only). */
const only = argValue('--only')
  ?.split(',')
  .filter((x) => x !== '');
/** `--nodetron-args="--http-thread-count=1 ..."`: extra flags for the nodetron server (A/B runs). */
/** `--servers=nodetron,node-http`: run only these servers (default: all). */
const serverFilter = argValue('--servers')?.split(',');
const nodetronArgs =
  argValue('--nodetron-args')
    ?.split(' ')
    .filter((x) => x !== '') ?? [];

function argValue(name: string): string | undefined {
  const a = process.argv.find((x) => x.startsWith(name + '='));
  return a?.slice(name.length + 1);
}
const INTERVAL = quick ? 1000 : 3000;
const TRIALS = quick ? 3 : 5;
const WARMUP_MS = quick ? 1500 : 3000;

interface Scenario {
  id: string;
  model: string;
  args: string[];
  concurrency: number;
  /** Servers that run it. */
  on: string[];
}

const ALL_SCENARIOS: Scenario[] = [
  {
    id: 'simple JSON c=1',
    model: 'simple',
    args: ['--input-tensor-format=json', '--output-tensor-format=json'],
    concurrency: 1,
    on: ['nodetron', 'node-http', 'fastapi'],
  },
  {
    id: 'simple JSON c=32',
    model: 'simple',
    args: ['--input-tensor-format=json', '--output-tensor-format=json'],
    concurrency: 32,
    on: ['nodetron', 'node-http', 'fastapi', 'uws-ceiling'],
  },
  {
    id: 'simple + dyn. batching JSON c=32',
    model: 'simple_db',
    args: ['--input-tensor-format=json', '--output-tensor-format=json'],
    concurrency: 32,
    on: ['nodetron'],
  },
  { id: 'simple binary c=32', model: 'simple', args: [], concurrency: 32, on: ['nodetron', 'node-http'] },
  { id: 'simple gRPC c=32', model: 'simple', args: ['-i', 'grpc'], concurrency: 32, on: ['nodetron'] },
  { id: 'mlp binary c=64', model: 'mlp', args: [], concurrency: 64, on: ['nodetron', 'node-http', 'fastapi', 'uws-ceiling'] },
  { id: 'resnet50 binary c=8', model: 'resnet50', args: [], concurrency: 8, on: ['nodetron', 'node-http', 'fastapi', 'uws-ceiling'] },
  {
    id: 'add_vectors JSON c=8',
    model: 'add_vectors',
    args: ['--input-tensor-format=json', '--output-tensor-format=json', '--shape', 'INPUT0:16', '--shape', 'INPUT1:16'],
    concurrency: 8,
    on: ['nodetron', 'fastapi'],
  },
  {
    id: 'add_vectors JSON c=16',
    model: 'add_vectors',
    args: ['--input-tensor-format=json', '--output-tensor-format=json', '--shape', 'INPUT0:16', '--shape', 'INPUT1:16'],
    concurrency: 16,
    on: ['nodetron', 'fastapi'],
  },
];

const SCENARIOS = ALL_SCENARIOS.filter((s) => only === undefined || only.some((o) => s.id.includes(o))).map((s) => ({
  ...s,
  on: s.on.filter((srv) => serverFilter === undefined || serverFilter.includes(srv)),
}));
const wanted = (model: string): boolean => SCENARIOS.some((s) => s.model === model);
const runs = (server: string): boolean => SCENARIOS.some((s) => s.on.includes(server));

const results = new Map<string, StepResult>();
/** CPU per request (µs) of the server's process tree and of this generator, by result key. */
const cpuPerReq = new Map<string, { server: number; generator: number }>();
const key = (scenario: string, server: string): string => `${scenario} @ ${server}`;
const tensorsOf = new Map<string, PerfTensor[]>();
const notes: string[] = [];
const log = (s: string): void => console.log(s);

function options(s: Scenario, url: string): ReturnType<typeof parsePerfOptions> {
  return parsePerfOptions(['-m', s.model, '-u', url, `--concurrency-range=${s.concurrency}`, '-p', String(INTERVAL), '-r', String(TRIALS), ...s.args]);
}

async function measure(server: string, httpUrl: string, grpcUrl: string | undefined, pid: number): Promise<void> {
  for (const s of SCENARIOS.filter((x) => x.on.includes(server))) {
    const grpc = s.args.includes('grpc');
    const o = options(s, grpc ? grpcUrl! : httpUrl);
    try {
      // Warm-up, not recorded: the JITs of server and generator settle first
      // (at c=1 V8 still recompiles hot functions for several seconds after start).
      const preset = server === 'nodetron' ? {} : { tensors: tensorsOf.get(s.model), stats: false };
      await runPerf({ ...o, measurementIntervalMs: WARMUP_MS, maxTrials: 1, stabilityPercentage: 100 }, () => undefined, preset);
      const t0 = performance.now();
      const [server0, gen0] = [treeCpuSeconds(pid), process.cpuUsage()];
      const run = await runPerf(o, () => undefined, preset);
      const wallS = (performance.now() - t0) / 1000;
      const gen = process.cpuUsage(gen0);
      if (server === 'nodetron') tensorsOf.set(s.model, run.tensors);
      const r = run.results[0]!;
      results.set(key(s.id, server), r);
      // Cores busy over the whole run (warm-up windows included) divided by the steady rate.
      const perReq = (cpuS: number): number => ((cpuS / wallS) * 1e6) / r.requestsPerSec;
      const cpu = { server: perReq(treeCpuSeconds(pid) - server0), generator: perReq((gen.user + gen.system) / 1e6) };
      cpuPerReq.set(key(s.id, server), cpu);
      log(
        `  ${s.id.padEnd(22)} ${server.padEnd(12)} ${r.requestsPerSec.toFixed(0).padStart(6)} req/s  p50 ${(r.latency.p50Us / 1000).toFixed(2)} ms  p99 ${(r.latency.p99Us / 1000).toFixed(2)} ms  errors ${r.errors}` +
          `  cpu/req server ${cpu.server.toFixed(0)} us, generator ${cpu.generator.toFixed(0)} us` +
          (r.server
            ? `  [server: queue ${r.server.queueUs.toFixed(0)} us, infer ${r.server.computeInferUs.toFixed(0)} us, batch ${r.server.avgBatch.toFixed(1)}]`
            : ''),
      );
    } catch (err) {
      notes.push(`${s.id} on ${server} failed: ${(err as Error).message.split('\n')[0]}`);
      log(`  ${s.id} on ${server}: FAILED ${(err as Error).message.split('\n')[0]}`);
    }
  }
}

async function withProc(p: Promise<Proc>, fn: (proc: Proc) => Promise<void>): Promise<void> {
  const proc = await p;
  try {
    await fn(proc);
  } finally {
    await proc.stop();
  }
}

const CLI = path.join(ROOT, 'dist/src/cli.js');

async function main(): Promise<void> {
  if (!fs.existsSync(path.join(REPO, 'resnet50/1/model.onnx')) || !fs.existsSync(path.join(REPO, 'simple_db'))) {
    log('generating bench models (bench/gen_bench_models.py)...');
    const r = spawnSync('python3', [path.join(ROOT, 'bench/gen_bench_models.py')], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error('model generation failed (pip install onnx numpy)');
  }
  const started = new Date();
  // 1. Start-to-ready and idle RSS.
  const startup: string[] = [];
  if (only === undefined) {
    const [hp, gp, mp] = [await freePort(), await freePort(), await freePort()];
    await withProc(
      startProc(
        process.execPath,
        [MAIN_NODE_FLAG, CLI, `--model-repository=${path.join(ROOT, 'model_repository')}`, `--http-port=${hp}`, `--grpc-port=${gp}`, `--metrics-port=${mp}`],
        hp,
      ),
      async (p) => {
        await new Promise((r) => setTimeout(r, 1500));
        startup.push(
          `| nodetron, model_repository/ (6 models, 2 Python stubs; HTTP+gRPC+metrics) | ${p.readyMs.toFixed(0)} | ${treeRssMb(p.child.pid!).toFixed(0)} |`,
        );
      },
    );
    const hp2 = await freePort();
    await withProc(
      startProc(
        process.execPath,
        [
          MAIN_NODE_FLAG,
          CLI,
          `--model-repository=${REPO}`,
          `--http-port=${hp2}`,
          '--allow-grpc=false',
          '--allow-metrics=false',
          '--model-control-mode=explicit',
          '--load-model=simple',
          '--load-model=mlp',
          '--load-model=resnet50',
        ],
        hp2,
      ),
      async (p) => {
        startup.push(`| nodetron, ONNX models only (simple, mlp, resnet50 98 MB) | ${p.readyMs.toFixed(0)} | ${treeRssMb(p.child.pid!).toFixed(0)} |`);
      },
    );
    log(startup.join('\n'));
  }
  // 2. Compute ceilings (in-process ORT).
  const ceilings: Record<string, CeilingRow[]> = {};
  const cms = quick ? 800 : 2000;
  if (wanted('simple')) ceilings.simple = await ortCeiling(path.join(REPO, 'simple/1/model.onnx'), 'INPUT0', [16], 'int32', [1], cms, ['INPUT1']);
  if (wanted('mlp'))
    ceilings.mlp = await ortCeiling(path.join(REPO, 'mlp/1/model.onnx'), 'INPUT', [256], 'float32', quick ? [1, 8, 32] : [1, 2, 4, 8, 16, 32], cms);
  if (wanted('resnet50'))
    ceilings.resnet50 = await ortCeiling(
      path.join(REPO, 'resnet50/1/model.onnx'),
      'INPUT',
      [3, 224, 224],
      'float32',
      quick ? [1, 8] : [1, 2, 4, 8],
      quick ? 2000 : 4000,
    );
  for (const [m, rows] of Object.entries(ceilings)) log(`ORT ceiling ${m}: ${rows.map((r) => `b${r.batch} ${r.rowsPerSec.toFixed(0)}/s`).join(', ')}`);

  // 3. Servers, one at a time.
  let wrkLine = '';
  const [hp, gp] = [await freePort(), await freePort()];
  if (runs('nodetron')) {
    log('nodetron');
    await withProc(
      startProc(
        process.execPath,
        [MAIN_NODE_FLAG, CLI, `--model-repository=${REPO}`, `--http-port=${hp}`, `--grpc-port=${gp}`, '--allow-metrics=false', ...nodetronArgs],
        hp,
      ),
      async (p) => {
        await measure('nodetron', `127.0.0.1:${p.port}`, `127.0.0.1:${gp}`, p.child.pid!);
        // The generator against wrk on the same endpoint and body.
        const t = tensorsOf.get('simple');
        const jsonC32 = SCENARIOS.find((x) => x.id === 'simple JSON c=32');
        if (t !== undefined && hasWrk() && jsonC32 !== undefined) {
          const o = options(jsonC32, `127.0.0.1:${p.port}`);
          const req = httpRequestBytes(o, t);
          const split = req.indexOf('\r\n\r\n');
          const w = wrkRps(
            `http://127.0.0.1:${p.port}/v2/models/simple/infer`,
            req.subarray(split + 4),
            { 'Content-Type': 'application/json' },
            32,
            quick ? 3 : 6,
          );
          const ours = results.get(key('simple JSON c=32', 'nodetron'));
          wrkLine = `wrk -t1 -c32 on the same endpoint and body: ${w?.toFixed(0) ?? 'failed'} req/s; nodetron perf: ${ours?.requestsPerSec.toFixed(0) ?? '-'} req/s`;
          log(wrkLine);
        }
      },
    );
  }
  const peerPort = await freePort();
  const onnx = (m: string): string => `${m}=${path.join(REPO, m, '1/model.onnx')}`;
  if (runs('node-http')) {
    log('node-http peer');
    await withProc(
      startProc(
        process.execPath,
        [path.join(ROOT, 'dist/bench/peers/node-http-server.js'), String(peerPort), onnx('simple'), onnx('mlp'), onnx('resnet50')],
        peerPort,
      ),
      (p) => measure('node-http', `127.0.0.1:${p.port}`, undefined, p.child.pid!),
    );
  }
  if (runs('fastapi')) {
    log('fastapi peer');
    await withProc(
      startProc(
        'python3',
        [path.join(ROOT, 'bench/peers/fastapi_server.py'), String(peerPort), onnx('simple'), onnx('mlp'), onnx('resnet50'), 'add_vectors'],
        peerPort,
      ),
      (p) => measure('fastapi', `127.0.0.1:${p.port}`, undefined, p.child.pid!),
    );
  }
  if (runs('uws-ceiling')) {
    log('uws ceiling');
    await withProc(startProc(process.execPath, [path.join(ROOT, 'dist/bench/peers/uws-ceiling.js'), String(peerPort)], peerPort), (p) =>
      measure('uws-ceiling', `127.0.0.1:${p.port}`, undefined, p.child.pid!),
    );
  }

  const report = renderReport(started, startup, ceilings, wrkLine);
  console.log('\n' + report);
  fs.mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
  const file = path.join(ROOT, `bench/results/side-by-side-${started.toISOString().replace(/[:.]/g, '-')}.md`);
  fs.writeFileSync(file, report);
  log(`\nwritten to ${path.relative(ROOT, file)}`);
}

function renderReport(started: Date, startup: string[], ceilings: Record<string, CeilingRow[]>, wrkLine: string): string {
  const servers = ['nodetron', 'node-http', 'fastapi', 'uws-ceiling'];
  const cell = (s: string, srv: string): string => {
    const r = results.get(key(s, srv));
    return r === undefined
      ? '–'
      : `${r.requestsPerSec.toFixed(0)} (p50 ${(r.latency.p50Us / 1000).toFixed(2)}, p99 ${(r.latency.p99Us / 1000).toFixed(2)})${r.errors ? ` ${r.errors} err` : ''}`;
  };
  const cpuCell = (s: string, srv: string): string => {
    const c = cpuPerReq.get(key(s, srv));
    return c === undefined ? '–' : `${c.server.toFixed(0)} / ${c.generator.toFixed(0)}`;
  };
  const rps = (s: string, srv: string): number => results.get(key(s, srv))?.requestsPerSec ?? NaN;
  const best = (m: string): number => Math.max(...(ceilings[m] ?? []).map((r) => r.rowsPerSec));
  const ratio = (a: number, b: number): string => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? (a / b).toFixed(2) + 'x' : 'n/a');
  const pass = (ok: boolean | undefined): string => (ok === undefined ? '?' : ok ? 'met' : 'NOT met');
  const mlpLower = Math.min(best('mlp'), rps('mlp binary c=64', 'uws-ceiling'));
  const c1 = results.get(key('simple JSON c=1', 'nodetron'));
  const startupRows = startup.map((l) => l);
  const targets: [string, string, boolean | undefined][] = [
    [
      'simple HTTP JSON c=32 vs node:http peer (≥ 1.5x)',
      ratio(rps('simple JSON c=32', 'nodetron'), rps('simple JSON c=32', 'node-http')),
      rps('simple JSON c=32', 'nodetron') >= 1.5 * rps('simple JSON c=32', 'node-http'),
    ],
    [
      'simple HTTP JSON c=32 vs FastAPI (≥ 8x)',
      ratio(rps('simple JSON c=32', 'nodetron'), rps('simple JSON c=32', 'fastapi')),
      rps('simple JSON c=32', 'nodetron') >= 8 * rps('simple JSON c=32', 'fastapi'),
    ],
    [
      `mlp binary c=64 vs lower ceiling ${mlpLower.toFixed(0)}/s (≥ 0.70)`,
      ratio(rps('mlp binary c=64', 'nodetron'), mlpLower),
      rps('mlp binary c=64', 'nodetron') >= 0.7 * mlpLower,
    ],
    [
      'mlp binary c=64 vs node:http peer (≥ 5x)',
      ratio(rps('mlp binary c=64', 'nodetron'), rps('mlp binary c=64', 'node-http')),
      rps('mlp binary c=64', 'nodetron') >= 5 * rps('mlp binary c=64', 'node-http'),
    ],
    [
      `resnet50 binary c=8 vs ORT in-process ${best('resnet50').toFixed(1)}/s (≥ 0.90)`,
      ratio(rps('resnet50 binary c=8', 'nodetron'), best('resnet50')),
      rps('resnet50 binary c=8', 'nodetron') >= 0.9 * best('resnet50'),
    ],
    [
      'Python add_vectors vs FastAPI+numpy (≥ 2x)',
      ratio(rps('add_vectors JSON c=8', 'nodetron'), rps('add_vectors JSON c=8', 'fastapi')),
      rps('add_vectors JSON c=8', 'nodetron') >= 2 * rps('add_vectors JSON c=8', 'fastapi'),
    ],
    [
      'gRPC simple c=32 vs HTTP JSON c=32 (≥ 1x)',
      ratio(rps('simple gRPC c=32', 'nodetron'), rps('simple JSON c=32', 'nodetron')),
      rps('simple gRPC c=32', 'nodetron') >= rps('simple JSON c=32', 'nodetron'),
    ],
    [
      'simple c=1 p50 ≤ 0.25 ms, p99 ≤ 1 ms',
      c1 ? `p50 ${(c1.latency.p50Us / 1000).toFixed(3)} ms, p99 ${(c1.latency.p99Us / 1000).toFixed(3)} ms` : 'n/a',
      c1 ? c1.latency.p50Us <= 250 && c1.latency.p99Us <= 1000 : undefined,
    ],
  ];
  return (
    [
      `Run: \`npm run bench${quick ? ' -- --quick' : ''}\`, ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC, ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}.`,
      `Closed loop, after ${WARMUP_MS} ms of unrecorded warm-up at the same settings, ${TRIALS} windows of ${INTERVAL} ms at most (the last 3 are reported); the load generator runs on the same ${os.cpus().length} cores as the server.`,
      '',
      '| scenario (req/s, latency ms) | nodetron | node:http + ORT | FastAPI + ORT | uWS ceiling |',
      '|---|---|---|---|---|',
      ...SCENARIOS.map((s) => `| ${s.id} | ${servers.map((srv) => cell(s.id, srv)).join(' | ')} |`),
      '',
      'CPU per request, µs (server process tree / this generator), cores busy over the run divided by the rate:',
      '',
      '| scenario | nodetron | node:http + ORT | FastAPI + ORT | uWS ceiling |',
      '|---|---|---|---|---|',
      ...SCENARIOS.map((s) => `| ${s.id} | ${servers.map((srv) => cpuCell(s.id, srv)).join(' | ')} |`),
      '',
      '| compute ceiling (in-process onnxruntime-node) | rows/s by batch |',
      '|---|---|',
      ...Object.entries(ceilings).map(([m, rows]) => `| ${m} | ${rows.map((r) => `b${r.batch}: ${r.rowsPerSec.toFixed(0)}`).join(', ')} |`),
      '',
      '| start-up | start-to-ready ms | idle RSS MB (all processes) |',
      '|---|---|---|',
      ...startupRows,
      '',
      '| target | measured | |',
      '|---|---|---|',
      ...targets.map(([t, m, ok]) => `| ${t} | ${m} | ${pass(ok)} |`),
      '',
      wrkLine,
      ...notes.map((n) => `- ${n}`),
    ].join('\n') + '\n'
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
