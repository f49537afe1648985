/**
 * How `nodetron tune` judges: when a concurrency sweep has gone far enough,
 * which point of a sweep stands for its config (the highest throughput
 * whose p99 is under the latency budget, or without one the knee, as
 * `nodetron perf` marks it), and whether the best config beats the shipped
 * one by more than the measurements' own noise. Pure, table-tested
 * (test/unit/tune-objective.test.ts).
 */
import { findKnee } from '../perf/perf-math';
import { candidateKey, type Candidate } from './tune-space';

export interface Point {
  concurrency: number;
  /** Inferences per second (requests × batch). */
  throughput: number;
  p50Us: number;
  p99Us: number;
  stable: boolean;
  /** Spread of the last three windows' throughput, (max - min) / mean, in %. */
  noisePct: number;
  errors: number;
  /** Server CPU (its process and children) per request, µs; undefined on a server that is not ours. */
  cpuUsPerRequest: number | undefined;
  /** Inferences per execution, from the statistics API. */
  avgBatch: number | undefined;
}

export interface Trial {
  candidate: Candidate;
  points: Point[];
  /** Why it was not measured: the load's error. */
  error: string | undefined;
  /** Index into points of the point that stands for it; -1 when none qualifies. */
  chosen: number;
  /** Throughputs measured again at the chosen concurrency, at the end. */
  again: number[];
  /** Wall seconds its load and sweep took. */
  seconds: number;
}

/** Minimum gain that counts as better whatever the windows say: this machine is shared. */
export const MIN_GAIN = 0.03;

/** Whether the sweep can stop after its last point. */
export function sweepDone(points: Point[], latencyBudgetMs: number | undefined): boolean {
  const last = points[points.length - 1];
  if (last === undefined) return false;
  if (last.errors > 0) return true;
  if (latencyBudgetMs !== undefined && last.p99Us > latencyBudgetMs * 1000) return true;
  const prev = points[points.length - 2];
  if (prev === undefined) return false;
  // Without a budget the knee is the point (past it only latency grows); with one, go on while it still buys 2%.
  return last.throughput < prev.throughput * (latencyBudgetMs === undefined ? 1.1 : 1.02);
}

/** The point that stands for a sweep, or -1. */
export function choosePoint(points: Point[], latencyBudgetMs: number | undefined): number {
  const ok = points.map((p, i) => ({ p, i })).filter(({ p }) => p.errors === 0 && p.throughput > 0);
  if (latencyBudgetMs !== undefined) {
    let best = -1;
    for (const { p, i } of ok) if (p.p99Us <= latencyBudgetMs * 1000 && (best < 0 || p.throughput > points[best]!.throughput)) best = i;
    return best;
  }
  if (ok.length === 0) return -1;
  const knee = findKnee(ok.map(({ p }) => p.throughput));
  return ok[knee < 0 ? ok.length - 1 : knee]!.i;
}

/** All measurements of a trial's chosen point (the sweep's and the ones again at the end). */
export function samples(t: Trial): number[] {
  const p = t.points[t.chosen];
  return p === undefined ? [] : [p.throughput, ...t.again];
}

const mean = (xs: number[]): number => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);

/** A trial's throughput: the mean of its samples; 0 when it has no qualifying point. */
export function score(t: Trial): number {
  return mean(samples(t));
}

/** The trial with the highest score; the first of equal ones (the shipped config is trial 0). */
export function bestTrial(trials: Trial[]): Trial | undefined {
  let best: Trial | undefined;
  for (const t of trials) if (t.chosen >= 0 && (best === undefined || score(t) > score(best))) best = t;
  return best;
}

/** Relative noise of a trial: its samples' spread and its windows' spread, whichever is larger. */
export function noiseOf(t: Trial): number {
  const xs = samples(t);
  const spread = xs.length > 1 ? (Math.max(...xs) - Math.min(...xs)) / mean(xs) : 0;
  return Math.max(spread, (t.points[t.chosen]?.noisePct ?? 0) / 100);
}

export interface Verdict {
  /** The config to use: the best one, or the shipped one when the best is not better beyond the noise. */
  winner: Trial;
  shippedIsBest: boolean;
  /** best / shipped - 1 */
  gain: number;
  /** The noise the gain is held against. */
  noise: number;
  text: string;
}

export function verdict(shipped: Trial, best: Trial | undefined, label: (c: Candidate) => string): Verdict {
  if (best === undefined || candidateKey(best.candidate) === candidateKey(shipped.candidate)) {
    return { winner: shipped, shippedIsBest: true, gain: 0, noise: noiseOf(shipped), text: 'the shipped config is the best one measured' };
  }
  const s = score(shipped);
  const gain = s > 0 ? score(best) / s - 1 : Infinity;
  const noise = Math.max(noiseOf(shipped), noiseOf(best), MIN_GAIN);
  const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;
  if (shipped.chosen >= 0 && gain <= noise) {
    return {
      winner: shipped,
      shippedIsBest: true,
      gain,
      noise,
      text: `the shipped config is best: the fastest other one (${label(best.candidate)}) was ${gain >= 0 ? '+' : ''}${pct(gain)}, within the noise of ${pct(noise)}`,
    };
  }
  return {
    winner: best,
    shippedIsBest: false,
    gain,
    noise,
    text:
      shipped.chosen < 0
        ? `${label(best.candidate)} is best; the shipped config had no point that qualified`
        : `${label(best.candidate)} is best: +${pct(gain)} over the shipped config (noise ${pct(noise)})`,
  };
}
