/**
 * How big the V8 young generation should be (src/core/young-generation.ts):
 * the real server with node's `--max-semi-space-size=S` (every isolate: the
 * flag wins over a worker's resourceLimits) for each S in turn, under the
 * same closed-loop load (src/perf from this process, binary tensors), and
 * per request: the GC pauses every isolate reported (`--trace-gc`: scavenges
 * and full collections), the server's CPU (all threads, /proc) and the
 * throughput, plus RSS after the load. Sizes alternate, ROUNDS times, and
 * medians are printed: on a shared 2-core box the pauses per request are the
 * steadier figure, throughput swings with what else runs.
 *   node dist/bench/young-generation.js [model=simple] [concurrency=32] [seconds=4] [sizes=1,2,4,8] [--model-repository=DIR] [--perf-shape=NAME:DIMS]
 */
import path from 'node:path';
import { parsePerfOptions } from '../src/perf/perf-options';
import { runPerf } from '../src/perf/perf-runner';
import { freePort, rssMb, startProc, successCount, treeCpuSeconds } from './bench-procs';
import { median } from './soak-verdict';

const ROUNDS = 3;
const ROOT = path.resolve(__dirname, '../..');

interface Step {
  reqPerSec: number;
  serverUs: number;
  gcUs: number;
  rssMb: number;
}

/** `[pid:isolate]  1234 ms: Scavenge 13.0 (24.7) -> 12.3 (24.7) MB, 0.57 / 0.00 ms ...`: the pause in ms. */
const GC_LINE = /: (?:Scavenge|Mark-Compact|Mark-sweep)[^,]*, ([\d.]+) \/ [\d.]+ ms/;

async function step(semi: number, model: string, concurrency: number, seconds: number, repo: string, perfFlags: string[]): Promise<Step> {
  const [hp, gp] = [await freePort(), await freePort()];
  let counting = false;
  let pausesMs = 0;
  let partial = '';
  const server = await startProc(
    process.execPath,
    [
      `--max-semi-space-size=${semi}`,
      '--trace-gc',
      path.join(ROOT, 'dist/src/cli.js'),
      `--model-repository=${repo}`,
      `--http-port=${hp}`,
      `--grpc-port=${gp}`,
      '--allow-metrics=false',
    ],
    hp,
    60_000,
    (d) => {
      const lines = (partial + d.toString('latin1')).split('\n');
      partial = lines.pop()!;
      if (!counting) return;
      for (const l of lines) {
        const m = GC_LINE.exec(l);
        if (m !== null) pausesMs += Number(m[1]);
      }
    },
  );
  const pid = server.child.pid!;
  const url = `http://127.0.0.1:${hp}`;
  try {
    const args = ['-m', model, '-u', url, `--concurrency-range=${concurrency}`, '-r', '1', ...perfFlags];
    await runPerf(parsePerfOptions([...args, '-p', '3000']), () => undefined); // warm-up: V8 compiles the hot path
    const n0 = await successCount(url, model);
    const cpu0 = treeCpuSeconds(pid);
    counting = true;
    const run = await runPerf(parsePerfOptions([...args, '-p', String(seconds * 1000)]), () => undefined);
    counting = false;
    const cpu = treeCpuSeconds(pid) - cpu0;
    const n = (await successCount(url, model)) - n0;
    return { reqPerSec: run.results[0]!.inferencesPerSec, serverUs: (cpu * 1e6) / n, gcUs: (pausesMs * 1000) / n, rssMb: rssMb(pid) };
  } finally {
    await server.stop();
  }
}

async function main(): Promise<void> {
  const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const flags = process.argv.slice(2).filter((a) => a.startsWith('--'));
  const [model = 'simple', concText = '32', secondsText = '4', sizesText = '1,2,4,8'] = positional;
  const repo = flags.find((f) => f.startsWith('--model-repository='))?.split('=')[1] ?? path.join(ROOT, 'model_repository');
  const perfFlags = flags.filter((f) => f.startsWith('--perf-')).map((f) => `--${f.slice(7)}`);
  const sizes = sizesText.split(',').map(Number);
  const steps = new Map<number, Step[]>(sizes.map((s) => [s, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of sizes) {
      const r = await step(s, model, Number(concText), Number(secondsText), repo, perfFlags);
      steps.get(s)!.push(r);
      console.log(
        `round ${round + 1} semi ${s} MB: ${r.reqPerSec.toFixed(0)} req/s, server ${r.serverUs.toFixed(1)} µs/req, GC pauses ${r.gcUs.toFixed(1)} µs/req, RSS ${r.rssMb.toFixed(0)} MB`,
      );
    }
  }
  console.log(`\n${model}, c=${concText}, ${secondsText} s per step, medians of ${ROUNDS} alternating rounds\n`);
  console.log('| semi-space MB | req/s | server CPU µs/request | GC pauses µs/request | RSS MB after load |');
  console.log('|---:|---:|---:|---:|---:|');
  for (const s of sizes) {
    const r = steps.get(s)!;
    console.log(
      `| ${s} | ${median(r.map((x) => x.reqPerSec)).toFixed(0)} | ${median(r.map((x) => x.serverUs)).toFixed(1)} | ${median(r.map((x) => x.gcUs)).toFixed(1)} | ${median(r.map((x) => x.rssMb)).toFixed(0)} |`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
