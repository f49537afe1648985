/**
 * What offloading a request decode costs, by body size: the HTTP thread's
 * decode (src/frontend/http/request-body-decode.ts) inline, against the same
 * decode through a CodecPool (the server's class: piscina, one thread, body
 * and tensors moved by transfer), in this process. The pool is used the way
 * a server uses it under light load: one task at a time with a 2 ms pause
 * between, so its thread sleeps and has to be woken each time. CPU is this
 * process's (every thread, the pool's included). The threshold
 * (`--http-codec-offload-bytes`) is where the inline decode is long enough
 * to stall other requests and the hand-off is a small part of it.
 *   node dist/bench/codec-cost.js [repsPerSize=60]
 */
import { Arena } from '../src/dataplane/arena';
import type { ValidationPlan } from '../src/request/validation-plan';
import { CodecPool } from '../src/frontend/http/codec-pool';
import { decodeRequestBody, type BodyDecodeTask } from '../src/frontend/http/request-body-decode';
import { imageTensorJson } from './json-bodies';

const reps = Number(process.argv[2] ?? 60);

function plan(): ValidationPlan {
  return {
    modelName: 'bench', maxBatchSize: 8, outputs: [], requiredInputs: ['input'], decoupled: false,
    inputs: [{ name: 'input', datatype: 'FP32', dims: [-1], optional: false, isShapeTensor: false }],
  };
}

function task(body: Buffer): BodyDecodeTask {
  return { body, contentEncoding: '', headerLength: '', plan: plan(), maxInputSize: 1 << 28 };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const pool = new CodecPool(1, { index: 0, arena: Arena.create({ initialBytes: 1 << 20 }).handle });
  const t0 = performance.now();
  await pool.decode(task(imageTensorJson(1, 16)));
  const startMs = performance.now() - t0;

  console.log(`pool thread start + first task: ${startMs.toFixed(1)} ms`);
  console.log('| body bytes (FP32 elements) | inline: µs (median) | inline: CPU µs per decode | pool: µs (median) | pool: CPU µs per decode, all threads | hand-off CPU µs (pool − inline) |');
  console.log('|---|---|---|---|---|---|');
  for (const elements of [256, 1024, 4096, 16384, 65536, 150528]) {
    const body = imageTensorJson(7, elements);
    const inline: number[] = [];
    let inlineCpuUs = 0;
    for (let i = 0; i < reps + 5; i++) {
      const c = process.cpuUsage();
      const s = performance.now();
      decodeRequestBody(task(body));
      const d = process.cpuUsage(c);
      if (i >= 5) {
        inline.push((performance.now() - s) * 1000);
        inlineCpuUs += d.user + d.system;
      }
    }
    const latency: number[] = [];
    let cpuUs = 0;
    for (let i = 0; i < reps + 5; i++) {
      const copy = Buffer.from(body); // the pool takes (detaches) the body it is given
      await pause(2);
      const c = process.cpuUsage();
      const s = performance.now();
      await pool.decode(task(copy));
      const us = (performance.now() - s) * 1000;
      const d = process.cpuUsage(c);
      if (i >= 5) {
        latency.push(us);
        cpuUs += d.user + d.system;
      }
    }
    const cpu = cpuUs / reps;
    const inl = inlineCpuUs / reps;
    console.log(`| ${body.length} (${elements}) | ${median(inline).toFixed(0)} | ${inl.toFixed(0)} | ${median(latency).toFixed(0)} | ${cpu.toFixed(0)} | ${(cpu - inl).toFixed(0)} |`);
  }
  await pool.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
