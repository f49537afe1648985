/**
 * `nodetron tune` as a library: load the model as shipped, then each
 * candidate through the load API's config override (no restart), sweep the
 * concurrency with nodetron perf's engine in this process, and keep going
 * (the coarse grid, then one change at a time around the best) while the
 * budget lasts. At the end the shipped config and the best one are measured
 * once more each, and the best wins only by more than the noise.
 */
import os from 'node:os';
import { buildTensors } from '../perf/input-tensors';
import { runStep, SenderPool, type StepResult } from '../perf/load-driver';
import { httpProbe, type ModelProbe } from '../perf/model-probe';
import type { Window } from '../perf/perf-math';
import { parsePerfOptions } from '../perf/perf-options';
import { httpTransport } from '../perf/perf-runner';
import type { Transport } from '../perf/load-driver';
import type { ModelConfig } from '../core/model-config';
import { parseModelConfigJson } from '../repository/config/json-config';
import { processTreeCpuSeconds } from './process-cpu';
import { applyCandidate, describeModel, refusal } from './tune-config';
import { bestTrial, choosePoint, sweepDone, verdict, type Point, type Trial, type Verdict } from './tune-objective';
import type { TuneOptions } from './tune-options';
import type { TuneServer } from './tune-server';
import { candidateKey, candidateLabel, coarseGrid, neighbours, type Candidate, type TunableModel } from './tune-space';

export interface TuneResult {
  model: string;
  objective: string;
  shipped: Trial;
  trials: Trial[];
  verdict: Verdict;
  /** The winner's config, for config.tuned.pbtxt. */
  tunedConfig: ModelConfig;
  budgetSeconds: number;
  elapsedSeconds: number;
  /** Why the search ended. */
  ended: 'searched every candidate and neighbour' | 'budget';
  /** Candidates left unmeasured when the budget ran out. */
  left: number;
  cores: number;
}

/** What the runner reports as it goes (the progress bar). */
export interface TuneProgress {
  start(total: number): void;
  point(trialIndex: number, total: number, label: string, concurrency: number): void;
  trial(t: Trial, index: number, total: number): void;
  note(text: string): void;
}

export class TuneRefused extends Error {}

/** The load's connections and the model's statistics, kept across the configs (a reload keeps the HTTP connections). */
export interface Measurer {
  pool: SenderPool;
  probe: ModelProbe;
  transport: Transport;
}

/** Requests built once from the model's metadata (perf's inputs: --input-data, --shape, -b), checked by a first inference. */
export async function openMeasurer(o: TuneOptions, server: TuneServer, maxBatchSize: number): Promise<Measurer> {
  const perf = parsePerfOptions([
    '-m',
    o.model,
    '-u',
    server.address,
    '-b',
    String(o.batchSize),
    '--input-data',
    o.inputData,
    ...[...o.shapes].flatMap(([name, dims]) => ['--shape', `${name}:${dims.join(',')}`]),
  ]);
  const probe = httpProbe(server.base, o.model, '');
  try {
    const transport = await httpTransport(perf, buildTensors(await probe.inputs(), maxBatchSize, perf));
    return { pool: new SenderPool(transport), probe, transport };
  } catch (err) {
    probe.close();
    throw err;
  }
}

const mean = (xs: number[]): number => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);

export async function runTune(o: TuneOptions, server: TuneServer, fileConfig: ModelConfig | undefined, progress: TuneProgress): Promise<TuneResult> {
  const started = Date.now();
  const budgetMs = o.budgetMinutes * 60_000;
  const deadline = started + budgetMs;
  const cores = os.availableParallelism();

  try {
    await server.load(o.model, undefined);
  } catch (err) {
    throw new TuneRefused(`model '${o.model}' did not load as shipped, so there is nothing to tune yet: ${(err as Error).message}`);
  }
  const served = parseModelConfigJson(JSON.stringify(await server.config(o.model)));
  const why = refusal(served);
  if (why !== undefined) throw new TuneRefused(why);
  const model = describeModel(served, o.batchSize);
  const base = fileConfig ?? served;

  const m = await openMeasurer(o, server, model.maxBatchLimit);
  const { transport, probe } = m;

  const trials: Trial[] = [];
  const tried = new Set<string>();
  const pointSeconds: number[] = [];
  const loadSeconds: number[] = [];
  // Measuring the shipped and the best config once more at the end: two loads and two points.
  const reserveMs = (): number => 2 * 1000 * ((mean(loadSeconds) || 1) + (mean(pointSeconds) || 2));
  const trialEstimateMs = (): number => 1000 * (trials.length === 0 ? 0 : mean(trials.map((t) => t.seconds)));
  const fits = (): boolean => Date.now() + trialEstimateMs() + reserveMs() <= deadline;

  const grid = coarseGrid(model, cores);
  let total = grid.length;
  progress.start(total);
  const measure = async (c: Candidate): Promise<Trial> => {
    tried.add(candidateKey(c));
    const t = await measureTrial(o, server, m, base, model, c, {
      deadline: () => deadline - reserveMs(),
      onPoint: (conc) => progress.point(trials.length, total, candidateLabel(c), conc),
      pointSeconds,
      loadSeconds,
    });
    trials.push(t);
    progress.trial(t, trials.length - 1, total);
    return t;
  };

  /** Measures the candidates in turn while the budget fits them; returns how many it left. */
  const measureAll = async (list: Candidate[]): Promise<number> => {
    for (let i = 0; i < list.length; i++) {
      if (!fits()) return list.length - i;
      await measure(list[i]!);
    }
    return 0;
  };

  let left = 0;
  try {
    const shipped = await measure(grid[0]!);
    left = await measureAll(grid.slice(1));
    // Refine: all single changes around the best, again around a new best, until none is better.
    while (left === 0) {
      const best = bestTrial(trials);
      if (best === undefined) break;
      const next = neighbours(best.candidate, model, cores, tried);
      if (next.length === 0) break;
      total += next.length;
      left = await measureAll(next);
      if (bestTrial(trials) === best) break;
    }
    const ended: TuneResult['ended'] = left > 0 ? 'budget' : 'searched every candidate and neighbour';

    const best = bestTrial(trials);
    if (best !== undefined && best !== shipped && shipped.chosen >= 0) {
      progress.note('measuring the shipped config and the best one once more');
      for (const t of [shipped, best]) await measureAgain(o, server, m, base, model, t);
    }
    const v = verdict(shipped, best, candidateLabel);
    return {
      model: o.model,
      objective:
        o.latencyBudgetMs !== undefined ? `highest throughput with p99 under ${o.latencyBudgetMs} ms` : "throughput at the knee of each config's curve",
      shipped,
      trials,
      verdict: v,
      tunedConfig: applyCandidate(base, v.winner.candidate, model.kind),
      budgetSeconds: budgetMs / 1000,
      elapsedSeconds: (Date.now() - started) / 1000,
      ended,
      left,
      cores,
    };
  } finally {
    transport.close();
    probe.close();
  }
}

interface TrialContext {
  /** After this time no further point is started. */
  deadline(): number;
  onPoint(concurrency: number): void;
  pointSeconds: number[];
  loadSeconds: number[];
}

async function load(
  server: TuneServer,
  o: TuneOptions,
  base: ModelConfig,
  model: TunableModel,
  c: Candidate,
  loadSeconds: number[],
): Promise<string | undefined> {
  const t0 = Date.now();
  try {
    await server.load(o.model, JSON.stringify(applyCandidate(base, c, model.kind)));
  } catch (err) {
    return (err as Error).message;
  }
  loadSeconds.push((Date.now() - t0) / 1000);
  return undefined;
}

async function measureTrial(
  o: TuneOptions,
  server: TuneServer,
  m: Measurer,
  base: ModelConfig,
  model: TunableModel,
  c: Candidate,
  ctx: TrialContext,
): Promise<Trial> {
  const t0 = Date.now();
  const trial: Trial = { candidate: c, points: [], error: undefined, chosen: -1, again: [], seconds: 0 };
  trial.error = await load(server, o, base, model, c, ctx.loadSeconds);
  if (trial.error === undefined) {
    for (let conc = 1; conc <= o.maxConcurrency; conc *= 2) {
      ctx.onPoint(conc);
      const p0 = Date.now();
      trial.points.push(await measurePoint(o, server, m, conc));
      ctx.pointSeconds.push((Date.now() - p0) / 1000);
      // A next point that would end past the deadline is not started.
      if (sweepDone(trial.points, o.latencyBudgetMs) || Date.now() + 1000 * mean(ctx.pointSeconds) >= ctx.deadline()) break;
    }
    trial.chosen = choosePoint(trial.points, o.latencyBudgetMs);
  }
  trial.seconds = (Date.now() - t0) / 1000;
  return trial;
}

async function measureAgain(o: TuneOptions, server: TuneServer, m: Measurer, base: ModelConfig, model: TunableModel, t: Trial): Promise<void> {
  const p = t.points[t.chosen];
  if (p === undefined) return;
  if ((await load(server, o, base, model, t.candidate, [])) !== undefined) return;
  t.again.push((await measurePoint(o, server, m, p.concurrency)).throughput);
}

/** One point: a closed loop at `concurrency` until three windows agree (or --max-trials), with the server's CPU over those windows. */
export async function measurePoint(o: TuneOptions, server: TuneServer, m: Measurer, concurrency: number): Promise<Point> {
  const windows: Window[] = [];
  const cpu: (number | undefined)[] = [];
  const r: StepResult = await runStep(
    m.pool,
    {
      mode: 'concurrency',
      value: concurrency,
      intervalMs: o.measurementIntervalMs,
      stabilityPct: o.stabilityPercentage,
      maxTrials: o.maxTrials,
      percentile: undefined,
      batchSize: o.batchSize,
      maxConnections: concurrency,
      onWindow: (w) => windows.push(w),
    },
    // Called at every window boundary: the server's CPU is read there too, so it covers exactly the windows reported.
    () => {
      cpu.push(server.pid === undefined ? undefined : processTreeCpuSeconds(server.pid));
      return m.probe.stats();
    },
    o.model,
  );
  const used = windows.slice(-3);
  const rates = used.map((w) => (w.count * o.batchSize) / w.seconds);
  const avg = mean(rates);
  const after = cpu[cpu.length - 1];
  const before = cpu[cpu.length - 1 - used.length];
  const cpuSeconds = after !== undefined && before !== undefined ? after - before : undefined;
  return {
    concurrency,
    throughput: r.inferencesPerSec,
    p50Us: r.latency.p50Us,
    p99Us: r.latency.p99Us,
    stable: r.stable,
    noisePct: avg > 0 ? ((Math.max(...rates) - Math.min(...rates)) / avg) * 100 : 0,
    errors: r.errors,
    cpuUsPerRequest: cpuSeconds !== undefined && cpuSeconds >= 0 && r.requests > 0 ? (cpuSeconds * 1e6) / r.requests : undefined,
    avgBatch: r.server?.avgBatch,
  };
}
