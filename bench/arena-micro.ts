/**
 * Micro-bench of the tensor arena's alloc + free pair (src/dataplane/arena.ts):
 * 1M pairs of 64 B and of 602,112 B ([1,3,224,224] FP32), on one thread and
 * on two threads contending for the arena's lock (the main thread and one
 * worker, started together off a shared flag). No bytes are touched: this is
 * the allocator and its lock only.
 *
 *   npx tsc -p . && node dist/bench/arena-micro.js [pairs] [repeats]
 *
 * Prints ns per pair, the median of `repeats` runs (default 5) with the
 * range. On two threads, "per pair" is each thread's own time divided by its
 * own pairs (both threads run the same count at once).
 */
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { Arena, type ArenaHandle } from '../src/dataplane/arena';

const SIZES = [64, 602_112];

interface WorkerSetup {
  arena: ArenaHandle;
  flag: Int32Array;
  size: number;
  pairs: number;
}

if (isMainThread) {
  void main();
} else {
  const d = workerData as WorkerSetup;
  const arena = Arena.attach(d.arena);
  parentPort!.postMessage('ready');
  Atomics.wait(d.flag, 0, 0);
  parentPort!.postMessage(run(arena, d.size, d.pairs));
}

/** ns per alloc + free pair. */
function run(arena: Arena, size: number, pairs: number): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < pairs; i++) arena.free(arena.alloc(size));
  return Number(process.hrtime.bigint() - t0) / pairs;
}

async function twoThreads(arena: Arena, size: number, pairs: number): Promise<number[]> {
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const setup: WorkerSetup = { arena: arena.handle, flag, size, pairs };
  const w = new Worker(__filename, { workerData: setup });
  const messages: unknown[] = [];
  let wake: (() => void) | undefined;
  w.on('message', (m: unknown) => {
    messages.push(m);
    wake?.();
  });
  const next = async (): Promise<unknown> => {
    while (messages.length === 0)
      await new Promise<void>((r) => {
        wake = r;
      });
    return messages.shift();
  };
  await next(); // ready
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
  const mine = run(arena, size, pairs);
  const theirs = (await next()) as number;
  await w.terminate();
  return [mine, theirs];
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function fmt(xs: number[]): string {
  return `${median(xs).toFixed(1)} (${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)})`;
}

async function main(): Promise<void> {
  const pairs = Number(process.argv[2] ?? 1_000_000);
  const repeats = Number(process.argv[3] ?? 5);
  const arena = Arena.create({ initialBytes: 16 << 20 });
  // A block kept below the measured ones, as in a server with tensors in flight.
  arena.alloc(1000);
  console.log(`| case | ns per alloc+free pair, median of ${repeats} (range) |`);
  console.log('|---|---:|');
  for (const size of SIZES) {
    run(arena, size, pairs / 10); // warm-up
    const one: number[] = [];
    for (let r = 0; r < repeats; r++) one.push(run(arena, size, pairs));
    console.log(`| 1 thread, ${size} B | ${fmt(one)} |`);
  }
  for (const size of SIZES) {
    const main: number[] = [];
    const other: number[] = [];
    for (let r = 0; r < repeats; r++) {
      const [a, b] = await twoThreads(arena, size, pairs);
      main.push(a!);
      other.push(b!);
    }
    console.log(`| 2 threads, ${size} B, main thread | ${fmt(main)} |`);
    console.log(`| 2 threads, ${size} B, worker thread | ${fmt(other)} |`);
  }
}
