/**
 * What `bench/soak.js --trace-gc` makes of the server's V8 --trace-gc lines
 * (`[pid:isolate]  t ms: Scavenge|Mark-Compact [(reduce)] before (committed)
 * -> after (committed) MB, ...`): per isolate, its GC counts, the heap left
 * after its first and last full GC (a heap that keeps more after each full
 * GC is a JS leak) and its committed size (what RSS sees, sawtooth and all).
 * An address whose clock goes back is a new isolate at a freed one's address
 * (host threads of a churned model come and go): it gets its own entry.
 */

export interface IsolateGc {
  /** The isolate's address as V8 prints it (main first, then worker threads). */
  isolate: string;
  /** Milliseconds on the isolate's own clock (since it started) of its first and last GC. */
  firstMs: number;
  lastMs: number;
  scavenges: number;
  fullGcs: number;
  /** Heap MB after the first and the last full GC (undefined without one). */
  firstFullAfterMb: number | undefined;
  lastFullAfterMb: number | undefined;
  maxCommittedMb: number;
  lastCommittedMb: number;
}

const LINE =
  /^\[(\d+):(0x[0-9a-f]+)\]\s+(\d+) ms: (Scavenge|Minor Mark-Compact|Minor Mark-Sweep|Mark-Compact|Mark-Sweep)(?: \([a-z ]+\))? ([\d.]+) \(([\d.]+)\) -> ([\d.]+) \(([\d.]+)\) MB/;

/** The isolates of process `pid` found in `text`, in the order they first collected. */
export function summarizeGcTrace(text: string, pid: number): IsolateGc[] {
  const all: IsolateGc[] = [];
  const byIsolate = new Map<string, IsolateGc>();
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (m === null || Number(m[1]) !== pid) continue;
    const [, , isolate, ms, kind, , , after, committed] = m as unknown as [string, string, string, string, string, string, string, string, string];
    let s = byIsolate.get(isolate);
    if (s === undefined || Number(ms) < s.lastMs) {
      s = {
        isolate,
        firstMs: Number(ms),
        lastMs: 0,
        scavenges: 0,
        fullGcs: 0,
        firstFullAfterMb: undefined,
        lastFullAfterMb: undefined,
        maxCommittedMb: 0,
        lastCommittedMb: 0,
      };
      byIsolate.set(isolate, s);
      all.push(s);
    }
    s.lastMs = Number(ms);
    if (kind === 'Mark-Compact' || kind === 'Mark-Sweep') {
      s.fullGcs++;
      s.firstFullAfterMb ??= Number(after);
      s.lastFullAfterMb = Number(after);
    } else {
      s.scavenges++;
    }
    s.lastCommittedMb = Number(committed);
    s.maxCommittedMb = Math.max(s.maxCommittedMb, Number(committed));
  }
  return all;
}
