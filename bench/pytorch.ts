/**
 * The pytorch backend against in-process torch, side by side in one run
 * (issue 17's target: at least 90% of in-process throughput). The model is
 * a ResNet-18-shaped TorchScript classifier (bench/torch_resnet18.py, random
 * weights) in a temporary repository, one instance with
 * INTRA_OP_THREAD_COUNT = <threads>. Each round measures, for <seconds> each:
 *   in-process torch (same file, torch.set_num_threads(<threads>)), batch 1;
 *   nodetron, 8 connections, one FP32 [1,3,224,224] image per request as
 *   binary tensor data (HTTP binary extension, binary output), no dynamic
 *   batching (batches of 1, the in-process case's shape);
 *   nodetron, the same load with dynamic batching (max_batch_size 8);
 *   in-process torch at batch 8 (what dynamic batching's batches cost).
 * The table gives each case's median over the rounds and the ratio to
 * in-process batch 1, and for the server cases the p50 latency and the CPU
 * the server process itself spent per request (all its threads; the stub's
 * torch is a child process, not counted). Usage:
 *   node dist/bench/pytorch.js [seconds=15] [rounds=3] [threads=<cores>]
 * Needs python3 with torch.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildInferBody } from '../src/client/kserve-http-client';
import { REPO_ROOT, startServer } from '../test/integration/server-process';
import { runLoad } from './load';

const GEN = path.join(REPO_ROOT, 'bench/torch_resnet18.py');
const IMAGE = [1, 3, 224, 224];

function config(name: string, threads: number, dynamic: boolean): string {
  return [
    `name: "${name}"`,
    'platform: "pytorch_libtorch"',
    'max_batch_size: 8',
    'input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] } ]',
    'output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 1000 ] } ]',
    'instance_group [ { kind: KIND_CPU count: 1 } ]',
    `parameters { key: "INTRA_OP_THREAD_COUNT" value { string_value: "${threads}" } }`,
    ...(dynamic ? ['dynamic_batching { max_queue_delay_microseconds: 5000 }'] : []),
  ].join('\n');
}

function inProcess(modelPt: string, threads: number, batch: number, seconds: number): number {
  const out = execFileSync('python3', [GEN, 'run', modelPt, String(threads), String(batch), String(seconds)], { stdio: ['ignore', 'pipe', 'inherit'] });
  return (JSON.parse(out.toString()) as { images_per_s: number }).images_per_s;
}

/** CPU seconds (user + system, all threads) of the process itself, not its children (the stubs). */
function ownCpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in USER_HZ
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 15);
  const rounds = Number(process.argv[3] ?? 3);
  const threads = Number(process.argv[4] ?? os.availableParallelism());
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-bench-torch-'));
  execFileSync('python3', [GEN, 'save', path.join(repo, 'resnet18')], { stdio: 'inherit' });
  fs.cpSync(path.join(repo, 'resnet18'), path.join(repo, 'resnet18_db'), { recursive: true });
  fs.writeFileSync(path.join(repo, 'resnet18', 'config.pbtxt'), config('resnet18', threads, false));
  fs.writeFileSync(path.join(repo, 'resnet18_db', 'config.pbtxt'), config('resnet18_db', threads, true));
  const modelPt = path.join(repo, 'resnet18', '1', 'model.pt');

  const pixels = new Float32Array(IMAGE.reduce((a, b) => a * b, 1)).map((_, i) => ((i * 7919) % 1000) / 1000);
  const { body, headerLength } = buildInferBody([{ name: 'INPUT__0', datatype: 'FP32', shape: IMAGE, data: new Uint8Array(pixels.buffer) }], {
    binaryDataOutput: true,
  });
  const headers = { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(headerLength) };

  const results: Record<string, number[]> = { inproc1: [], server: [], serverDb: [], inproc8: [] };
  const p50: Record<string, number[]> = { server: [], serverDb: [] };
  /** The server's own CPU ms per request (HTTP, admission, scheduling, host thread copies; not torch). */
  const cpuMs: Record<string, number[]> = { server: [], serverDb: [] };
  const server = await startServer([`--model-repository=${repo}`], 180_000);
  try {
    for (let round = 0; round < rounds; round++) {
      results.inproc1!.push(inProcess(modelPt, threads, 1, seconds));
      for (const [key, model] of [
        ['server', 'resnet18'],
        ['serverDb', 'resnet18_db'],
      ] as const) {
        const pid = server.child.pid!;
        const cpu0 = ownCpuSeconds(pid);
        const r = await runLoad({
          url: server.url,
          path: `/v2/models/${model}/infer`,
          body,
          headers,
          concurrency: 8,
          durationMs: seconds * 1000,
          warmupMs: 3000,
        });
        if (r.errors > 0) throw new Error(`${model}: ${r.errors} errors`);
        // The warm-up's requests are in the CPU too: count them at the measured rate (an estimate, on the high side).
        cpuMs[key]!.push((1000 * (ownCpuSeconds(pid) - cpu0)) / (r.requests * (1 + 3 / seconds)));
        results[key]!.push(r.rps);
        p50[key]!.push(r.p50Ms);
      }
      results.inproc8!.push(inProcess(modelPt, threads, 8, seconds));
      console.log(
        `round ${round + 1}: ${Object.entries(results)
          .map(([k, v]) => `${k} ${v[round]!.toFixed(1)}`)
          .join(', ')} images/s`,
      );
    }
  } finally {
    await server.stop();
    fs.rmSync(repo, { recursive: true, force: true });
  }
  const base = median(results.inproc1!);
  const row = (label: string, key: string, extra = ''): string => {
    const m = median(results[key]!);
    return `| ${label} | ${m.toFixed(1)} | ${results[key]!.map((x) => x.toFixed(1)).join(' / ')} | ${((100 * m) / base).toFixed(0)}% | ${extra} |`;
  };
  console.log(`\nResNet-18-shaped TorchScript, FP32 [1,3,224,224], ${threads} intra-op threads, ${seconds} s x ${rounds} rounds\n`);
  console.log('| case | images/s (median) | per round | vs in-process batch 1 | p50 latency, server CPU per request |\n|---|---:|---|---:|---:|');
  console.log(row('in-process torch, batch 1', 'inproc1'));
  console.log(
    row('nodetron, 8 connections, HTTP binary, no dynamic batching', 'server', `${median(p50.server!).toFixed(0)} ms, ${median(cpuMs.server!).toFixed(2)} ms`),
  );
  console.log(
    row(
      'nodetron, 8 connections, HTTP binary, dynamic batching (max 8)',
      'serverDb',
      `${median(p50.serverDb!).toFixed(0)} ms, ${median(cpuMs.serverDb!).toFixed(2)} ms`,
    ),
  );
  console.log(row('in-process torch, batch 8', 'inproc8'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
