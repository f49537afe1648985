/**
 * The Prometheus series of one (model, version) (STYLE.md item 11, Triton's
 * MetricModelReporter): label objects and summary/histogram children are
 * bound once at load. Counters and gauges are not touched per request at all:
 * they are brought up to the ModelStatistics numbers (one source for both
 * /metrics and /v2/models/<m>/stats) when /metrics is scraped. Only the
 * histograms (nodetron's latency ones, on by default; Triton's opt-in
 * first-response one) and the opt-in summaries observe per request,
 * through their bound children. The two response histograms (first response, inter-response)
 * have series only for a decoupled model, as Triton shows
 * nv_inference_first_response_histogram_ms only for those: a non-decoupled
 * model's first response is its only one, already in the request counters.
 */
import type { RequestDoneStats, ResponseKind } from '../scheduler/scheduler-hooks';
import type { MetricFamilies, ModelFamilies } from './metric-families';
import { FAILURE_REASONS, type FailureReason, type ModelStatistics } from './model-statistics';

interface Observer {
  observe(value: number): void;
}

/** What was last exported per counter, so a scrape adds only the difference. */
interface Exported {
  success: number;
  inference: number;
  exec: number;
  failures: Record<FailureReason, number>;
  requestUs: number;
  queueUs: number;
  computeInputUs: number;
  computeInferUs: number;
  computeOutputUs: number;
  cacheHits: number;
  cacheHitUs: number;
  cacheMisses: number;
  cacheMissUs: number;
}

export class ModelMetricReporter {
  private readonly f: ModelFamilies;
  private readonly labels: { model: string; version: string };
  private readonly failureLabels: Record<FailureReason, { model: string; reason: string; version: string }>;
  private readonly exported: Exported = {
    success: 0,
    inference: 0,
    exec: 0,
    failures: { OTHER: 0, BACKEND: 0, CANCELED: 0, REJECTED: 0 },
    requestUs: 0,
    queueUs: 0,
    computeInputUs: 0,
    computeInferUs: 0,
    computeOutputUs: 0,
    cacheHits: 0,
    cacheHitUs: 0,
    cacheMisses: 0,
    cacheMissUs: 0,
  };
  private readonly summaries: { request: Observer; queue: Observer; computeInput: Observer; computeInfer: Observer; computeOutput: Observer } | null;
  private readonly firstResponse: Observer | null;
  private readonly interResponse: Observer | null;
  /** The latency histograms' children (seconds); the two response ones null for a model that is not decoupled. */
  private readonly latency: {
    request: Observer;
    queue: Observer;
    computeInput: Observer;
    computeInfer: Observer;
    computeOutput: Observer;
    firstResponse: Observer | null;
    interResponse: Observer | null;
  } | null;
  /** True when requestDone has per-request work to do. */
  readonly observes: boolean;
  /** True when responseDone has per-response work to do (histograms on, decoupled model). */
  readonly observesResponses: boolean;

  constructor(families: MetricFamilies, model: string, version: number, decoupled = false) {
    this.f = families.model;
    // Keys in label-name order: prom-client prints them in key order, Triton sorted.
    this.labels = { model, version: String(version) };
    const fl = {} as Record<FailureReason, { model: string; reason: string; version: string }>;
    for (const reason of FAILURE_REASONS) fl[reason] = { model, reason, version: String(version) };
    this.failureLabels = fl;
    // Every series exists (at 0) from load time, as in Triton.
    const f = this.f;
    for (const c of [f.requestSuccess, f.inferenceCount, f.execCount]) c.inc(this.labels, 0);
    for (const reason of FAILURE_REASONS) f.requestFailure.inc(this.failureLabels[reason], 0);
    if (f.durations) for (const c of Object.values(f.durations)) c.inc(this.labels, 0);
    f.pending.set(this.labels, 0);
    const s = f.summaries;
    this.summaries = s
      ? {
          request: s.request.labels(this.labels),
          queue: s.queue.labels(this.labels),
          computeInput: s.computeInput.labels(this.labels),
          computeInfer: s.computeInfer.labels(this.labels),
          computeOutput: s.computeOutput.labels(this.labels),
        }
      : null;
    this.firstResponse = f.firstResponse && decoupled ? f.firstResponse.labels(this.labels) : null;
    this.interResponse = f.interResponse && decoupled ? f.interResponse.labels(this.labels) : null;
    const h = f.latency;
    this.latency = h
      ? {
          request: h.request.labels(this.labels),
          queue: h.queue.labels(this.labels),
          computeInput: h.computeInput.labels(this.labels),
          computeInfer: h.computeInfer.labels(this.labels),
          computeOutput: h.computeOutput.labels(this.labels),
          firstResponse: decoupled ? h.firstResponse.labels(this.labels) : null,
          interResponse: decoupled ? h.interResponse.labels(this.labels) : null,
        }
      : null;
    // A summary shows its _sum/_count from load on; a histogram too.
    if (this.firstResponse !== null) f.firstResponse!.zero(this.labels);
    if (this.interResponse !== null) f.interResponse!.zero(this.labels);
    if (h) {
      for (const x of [h.request, h.queue, h.computeInput, h.computeInfer, h.computeOutput]) x.zero(this.labels);
      if (decoupled) for (const x of [h.firstResponse, h.interResponse]) x.zero(this.labels);
    }
    this.observes = this.summaries !== null || this.latency !== null;
    this.observesResponses = this.firstResponse !== null || this.latency?.firstResponse != null;
  }

  setLoadDuration(secs: number): void {
    this.f.loadDuration.set(this.labels, secs);
  }

  /** Hot path (only when `observes`): one successful request that ran. */
  observe(s: RequestDoneStats): void {
    if (!s.success) return;
    if (this.summaries !== null) observeTimes(this.summaries, s, 1000);
    const h = this.latency;
    // As the statistics count it: a cache hit is in queue with no wait (queue.count == success.count).
    if (h !== null && !observeTimes(h, s, 1e9) && s.cacheHit === true) h.queue.observe(0);
  }

  /**
   * Hot path (only when `observesResponses`): one response of a decoupled
   * request. The first (data, an error or an empty final) is the time from
   * the request's admission to it, Triton's first-response time, unless it
   * is a CANCELLED answer (the client left before anything came: nobody
   * waited for it); each later response that carries data is one
   * inter-response gap, the time since the response before it.
   */
  observeResponse(index: number, kind: ResponseKind, sinceQueueStartNs: number, sincePreviousNs: number): void {
    if (index === 0) {
      if (kind === 'cancel') return;
      const ns = Math.max(0, sinceQueueStartNs);
      this.firstResponse?.observe(ns / 1e6);
      this.latency?.firstResponse?.observe(ns / 1e9);
    } else if (kind === 'success') {
      const ns = Math.max(0, sincePreviousNs);
      this.interResponse?.observe(ns / 1e6);
      this.latency?.interResponse?.observe(ns / 1e9);
    }
  }

  /** Before a scrape: counters up to the statistics, the pending gauge to `pending`. */
  sync(stats: ModelStatistics, pending: number): void {
    const e = this.exported;
    const f = this.f;
    e.success = bump(f.requestSuccess, this.labels, e.success, stats.success.count);
    e.inference = bump(f.inferenceCount, this.labels, e.inference, stats.inferenceCount);
    e.exec = bump(f.execCount, this.labels, e.exec, stats.executionCount);
    for (const reason of FAILURE_REASONS) {
      e.failures[reason] = bump(f.requestFailure, this.failureLabels[reason], e.failures[reason], stats.failures[reason]);
    }
    const d = f.durations;
    if (d) {
      e.requestUs = bump(d.request, this.labels, e.requestUs, us(stats.success.ns));
      e.queueUs = bump(d.queue, this.labels, e.queueUs, us(stats.queue.ns));
      e.computeInputUs = bump(d.computeInput, this.labels, e.computeInputUs, us(stats.computeInput.ns));
      e.computeInferUs = bump(d.computeInfer, this.labels, e.computeInferUs, us(stats.computeInfer.ns));
      e.computeOutputUs = bump(d.computeOutput, this.labels, e.computeOutputUs, us(stats.computeOutput.ns));
    }
    const c = f.cache;
    // Triton shows these for models with the cache enabled; ours appear at the first lookup.
    if (c && stats.cacheHit.count + stats.cacheMiss.count > 0) {
      if (e.cacheHits + e.cacheMisses === 0) for (const x of Object.values(c)) x.inc(this.labels, 0);
      e.cacheHits = bump(c.hits, this.labels, e.cacheHits, stats.cacheHit.count);
      e.cacheHitUs = bump(c.hitUs, this.labels, e.cacheHitUs, us(stats.cacheHit.ns));
      e.cacheMisses = bump(c.misses, this.labels, e.cacheMisses, stats.cacheMiss.count);
      e.cacheMissUs = bump(c.missUs, this.labels, e.cacheMissUs, us(stats.cacheMiss.ns));
    }
    f.pending.set(this.labels, pending);
  }

  /** At unload: every series of this version goes away. */
  remove(): void {
    const f = this.f;
    for (const c of [f.requestSuccess, f.inferenceCount, f.execCount]) c.remove(this.labels);
    for (const reason of FAILURE_REASONS) f.requestFailure.remove(this.failureLabels[reason]);
    if (f.durations) for (const c of Object.values(f.durations)) c.remove(this.labels);
    f.pending.remove(this.labels);
    f.loadDuration.remove(this.labels);
    if (f.summaries) for (const s of Object.values(f.summaries)) s.remove(this.labels);
    f.firstResponse?.remove(this.labels);
    f.interResponse?.remove(this.labels);
    if (f.latency) for (const x of Object.values(f.latency)) x.remove(this.labels);
    if (f.cache) for (const c of Object.values(f.cache)) c.remove(this.labels);
  }
}

const us = (ns: number): number => Math.floor(ns / 1000);

/** The request's time and, when it ran, its queue and compute phases, in units of `nsPerUnit` (µs for the summaries, s for the histograms); returns whether it ran. */
function observeTimes(
  o: Record<'request' | 'queue' | 'computeInput' | 'computeInfer' | 'computeOutput', Observer>,
  s: RequestDoneStats,
  nsPerUnit: number,
): boolean {
  o.request.observe(Math.max(0, s.endNs - s.queueStartNs) / nsPerUnit);
  if (s.computeStartNs === 0) return false;
  o.queue.observe(Math.max(0, s.computeStartNs - s.queueStartNs) / nsPerUnit);
  o.computeInput.observe(Math.max(0, s.computeInputEndNs - s.computeStartNs) / nsPerUnit);
  o.computeInfer.observe(Math.max(0, s.computeInferEndNs - s.computeInputEndNs) / nsPerUnit);
  o.computeOutput.observe(Math.max(0, s.computeEndNs - s.computeInferEndNs) / nsPerUnit);
  return true;
}

function bump<L extends string>(
  c: { inc(labels: Partial<Record<L, string>>, value: number): void },
  labels: Partial<Record<L, string>>,
  exported: number,
  current: number,
): number {
  if (current > exported) c.inc(labels, current - exported);
  return current > exported ? current : exported;
}
