/**
 * Where a request's CPU goes, thread by thread: nodetron serving
 * model_repository/ under closed-loop load from `nodetron perf`'s generator
 * (this process), with the CPU time and context switches of every OS thread
 * of the server read from /proc before and after each step. Threads are
 * told apart by name (src/dataplane/thread-name.ts): `nt:http-N` (uWS),
 * `nt:grpc` (grpc-js), `nt:<instance>` (model instances), the main thread
 * (scheduler), and the unnamed rest (V8's GC/compiler helpers, libuv). Per request = thread
 * CPU over the step divided by the requests the server counted in it.
 *   node dist/bench/thread-cpu.js [model=simple] [concurrencies=1,32] [seconds=4] [json|binary|grpc] [server flags...]
 * (server flags starting with `--v8-` go to node without the prefix: `--v8-max-semi-space-size=16` sizes
 * the young generation as node's default does instead of core/young-generation.ts's;
 * those starting with `--perf-` go to the load generator: `--perf-shape=INPUT0:16`;
 * `--model-repository=DIR` replaces model_repository/, e.g. bench/models/repo for mlp).
 */
import path from 'node:path';
import { parsePerfOptions } from '../src/perf/perf-options';
import { runPerf } from '../src/perf/perf-runner';
import { MAIN_NODE_FLAG, userSizesYoungGeneration } from '../src/core/young-generation';
import { TICK_US, freePort, sampleThreads, startProc, successCount } from './bench-procs';

async function main(): Promise<void> {
  const [model = 'simple', concText = '1,32', secondsText = '4', format = 'json', ...extra] = process.argv.slice(2);
  // Node's flags as the executable passes them (core/young-generation.ts), unless the command line sizes the young generation itself.
  const v8Flags = extra.filter((a) => a.startsWith('--v8-')).map((a) => `--${a.slice(5)}`);
  const nodeFlags = userSizesYoungGeneration(v8Flags, '') ? v8Flags : [MAIN_NODE_FLAG, ...v8Flags];
  const perfFlags = extra.filter((a) => a.startsWith('--perf-')).map((a) => `--${a.slice(7)}`);
  const serverFlags = extra.filter((a) => !a.startsWith('--v8-') && !a.startsWith('--perf-'));
  const root = path.resolve(__dirname, '../..');
  const [hp, gp] = [await freePort(), await freePort()];
  const repo = serverFlags.some((f) => f.startsWith('--model-repository')) ? [] : [`--model-repository=${path.join(root, 'model_repository')}`];
  const server = await startProc(
    process.execPath,
    [...nodeFlags, path.join(root, 'dist/src/cli.js'), ...repo, `--http-port=${hp}`, `--grpc-port=${gp}`, '--allow-metrics=false', ...serverFlags],
    hp,
  );
  const pid = server.child.pid!;
  try {
    for (const c of concText.split(',').map(Number)) {
      const args = [
        '-m',
        model,
        '-u',
        `127.0.0.1:${format === 'grpc' ? gp : hp}`,
        `--concurrency-range=${c}`,
        '-p',
        String(Number(secondsText) * 1000),
        '-r',
        '1',
        '-s',
        '100',
        ...perfFlags,
      ];
      if (format === 'grpc') args.push('-i', 'grpc');
      if (format === 'json') args.push('--input-tensor-format=json', '--output-tensor-format=json');
      const before = sampleThreads(pid);
      const n0 = await successCount(`http://127.0.0.1:${hp}`, model);
      const gen0 = process.cpuUsage();
      const run = await runPerf(parsePerfOptions(args));
      const gen = process.cpuUsage(gen0);
      const after = sampleThreads(pid);
      const n = (await successCount(`http://127.0.0.1:${hp}`, model)) - n0;
      const r = run.results[0]!;
      const groups = new Map<string, { user: number; sys: number; switches: number; threads: number }>();
      for (const [tid, a] of after) {
        const b = before.get(tid) ?? { ...a, userTicks: 0, sysTicks: 0, switches: 0 };
        const g = groups.get(a.name) ?? { user: 0, sys: 0, switches: 0, threads: 0 };
        g.user += a.userTicks - b.userTicks;
        g.sys += a.sysTicks - b.sysTicks;
        g.switches += a.switches - b.switches;
        g.threads++;
        groups.set(a.name, g);
      }
      console.log(
        `\n${model} ${format} c=${c}: ${r.requestsPerSec.toFixed(0)} req/s, p50 ${(r.latency.p50Us / 1000).toFixed(3)} ms, ` +
          `p99 ${(r.latency.p99Us / 1000).toFixed(3)} ms; ${n} requests counted by the server over the step (warm-up included)`,
      );
      console.log('| thread | CPU µs/request (user + sys) | context switches/request |');
      console.log('|---|---|---|');
      let total = 0;
      for (const [name, g] of [...groups].sort((x, y) => y[1].user + y[1].sys - (x[1].user + x[1].sys))) {
        const us = ((g.user + g.sys) * TICK_US) / n;
        total += us;
        if (g.user + g.sys === 0 && g.switches < n / 100) continue;
        const label = g.threads > 1 ? `${name} (${g.threads} threads)` : name;
        console.log(
          `| ${label} | ${us.toFixed(1)} (${((g.user * TICK_US) / n).toFixed(1)} + ${((g.sys * TICK_US) / n).toFixed(1)}) | ${(g.switches / n).toFixed(2)} |`,
        );
      }
      console.log(`| **server total** | **${total.toFixed(1)}** | |`);
      console.log(`| generator (this process) | ${((gen.user + gen.system) / n).toFixed(1)} | |`);
    }
  } finally {
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
