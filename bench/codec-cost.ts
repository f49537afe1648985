/**
 * What offloading a request decode costs, by body size: the HTTP thread's
 * decode (src/frontend/http/request-body-decode.ts) inline, against the same
 * decode through a CodecPool (the server's class: piscina, one thread, body
 * and tensors moved by transfer), in this process. The pool is used the way
 * a server uses it under light load: one task at a time with a 2 ms pause
 * between, so its thread sleeps and has to be woken each time. CPU is this
 * process's (every thread, the pool's included). The threshold
 * (`--http-codec-offload-bytes`) is where the inline decode is long enough
 * to stall other requests and the hand-off is a small part of it. Then the
 * same for encoding an FP32 output as JSON (response-body.ts; the pool
 * reads the tensor in the shared arena in place).
 *   node dist/bench/codec-cost.js [repsPerSize=60]
 */
import { Arena } from '../src/dataplane/arena';
import type { ValidationPlan } from '../src/request/validation-plan';
import { CodecPool } from '../src/frontend/http/codec-pool';
import { decodeRequestBody, type BodyDecodeTask } from '../src/frontend/http/request-body-decode';
import { encodeResponseBody, type ResponseEncodeTask } from '../src/frontend/http/response-body';
import { imageTensorJson } from './json-bodies';

const reps = Number(process.argv[2] ?? 60);

function plan(): ValidationPlan {
  return {
    modelName: 'bench',
    maxBatchSize: 8,
    outputs: [],
    requiredInputs: ['input'],
    decoupled: false,
    inputs: [{ name: 'input', datatype: 'FP32', dims: [-1], optional: false, isShapeTensor: false }],
  };
}

function task(body: Buffer): BodyDecodeTask {
  return { body, contentEncoding: '', headerLength: '', plan: plan(), maxInputSize: 1 << 28 };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const arena = Arena.create({ initialBytes: 8 << 20 });
  const pool = new CodecPool(1, { index: 0, arena: arena.handle });
  const t0 = performance.now();
  await pool.decode(task(imageTensorJson(1, 16)));
  const startMs = performance.now() - t0;

  console.log(`pool thread start + first task: ${startMs.toFixed(1)} ms`);
  console.log(
    '| body bytes (FP32 elements) | inline: µs (median) | inline: CPU µs per decode | pool: µs (median) | pool: CPU µs per decode, all threads | hand-off CPU µs (pool − inline) |',
  );
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
    console.log(
      `| ${body.length} (${elements}) | ${median(inline).toFixed(0)} | ${inl.toFixed(0)} | ${median(latency).toFixed(0)} | ${cpu.toFixed(0)} | ${(cpu - inl).toFixed(0)} |`,
    );
  }
  console.log(
    '\n| FP32 output elements (JSON bytes) | inline encode µs (median) | inline CPU µs | pool µs (median) | pool CPU µs, all threads | hand-off CPU µs |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const elements of [1024, 16384, 150528]) {
    const values = Float32Array.from({ length: elements }, (_, i) => Math.sin(i));
    const block = arena.alloc(values.byteLength);
    const { offset } = block;
    arena.bytes(offset, values.byteLength).set(new Uint8Array(values.buffer));
    const t: ResponseEncodeTask = {
      id: '',
      modelName: 'bench',
      modelVersion: '1',
      outputs: [{ name: 'out', datatype: 'FP32', shape: [1, elements], offset, byteSize: values.byteLength }],
      requested: null,
      binaryDataOutput: false,
      batched: true,
      labels: {},
      acceptEncoding: '',
      maxJsonChars: 256 * 1024 * 1024,
    };
    const n = Math.max(10, Math.round(reps / 4));
    const inline = await timed(n, async () => void encodeResponseBody(arena, t));
    const pooled = await timed(n, async () => void (await pool.encode(t)));
    const size = encodeResponseBody(arena, t).body.byteLength;
    console.log(
      `| ${elements} (${size}) | ${inline.median.toFixed(0)} | ${inline.cpu.toFixed(0)} | ${pooled.median.toFixed(0)} | ${pooled.cpu.toFixed(0)} | ${(pooled.cpu - inline.cpu).toFixed(0)} |`,
    );
    arena.free(block);
  }
  await pool.close();
}

/** Median wall µs and mean CPU µs (this process, all threads) of `n` runs after 3 unrecorded ones, 2 ms apart. */
async function timed(n: number, fn: () => Promise<void>): Promise<{ median: number; cpu: number }> {
  const wall: number[] = [];
  let cpu = 0;
  for (let i = 0; i < n + 3; i++) {
    await pause(2);
    const c = process.cpuUsage();
    const s = performance.now();
    await fn();
    const d = process.cpuUsage(c);
    if (i >= 3) {
      wall.push((performance.now() - s) * 1000);
      cpu += d.user + d.system;
    }
  }
  return { median: median(wall), cpu: cpu / n };
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
