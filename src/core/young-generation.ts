/**
 * Every isolate of the server keeps V8's young generation small and fixed:
 * 4 MB semi-spaces (new space 8 MB) at most, instead of growing them up to
 * 16 MB each.
 *
 * Why: by default V8 doubles an isolate's semi-spaces whenever enough of the
 * young generation survives a scavenge. Under steady load the busy isolates
 * (main, the HTTP threads, the instance threads) kept growing that way for
 * tens of minutes: in the 30-minute soak (bench/soak.ts) committed heaps went
 * from ~29 to ~55 MB each while the heap kept after full GCs stayed flat,
 * and RSS rose 11-17%.
 *
 * Why 4 and not 1 (the bound until issue 17's FIL benchmark): a request's
 * objects must die within a scavenge interval. With 1 MB semi-spaces the
 * HTTP thread scavenged every ~3 ms at ~20k req/s, shorter than a request
 * is in flight at 64-128 connections, so in-flight requests were copied and
 * promoted, and old-space collections followed: GC pauses of 11-39 µs per
 * request against 4-6 µs at 4 MB, with no more RSS (less is promoted); 8 MB
 * was worse again (bench/README.md "Young generation at 4 MB").
 *
 * How: worker threads get `resourceLimits.maxYoungGenerationSizeMb` (node's
 * documented per-isolate limit; 12 MB of young generation is 4 MB
 * semi-spaces). The main isolate exists before any code runs and V8 fixes
 * its limit at creation, so it needs node's flag: the executable's shebang
 * (src/cli.ts), `npm start` (package.json) and the test/bench launcher pass
 * MAIN_NODE_FLAG. (Setting V8 flags at run time does not hold: node re-applies
 * its V8 flags whenever a worker starts.) Whoever sizes the young generation
 * on node's command line or in NODE_OPTIONS keeps their sizes everywhere.
 */
import type { ResourceLimits } from 'node:worker_threads';

/** Node's flag for the main isolate; spelled the same in src/cli.ts's shebang and package.json's start script (a unit test checks). */
export const MAIN_NODE_FLAG = '--max-semi-space-size=4';
/** A worker's young generation in MB: V8 splits it into two semi-spaces and a third for large objects. */
export const WORKER_YOUNG_GENERATION_MB = 12;

const SIZES_IT = /--(max[-_]|min[-_])?semi[-_]space[-_](size|growth[-_]factor)(?![-_\w])/;

/** Whether node's own flags (its command line, NODE_OPTIONS) size or grow the young generation, other than our MAIN_NODE_FLAG. */
export function userSizesYoungGeneration(execArgv: readonly string[], nodeOptions: string): boolean {
  const theirs = (flag: string): boolean => flag !== MAIN_NODE_FLAG && SIZES_IT.test(flag);
  return execArgv.some(theirs) || nodeOptions.split(/\s+/).some(theirs);
}

/** The resource limits for a server worker thread: ours, or none where the user sized the young generation. */
export function workerResourceLimits(execArgv: readonly string[] = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? ''): ResourceLimits {
  return userSizesYoungGeneration(execArgv, nodeOptions) ? {} : { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB };
}
