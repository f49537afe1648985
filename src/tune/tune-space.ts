/**
 * What `nodetron tune` tries: the candidate configs as a few numbers
 * (instances, max batch, dynamic batching's delay and preferred sizes, ONNX
 * Runtime's thread counts), the coarse grid it starts with, and the
 * neighbours of the best one it refines around. Pure, table-tested
 * (test/unit/tune-space.test.ts); tune-config.ts turns a candidate into a
 * config.
 */

export interface Batching {
  delayUs: number;
  /** preferred_batch_size; [] = none. */
  preferred: number[];
}

export interface Candidate {
  instances: number;
  /** max_batch_size; 0 for a model that does not batch. */
  maxBatch: number;
  /** dynamic_batching; undefined = off. */
  batching: Batching | undefined;
  /** ONNX Runtime's intra_op_thread_count / inter_op_thread_count; undefined = the server's default. */
  intraOp: number | undefined;
  interOp: number | undefined;
}

/** What the search may change for a model: read from its config (tune-config.ts). */
export interface TunableModel {
  name: string;
  kind: 'onnx' | 'fil' | 'python' | 'other';
  shipped: Candidate;
  /** Largest max_batch_size the search tries: the shipped one (the model was built for it). */
  maxBatchLimit: number;
  /** The smallest max batch a candidate may have: the batch each request carries (-b). */
  requestBatch: number;
}

/** Queue delays the search tries (µs). */
export const DELAYS_US = [0, 100, 500, 2000];

/** A key that is the same for equal candidates. */
export function candidateKey(c: Candidate): string {
  const b = c.batching === undefined ? 'off' : `${c.batching.delayUs}/${c.batching.preferred.join(',')}`;
  return `i${c.instances} mb${c.maxBatch} d${b} t${c.intraOp ?? '-'}/${c.interOp ?? '-'}`;
}

/** One line a person reads: only what is set. */
export function candidateLabel(c: Candidate): string {
  const parts = [`instances=${c.instances}`];
  if (c.maxBatch > 0) {
    parts.push(`max_batch=${c.maxBatch}`);
    parts.push(c.batching === undefined ? 'dynamic=off' : `dynamic=${c.batching.delayUs}us`);
    if (c.batching !== undefined && c.batching.preferred.length > 0) parts.push(`preferred=${c.batching.preferred.join(',')}`);
  }
  if (c.intraOp !== undefined) parts.push(`intra_op=${c.intraOp}`);
  if (c.interOp !== undefined) parts.push(`inter_op=${c.interOp}`);
  return parts.join(' ');
}

/** Instance counts of the coarse grid: powers of two up to cores x 2, and the cores themselves. */
export function instanceSteps(cores: number): number[] {
  const top = Math.max(1, cores * 2);
  const out = new Set<number>([1, Math.max(1, cores), top]);
  for (let n = 1; n <= top; n *= 2) out.add(n);
  return [...out].sort((a, b) => a - b);
}

function batches(m: TunableModel): boolean {
  return m.maxBatchLimit > 0 && m.kind !== 'python';
}

function threads(m: TunableModel): boolean {
  return m.kind === 'onnx';
}

/** How many of the numbers differ: the grid runs the one-change candidates before the two-change ones. */
function distance(a: Candidate, b: Candidate): number {
  let d = 0;
  if (a.instances !== b.instances) d++;
  if (a.maxBatch !== b.maxBatch) d++;
  if ((a.batching === undefined) !== (b.batching === undefined)) d++;
  else if (a.batching !== undefined && b.batching !== undefined) {
    if (a.batching.delayUs !== b.batching.delayUs) d++;
    if (a.batching.preferred.join() !== b.batching.preferred.join()) d++;
  }
  if (a.intraOp !== b.intraOp) d++;
  if (a.interOp !== b.interOp) d++;
  return d;
}

function unique(list: Candidate[], skip: Set<string> = new Set()): Candidate[] {
  const seen = new Set(skip);
  const out: Candidate[] = [];
  for (const c of list) {
    const k = candidateKey(c);
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(c);
  }
  return out;
}

/**
 * The coarse grid, the shipped config first and then by how far each is from
 * it (so a small budget still sees every single change): instance counts ×
 * batching off / on with no delay / on with 500 µs (batching models other
 * than Python) × intra-op threads default / 1 (ONNX).
 */
export function coarseGrid(m: TunableModel, cores: number): Candidate[] {
  const base = m.shipped;
  const batchings: (Batching | undefined)[] = batches(m) ? [undefined, { delayUs: 0, preferred: [] }, { delayUs: 500, preferred: [] }] : [base.batching];
  const intras: (number | undefined)[] = threads(m) ? [undefined, 1] : [base.intraOp];
  const grid: Candidate[] = [];
  for (const instances of instanceSteps(cores)) {
    for (const batching of batchings) {
      for (const intraOp of intras) {
        grid.push({ instances, maxBatch: base.maxBatch, batching, intraOp, interOp: base.interOp });
      }
    }
  }
  const rest = unique(grid, new Set([candidateKey(base)]));
  rest.sort((a, b) => distance(a, base) - distance(b, base));
  return [base, ...rest];
}

/**
 * One change at a time around `best`: an instance more or fewer, batching
 * turned the other way, the next shorter and longer queue delay, preferred
 * sizes of [max batch] or none, half the max batch (or back up to the
 * limit), and other ONNX Runtime thread counts. `tried` (candidate keys)
 * are left out.
 */
export function neighbours(best: Candidate, m: TunableModel, cores: number, tried: Set<string>): Candidate[] {
  const out: Candidate[] = [];
  const top = Math.max(1, cores * 2);
  for (const n of [best.instances - 1, best.instances + 1]) if (n >= 1 && n <= top) out.push({ ...best, instances: n });
  if (batches(m)) {
    const b = best.batching;
    if (b === undefined) out.push({ ...best, batching: { delayUs: 0, preferred: [] } });
    else {
      out.push({ ...best, batching: undefined });
      const i = DELAYS_US.indexOf(b.delayUs);
      const near = i < 0 ? [0, 500] : [DELAYS_US[i - 1], DELAYS_US[i + 1]];
      for (const d of near) if (d !== undefined && d !== b.delayUs) out.push({ ...best, batching: { ...b, delayUs: d } });
      const pref = b.preferred.length > 0 ? [] : [best.maxBatch];
      out.push({ ...best, batching: { ...b, preferred: pref } });
      const half = Math.floor(best.maxBatch / 2);
      if (half >= Math.max(1, m.requestBatch) && half >= 2) out.push(fitPreferred({ ...best, maxBatch: half }));
      if (best.maxBatch < m.maxBatchLimit) out.push(fitPreferred({ ...best, maxBatch: Math.min(m.maxBatchLimit, best.maxBatch * 2) }));
    }
  }
  if (threads(m)) {
    for (const t of [undefined, 1, Math.max(1, cores)]) if (t !== best.intraOp) out.push({ ...best, intraOp: t });
    for (const t of [undefined, 2]) if (t !== best.interOp) out.push({ ...best, interOp: t });
  }
  return unique(out, tried);
}

/** Preferred sizes above a smaller max batch are dropped (the server refuses them). */
function fitPreferred(c: Candidate): Candidate {
  if (c.batching === undefined) return c;
  const preferred = c.batching.preferred.filter((p) => p <= c.maxBatch);
  return { ...c, batching: { ...c.batching, preferred } };
}
