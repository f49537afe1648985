/**
 * Every isolate of the server keeps V8's young generation at its starting
 * size: 1 MB semi-spaces (new space 2 MB) instead of growing them up to
 * 16 MB each.
 *
 * Why: by default V8 doubles an isolate's semi-spaces whenever enough of the
 * young generation survives a scavenge. Under steady load the busy isolates
 * (main, the HTTP threads, the instance threads) kept growing that way for
 * tens of minutes: in the 30-minute soak (bench/soak.ts) committed heaps went
 * from ~29 to ~55 MB each while the heap kept after full GCs stayed flat,
 * and RSS rose 11-17%. A request's objects die within a scavenge interval,
 * so the bigger young generation bought no measurable CPU (bench/README.md
 * "Soak": CPU per request side by side, held and not).
 *
 * How: worker threads get `resourceLimits.maxYoungGenerationSizeMb` (node's
 * documented per-isolate limit; 3 MB of young generation is 1 MB
 * semi-spaces). The main isolate exists before any code runs and V8 fixes
 * its limit at creation, so it needs node's flag: the executable's shebang
 * (src/cli.ts), `npm start` (package.json) and the test/bench launcher pass
 * MAIN_NODE_FLAG. (Setting V8 flags at run time does not hold: node re-applies
 * its V8 flags whenever a worker starts.) Whoever sizes the young generation
 * on node's command line or in NODE_OPTIONS keeps their sizes everywhere.
 */
import type { ResourceLimits } from 'node:worker_threads';

/** Node's flag for the main isolate; spelled the same in src/cli.ts's shebang and package.json's start script (a unit test checks). */
export const MAIN_NODE_FLAG = '--max-semi-space-size=1';
/** A worker's young generation in MB: V8 splits it into two semi-spaces and a third for large objects. */
export const WORKER_YOUNG_GENERATION_MB = 3;

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
