/**
 * The pure arithmetic of `nodetron perf`: latency summaries, perf_analyzer's
 * stability rule across measurement windows, server-side time splits from two
 * statistics snapshots, and the knee of a sweep. Table-tested without servers.
 */

export interface Window {
  /** Responses completed inside the window. */
  count: number;
  errors: number;
  seconds: number;
  /** Latencies in µs of the responses completed inside the window. */
  latenciesUs: Float64Array | number[];
}

export interface LatencySummary {
  avgUs: number;
  p50Us: number;
  p90Us: number;
  p95Us: number;
  p99Us: number;
  /** The chosen percentile (or the average), the value stability looks at. */
  reportUs: number;
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function summarize(latenciesUs: ArrayLike<number>, reportPercentile: number | undefined): LatencySummary {
  const sorted = Float64Array.from(latenciesUs).sort();
  let sum = 0;
  for (let i = 0; i < sorted.length; i++) sum += sorted[i]!;
  const avgUs = sorted.length === 0 ? 0 : sum / sorted.length;
  return {
    avgUs,
    p50Us: percentile(sorted, 50),
    p90Us: percentile(sorted, 90),
    p95Us: percentile(sorted, 95),
    p99Us: percentile(sorted, 99),
    reportUs: reportPercentile === undefined ? avgUs : percentile(sorted, reportPercentile),
  };
}

/**
 * perf_analyzer's rule: the last three windows are stable when each one's
 * throughput and latency lie within `pct`% of the three windows' mean.
 */
export function isStable(windows: Window[], pct: number, reportPercentile: number | undefined): boolean {
  if (windows.length < 3) return false;
  const last = windows.slice(-3);
  if (last.some((w) => w.count === 0)) return false;
  const thr = last.map((w) => w.count / w.seconds);
  const lat = last.map((w) => summarize(w.latenciesUs, reportPercentile).reportUs);
  const within = (xs: number[]): boolean => {
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    return xs.every((x) => Math.abs(x - mean) <= (pct / 100) * mean);
  };
  return within(thr) && within(lat);
}

/** Triton's statistics durations (protocol.md §1.9) for one model version. */
export interface ServerStatsSnapshot {
  successCount: number;
  inferenceCount: number;
  executionCount: number;
  queueNs: number;
  computeInputNs: number;
  computeInferNs: number;
  computeOutputNs: number;
}

export interface ServerSplit {
  requests: number;
  /** Inferences (batch-weighted) per execution over the window. */
  avgBatch: number;
  queueUs: number;
  computeInputUs: number;
  computeInferUs: number;
  computeOutputUs: number;
}

/** Average per-request server times between two snapshots (deltas over the window). */
export function serverSplit(before: ServerStatsSnapshot, after: ServerStatsSnapshot): ServerSplit {
  const n = after.successCount - before.successCount;
  const per = (a: number, b: number): number => (n > 0 ? (a - b) / n / 1000 : 0);
  const executions = after.executionCount - before.executionCount;
  return {
    requests: n,
    avgBatch: executions > 0 ? (after.inferenceCount - before.inferenceCount) / executions : 0,
    queueUs: per(after.queueNs, before.queueNs),
    computeInputUs: per(after.computeInputNs, before.computeInputNs),
    computeInferUs: per(after.computeInferNs, before.computeInferNs),
    computeOutputUs: per(after.computeOutputNs, before.computeOutputNs),
  };
}

/**
 * The model's counters in Triton's statistics JSON, summed over its entries:
 * `model_stats` has one entry per loaded version, and requests without a
 * version go to whichever version serves (the newest), so taking the first
 * entry read the idle version's zeros when two were loaded. The tool asks
 * for one version's statistics when it sends to one (-x).
 */
export function parseServerStats(json: unknown, model: string): ServerStatsSnapshot | undefined {
  const list = (json as { model_stats?: unknown[] } | null)?.model_stats;
  if (!Array.isArray(list)) return undefined;
  const entries = list.filter((e) => (e as { name?: string }).name === model) as Record<string, unknown>[];
  if (entries.length === 0) return undefined;
  const sum: ServerStatsSnapshot = {
    successCount: 0,
    inferenceCount: 0,
    executionCount: 0,
    queueNs: 0,
    computeInputNs: 0,
    computeInferNs: 0,
    computeOutputNs: 0,
  };
  for (const entry of entries) {
    const stats = (entry.inference_stats ?? {}) as Record<string, { count?: number | string; ns?: number | string }>;
    const ns = (k: string): number => Number(stats[k]?.ns ?? 0);
    sum.successCount += Number(stats.success?.count ?? 0);
    sum.inferenceCount += Number(entry.inference_count ?? 0);
    sum.executionCount += Number(entry.execution_count ?? 0);
    sum.queueNs += ns('queue');
    sum.computeInputNs += ns('compute_input');
    sum.computeInferNs += ns('compute_infer');
    sum.computeOutputNs += ns('compute_output');
  }
  return sum;
}

/**
 * The knee of a sweep: the last step whose throughput still grew by at least
 * `minGain` (10%) over the previous one while a later step did not, i.e. where
 * more load stops buying throughput and only adds latency. -1 when the
 * throughput was still growing at the last step (knee not reached) or there
 * are fewer than two steps.
 */
export function findKnee(throughputs: number[], minGain = 0.1): number {
  for (let i = 1; i < throughputs.length; i++) {
    if (throughputs[i]! < throughputs[i - 1]! * (1 + minGain)) return i - 1;
  }
  return -1;
}
