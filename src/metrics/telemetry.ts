/**
 * Per-(model, version) telemetry on the main thread: one ModelStatistics
 * fed by the scheduler hooks, the Prometheus reporter reading the same
 * numbers, request tracing and request-id verbose lines. Entries are created
 * when a version starts loading and dropped when it is unloaded, so a reload
 * starts from zero and unloaded versions leave /metrics (as in Triton).
 */
import { requestIdPrefix } from '../core/errors';
import type { Logger } from '../logging/logger';
import type { InferRequest } from '../core/request';
import type { RequestDoneStats, SchedulerHooks } from '../scheduler/scheduler-hooks';
import type { Tracer } from '../tracing/tracer';
import type { MetricFamilies } from './metric-families';
import { ModelMetricReporter } from './metric-reporter';
import { ModelStatistics, type ModelStatisticsJson } from './model-statistics';
import type { VersionObserver } from './version-observer';

interface Entry {
  stats: ModelStatistics;
  /** Created when the version serves (two reporters must never share labels). */
  reporter: ModelMetricReporter | undefined;
  inflight: () => number;
  /** model_transaction_policy.decoupled: the response histograms have series. */
  decoupled: boolean;
}

export class Telemetry implements VersionObserver {
  /** Current telemetry of each serving version. */
  private readonly entries = new Map<string, Map<number, Entry>>();
  /** Entries of versions still loading, by the hooks handed out for them. */
  private readonly pending = new WeakMap<SchedulerHooks, Entry>();

  constructor(
    private readonly log: Logger,
    private readonly tracer: Tracer,
    /** Absent with --allow-metrics=false: statistics still work. */
    private readonly families?: MetricFamilies,
  ) {}

  loading(model: string, version: number, decoupled = false): SchedulerHooks {
    const stats = new ModelStatistics();
    const entry: Entry = { stats, reporter: undefined, inflight: () => 0, decoupled };
    const log = this.log.child({ source: 'infer_request.ts', model });
    const tracer = this.tracer;
    const hooks: SchedulerHooks = {
      requestDone(req: InferRequest, s: RequestDoneStats): void {
        const counted = stats.requestDone(s);
        if (log.isVerbose(1)) log.verbose(1, requestLine(req, s, counted));
        if (!counted) return;
        const reporter = entry.reporter;
        if (reporter !== undefined && reporter.observes) reporter.observe(s);
        if (tracer.active) tracer.requestDone(req, s);
      },
      cacheDone(_req, hit, durationNs): void {
        stats.cacheDone(hit, durationNs);
      },
      responseDone(_req, index, kind, sincePreviousNs, sinceQueueStartNs): void {
        stats.responseDone(index, kind, sincePreviousNs);
        const reporter = entry.reporter;
        if (reporter !== undefined && reporter.observesResponses) reporter.observeResponse(index, kind, sinceQueueStartNs, sincePreviousNs);
      },
      executionDone(batchSize, requestCount, timings, padding): void {
        stats.executionDone(batchSize, timings, padding);
        if (log.isVerbose(2)) {
          log.verbose(
            2,
            `model '${model}' version ${version}: executed a batch of ${requestCount} requests (batch size ${batchSize}${padding > 0 ? `, ${padding} not-ready rows` : ''}) in ${us(timings.computeEndNs - timings.computeStartNs)} us`,
          );
        }
      },
    };
    this.pending.set(hooks, entry);
    return hooks;
  }

  loaded(model: string, version: number, hooks: SchedulerHooks, loadSecs: number, inflight: () => number): void {
    const e = this.pending.get(hooks);
    if (e === undefined) return;
    this.pending.delete(hooks);
    this.gone(model, version);
    e.inflight = inflight;
    if (this.families) {
      e.reporter = new ModelMetricReporter(this.families, model, version, e.decoupled);
      e.reporter.setLoadDuration(loadSecs);
    }
    let versions = this.entries.get(model);
    if (versions === undefined) this.entries.set(model, (versions = new Map()));
    versions.set(version, e);
  }

  gone(model: string, version: number): void {
    const versions = this.entries.get(model);
    const e = versions?.get(version);
    if (e === undefined) return;
    e.reporter?.remove();
    versions!.delete(version);
    if (versions!.size === 0) this.entries.delete(model);
  }

  /** Statistics JSON of one version, or undefined when it has none (never loaded). */
  statistics(model: string, version: number): ModelStatisticsJson | undefined {
    return this.entries.get(model)?.get(version)?.stats.toJson(model, version);
  }

  /** The /metrics text: counters brought up to the statistics first. */
  async metricsText(): Promise<string> {
    if (!this.families) return '';
    for (const versions of this.entries.values()) {
      for (const e of versions.values()) e.reporter?.sync(e.stats, e.inflight());
    }
    return this.families.text();
  }
}

const us = (ns: number): number => Math.max(0, Math.round(ns / 1000));

function requestLine(req: InferRequest, s: RequestDoneStats, counted: boolean): string {
  const what = `${requestIdPrefix(req.id)}model '${req.model}' version ${req.version}, batch size ${req.batchSize}`;
  if (!counted) return `${what}: rejected before queueing`;
  if (!s.success) return `${what}: failed after ${us(s.endNs - s.queueStartNs)} us`;
  const run = s.computeStartNs === 0 ? '' : ` (queue ${us(s.computeStartNs - s.queueStartNs)} us, compute ${us(s.computeEndNs - s.computeStartNs)} us)`;
  return `${what}: completed in ${us(s.endNs - s.queueStartNs)} us${run}`;
}
