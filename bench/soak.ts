/**
 * Soak (issue 13 item 7): the real server in explicit mode on free loopback
 * ports, serving a steady ONNX model (`simple`) and a steady Python model
 * (`add_sub`, its stubs) at a fixed open-loop rate over HTTP and gRPC, while a
 * churn model (`add_vectors`, Python) is loaded, inferred once and unloaded
 * every `--churn-seconds`. Every `--sample-seconds` it samples the server
 * (bench/soak-census.ts) and the traffic. Phases: priming (every stream and
 * two churn cycles, one per protocol, so what is made on first use exists);
 * pause and an idle baseline census; warm-up (`--warmup-seconds`) and the
 * soak (`--minutes`) with load and churn, without a pause between them; pause
 * and a final idle census. The warm-up is 10 minutes by default: under this
 * load the busiest isolates (main and two worker threads) grow their V8
 * heaps from ~20–30 to ~50 MB committed each over the first ~9 minutes (the
 * young generation growing; bounded, no live-heap growth; bench/README.md
 * "Soak"), which a shorter warm-up reads as RSS growth. Verdicts (soak-verdict.ts):
 * RSS growth under 5%, threads / fds / stubs / /dev/shm / arena back to the
 * baseline, zero failed steady requests, the server's statistics equal to
 * what the client was answered. Prints a row per sample and the verdicts,
 * writes JSON to bench/results/, exits 1 when a criterion fails. Bounded: a
 * hard deadline kills its own server (by PID) and exits. A rate of 0 turns
 * that protocol's traffic off, `--churn-seconds=0` the churn (to tell what
 * grows); `--trace-gc` starts the server with V8's --trace-gc
 * (soak-trace-gc.ts), prints each isolate's heap after full GCs and its
 * committed size (soak-gc-trace.ts), and writes the server's output beside
 * the JSON.
 *
 *   node dist/bench/soak.js [--minutes=30] [--http-rate=200] [--grpc-rate=100]
 *     [--churn-seconds=15] [--sample-seconds=10] [--warmup-seconds=600]
 *     [--timeout-ms=10000] [--max-connections=16] [--trace-gc]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { makeRepo } from '../test/integration/repo-kit';
import { REPO_ROOT, startServer, type ServerProcess } from '../test/integration/server-process';
import { leftOver, takeCensus, type Census } from './soak-census';
import { ChurnLoop } from './soak-churn';
import { summarizeGcTrace } from './soak-gc-trace';
import { ADD_SUB, mergeIntervals, SIMPLE, SteadyStream, type Protocol } from './soak-traffic';
import { agreementVerdict, baselineVerdicts, failureVerdict, rssVerdict, type Verdict } from './soak-verdict';

const { values: opt } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    'http-rate': { type: 'string', default: '200' },
    'grpc-rate': { type: 'string', default: '100' },
    'churn-seconds': { type: 'string', default: '15' },
    'sample-seconds': { type: 'string', default: '10' },
    'warmup-seconds': { type: 'string', default: '600' },
    'timeout-ms': { type: 'string', default: '10000' },
    'max-connections': { type: 'string', default: '16' },
    'trace-gc': { type: 'boolean', default: false },
  },
});
const num = (k: Exclude<keyof typeof opt, 'trace-gc'>): number => {
  const v = Number(opt[k]);
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${k}=${String(opt[k])}: expected a number >= 0`);
  return v;
};
const MINUTES = num('minutes');
const SAMPLE_S = Math.max(1, num('sample-seconds'));
/** Rounded up to whole sample intervals, so that a sample marks the soak's start. */
const WARMUP_S = Math.ceil(num('warmup-seconds') / SAMPLE_S) * SAMPLE_S;
/** Steady traffic of the priming phase, after its two churn cycles. */
const PRIME_MS = 5000;
/** The RSS windows: 5 minutes, or a third of a shorter soak. */
const RSS_WINDOW_S = Math.min(300, (MINUTES * 60) / 3);
const RSS_LIMIT_PCT = 5;
/** How long a pause waits for the server to settle before a census. */
const SETTLE_MS = 60_000;
/** undici keeps an idle keep-alive connection ~4 s: a census waits that out so the server's socket count is the steady one. */
const QUIET_MS = 6000;
const CHURN_MODEL = 'add_vectors';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Sample extends Census {
  tS: number;
  http: ReturnType<typeof mergeIntervals>;
  grpc: ReturnType<typeof mergeIntervals>;
  churnCycles: number;
  churnFailed: number;
  churnLoaded: boolean;
}

function row(s: Sample): string {
  const proto = (p: Sample['http']): string => `${p.ok}/${p.failed} ${p.p50Ms.toFixed(1)}/${p.p99Ms.toFixed(1)}`;
  return (
    `| ${s.tS.toFixed(0)} | ${s.rssTreeMb.toFixed(1)} | ${s.rssMainMb.toFixed(1)} | ${s.threads} | ${s.fds.total} (${s.fds.sockets}) | ${s.stubs} | ${s.fds.shm} / ${s.shmFiles} | ` +
    `${(s.arenaBytes / 1024).toFixed(0)} | ${proto(s.http)} | ${proto(s.grpc)} | ${s.churnCycles} (${s.churnFailed})${s.churnLoaded ? ' *' : ''} |`
  );
}

const HEADER = [
  '| t s | RSS tree MB | RSS main MB | threads | fds (sockets) | stubs | shm fds / files | arena KiB | HTTP ok/failed p50/p99 ms | gRPC ok/failed p50/p99 ms | churn cycles (failed) |',
  '|---|---|---|---|---|---|---|---|---|---|---|',
];

/** Waits for the counts to hold still (and, given a target, to be at or under it), then takes the census. */
async function settledCensus(server: ServerProcess, target?: Record<string, number>): Promise<Census> {
  const pid = server.child.pid!;
  const end = Date.now() + SETTLE_MS;
  await sleep(QUIET_MS);
  let last = await takeCensus(pid, () => server.arenaUsedBytes());
  let steady = 0;
  while (Date.now() < end) {
    await sleep(1000);
    const c = await takeCensus(pid, () => server.arenaUsedBytes());
    const now = leftOver(c);
    const same = JSON.stringify(now) === JSON.stringify(leftOver(last));
    const atTarget = target === undefined || Object.entries(target).every(([k, v]) => (now[k] ?? Infinity) <= v);
    last = c;
    steady = same ? steady + 1 : 0;
    if (atTarget && steady >= 2) break;
  }
  return last;
}

/** Success and failure counts of a model in the server's statistics (all versions). */
async function serverCounts(url: string, model: string): Promise<{ success: number; fail: number }> {
  const res = await fetch(`${url}/v2/models/${model}/stats`);
  const j = (await res.json()) as { model_stats?: { inference_stats?: { success?: { count?: number | string }; fail?: { count?: number | string } } }[] };
  let success = 0;
  let fail = 0;
  for (const m of j.model_stats ?? []) {
    success += Number(m.inference_stats?.success?.count ?? 0);
    fail += Number(m.inference_stats?.fail?.count ?? 0);
  }
  return { success, fail };
}

async function main(): Promise<number> {
  const started = new Date();
  const repo = makeRepo(['simple', CHURN_MODEL]);
  // Only the server's node sees the flag (the stubs are Python; this process has started already).
  if (opt['trace-gc']) process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --require=${path.join(__dirname, 'soak-trace-gc.js')}`.trim();
  fs.cpSync(path.join(REPO_ROOT, 'test/integration/fixtures/python_models/add_sub'), path.join(repo, 'add_sub'), { recursive: true });
  const server = await startServer([
    `--model-repository=${repo}`,
    '--model-control-mode=explicit',
    '--load-model=simple',
    '--load-model=add_sub',
    '--http-address=127.0.0.1',
    '--allow-grpc=true',
    '--grpc-port=0',
    '--grpc-address=127.0.0.1',
  ]).catch((err: unknown) => {
    fs.rmSync(repo, { recursive: true, force: true });
    throw err;
  });
  try {
    return await soak(server, repo, started);
  } finally {
    // Ours, by PID: gone however the soak ended (stop() already ran on the normal path).
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    fs.rmSync(repo, { recursive: true, force: true });
  }
}

async function soak(server: ServerProcess, repo: string, started: Date): Promise<number> {
  const pid = server.child.pid!;
  // Bounded: whatever happens, the server (ours, by PID) is gone and this process ends.
  const deadlineMs = (WARMUP_S + MINUTES * 60) * 1000 + 4 * SETTLE_MS + 120_000;
  const hardStop = (code: number, why: string): void => {
    console.error(why);
    server.child.kill('SIGKILL');
    fs.rmSync(repo, { recursive: true, force: true });
    process.exit(code);
  };
  setTimeout(() => hardStop(2, `soak: past its deadline of ${(deadlineMs / 1000).toFixed(0)} s; killed the server (pid ${pid})`), deadlineMs).unref();
  process.once('SIGINT', () => hardStop(130, `soak: interrupted; killed the server (pid ${pid})`));

  const timeoutMs = num('timeout-ms');
  const maxConnections = Math.max(1, num('max-connections'));
  const rates: Record<Protocol, number> = { http: num('http-rate'), grpc: num('grpc-rate') };
  const ports: Record<Protocol, number> = { http: server.port, grpc: server.grpcPort };
  const streams = (['http', 'grpc'] as const).flatMap((p) =>
    [SIMPLE, ADD_SUB].map((m) => new SteadyStream(p, m, rates[p] / 2, ports[p], timeoutMs, maxConnections)),
  );
  const churnMs = num('churn-seconds') * 1000;
  const churn = new ChurnLoop(server.url, `127.0.0.1:${server.grpcPort}`, CHURN_MODEL, churnMs);
  const startAll = (): void => {
    streams.forEach((s) => s.start());
    if (churnMs > 0) churn.start();
  };
  const stopAll = async (): Promise<void> => {
    await Promise.all([...streams.map((s) => s.stop()), churn.stop()]);
  };
  console.log(
    `soak: server pid ${pid}, HTTP ${server.port}, gRPC ${server.grpcPort}; ${rates.http} req/s HTTP + ${rates.grpc} req/s gRPC over simple and add_sub; ` +
      `${churnMs > 0 ? `${CHURN_MODEL} loaded and unloaded every ${opt['churn-seconds']} s` : 'no churn'}; warm-up ${WARMUP_S} s, soak ${MINUTES} min, a sample every ${SAMPLE_S} s`,
  );

  // Prime: every stream and a churn cycle over each protocol once, so what the server makes on first use exists before the baseline.
  streams.forEach((s) => s.start());
  if (churnMs > 0) for (let i = 0; i < 2; i++) await churn.once();
  await sleep(PRIME_MS);
  await stopAll();
  const baseline = await settledCensus(server);
  console.log(`baseline (idle, after priming): ${JSON.stringify(leftOver(baseline))}, RSS tree ${baseline.rssTreeMb.toFixed(1)} MB`);

  // Warm-up and soak run on without a pause (an idle pause lets V8 shrink its heaps, and the first window would start low).
  streams.forEach((s) => s.takeInterval());
  let before = streams.map((s) => ({ ok: s.ok, failed: s.failed, delayed: s.delayed }));
  let churnBefore = churn.stats.cycles;
  startAll();
  const t0 = performance.now();
  let soakStart = t0;
  const samples: Sample[] = [];
  console.log(['', ...HEADER].join('\n'));
  for (let k = 1; k * SAMPLE_S <= WARMUP_S + MINUTES * 60; k++) {
    await sleep(Math.max(0, t0 + k * SAMPLE_S * 1000 - performance.now()));
    const byProto = (p: Protocol): Sample['http'] => mergeIntervals(streams.filter((s) => s.protocol === p).map((s) => s.takeInterval()));
    const http = byProto('http');
    const grpc = byProto('grpc');
    const s: Sample = {
      tS: (performance.now() - t0) / 1000 - WARMUP_S,
      ...(await takeCensus(pid, () => server.arenaUsedBytes())),
      http,
      grpc,
      churnCycles: churn.stats.cycles - churnBefore,
      churnFailed: churn.stats.failedCycles,
      churnLoaded: churn.loaded,
    };
    samples.push(s);
    console.log(row(s));
    if (k * SAMPLE_S === WARMUP_S) {
      // The soak proper starts here: its counts and its RSS windows.
      console.log(`|  | warm-up over: the soak's ${MINUTES} min start |  |  |  |  |  |  |  |  |  |`);
      before = streams.map((x) => ({ ok: x.ok, failed: x.failed, delayed: x.delayed }));
      churnBefore = churn.stats.cycles;
      soakStart = performance.now();
    }
  }
  const soakSeconds = (performance.now() - soakStart) / 1000;
  await stopAll();
  const final = await settledCensus(server, leftOver(baseline));
  console.log(
    `final (idle, after the soak): ${JSON.stringify(leftOver(final))}, RSS tree ${final.rssTreeMb.toFixed(1)} MB  (* = churn model loaded at that sample)`,
  );

  const verdicts: Verdict[] = [
    rssVerdict(
      samples.filter((s) => s.tS > 0).map((s) => ({ tS: s.tS, mb: s.rssTreeMb })),
      RSS_WINDOW_S,
      RSS_LIMIT_PCT,
    ),
  ];
  verdicts.push(...baselineVerdicts(leftOver(baseline), leftOver(final)));
  const streamSummary = streams.map((s, i) => ({
    stream: s.label,
    rate: s.rate,
    ok: s.ok - before[i]!.ok,
    failed: s.failed - before[i]!.failed,
    delayed: s.delayed - before[i]!.delayed,
    achievedRate: (s.ok + s.failed - before[i]!.ok - before[i]!.failed) / soakSeconds,
    failures: s.failures,
  }));
  for (const p of (['http', 'grpc'] as const).filter((x) => rates[x] > 0)) {
    // The whole run counts (priming and warm-up too): a failed request is one whenever it happens.
    const mine = streams.filter((s) => s.protocol === p);
    verdicts.push(
      failureVerdict(
        `steady models over ${p === 'http' ? 'HTTP' : 'gRPC'}, the whole run`,
        mine.reduce((n, s) => n + s.failed, 0),
        mine.reduce((n, s) => n + s.ok + s.failed, 0),
      ),
    );
  }
  for (const m of [SIMPLE, ADD_SUB]) {
    const c = await serverCounts(server.url, m.name);
    const mine = streams.filter((s) => s.model === m);
    verdicts.push(
      agreementVerdict(
        m.name,
        mine.reduce((n, s) => n + s.ok, 0),
        c.success,
        c.fail,
      ),
    );
  }
  const churnCycles = churn.stats.cycles - churnBefore;
  if (churnMs > 0) {
    verdicts.push({
      criterion: `churn cycles of ${CHURN_MODEL} all succeeded`,
      pass: churn.stats.failedCycles === 0 && churnCycles > 0,
      detail: `${churn.stats.failedCycles} failed of ${churn.stats.cycles} (${churnCycles} in the soak)`,
    });
  }
  churn.close();
  let arenaAtStop = 'back at its startup value';
  try {
    await server.stop();
  } catch (err) {
    arenaAtStop = (err as Error).message;
    verdicts.push({ criterion: 'tensor arena back at its startup value at stop', pass: false, detail: arenaAtStop });
  }

  console.log('\n| stream | rate req/s | achieved req/s | ok | failed | delayed sends |\n|---|---|---|---|---|---|');
  for (const s of streamSummary) console.log(`| ${s.stream} | ${s.rate} | ${s.achievedRate.toFixed(1)} | ${s.ok} | ${s.failed} | ${s.delayed} |`);
  const q = (xs: number[]): string => (xs.length === 0 ? '-' : `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`);
  console.log(`churn: ${churn.stats.cycles} cycles, load ${q(churn.stats.loadMs)} ms, unload ${q(churn.stats.unloadMs)} ms`);
  for (const f of [...streamSummary.flatMap((s) => s.failures), ...churn.stats.failures].slice(0, 20)) console.log(`failure: ${f}`);
  console.log('');
  for (const v of verdicts) console.log(`${v.pass ? 'PASS' : 'FAIL'}  ${v.criterion}: ${v.detail}`);
  const pass = verdicts.every((v) => v.pass);
  console.log(
    `\nsoak ${pass ? 'PASSED' : 'FAILED'}: ${soakSeconds.toFixed(0)} s after ${WARMUP_S} s of warm-up; load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );

  const file = path.join(REPO_ROOT, 'bench/results', `soak-${started.toISOString().replace(/[:.]/g, '-')}.json`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(
    file,
    JSON.stringify(
      {
        command: `node dist/bench/soak.js ${process.argv.slice(2).join(' ')}`.trim(),
        started: started.toISOString(),
        node: process.version,
        cpus: os.cpus().length,
        loadAverageAtEnd: os.loadavg(),
        options: opt,
        soakSeconds,
        rssWindowS: RSS_WINDOW_S,
        baseline,
        final,
        samples: samples.map((s) => ({ ...s })),
        streams: streamSummary,
        churn: churn.stats,
        arenaAtStop,
        verdicts,
        pass,
      },
      null,
      2,
    ) + '\n',
  );
  console.log(`written to ${path.relative(REPO_ROOT, file)}`);
  if (opt['trace-gc']) {
    console.log(
      '\n| isolate | s on its clock, first–last GC | scavenges | full GCs | heap MB after the first / last full GC | committed MB max / last |\n|---|---|---|---|---|---|',
    );
    const f = (mb: number | undefined): string => (mb === undefined ? '-' : mb.toFixed(1));
    const isolates = summarizeGcTrace(server.output(), pid);
    // Isolates of a minute or more: the main thread and the long-lived workers (a churned model's host threads live seconds).
    const shortLived = isolates.filter((g) => g.lastMs - g.firstMs < 60_000).length;
    for (const g of isolates.filter((x) => x.lastMs - x.firstMs >= 60_000)) {
      console.log(
        `| ${g.isolate} | ${(g.firstMs / 1000).toFixed(0)}–${(g.lastMs / 1000).toFixed(0)} | ${g.scavenges} | ${g.fullGcs} | ${f(g.firstFullAfterMb)} / ${f(g.lastFullAfterMb)} | ${f(g.maxCommittedMb)} / ${f(g.lastCommittedMb)} |`,
      );
    }
    console.log(`(and ${shortLived} isolates that collected for less than a minute)`);
    const log = file.replace(/\.json$/, '-server.log');
    fs.writeFileSync(log, server.output());
    console.log(`server output (--trace-gc) written to ${path.relative(REPO_ROOT, log)}`);
  }
  return pass ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
