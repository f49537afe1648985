/**
 * The Prometheus families of nodetron (protocol.md §5.2, §5.3) in one
 * prom-client registry, and the exposition text as Triton's endpoint prints
 * it: families grouped by type (counters, gauges, histograms, summaries) in
 * registration order, families without series left out, labels sorted by
 * name. Only src/metrics/ imports prom-client.
 */
import { Counter, Gauge, Histogram, Registry, Summary } from 'prom-client';
import type { MetricsSettings } from './metrics-config';

export type ModelLabel = 'model' | 'version';
export type FailureLabel = 'model' | 'reason' | 'version';

type C = Counter<ModelLabel>;

export interface ModelFamilies {
  requestSuccess: C;
  requestFailure: Counter<FailureLabel>;
  inferenceCount: C;
  execCount: C;
  /** Present with counter_latencies (default). */
  durations?: { request: C; queue: C; computeInput: C; computeInfer: C; computeOutput: C };
  pending: Gauge<ModelLabel>;
  loadDuration: Gauge<ModelLabel>;
  /** Present with counter_latencies; a version has series once its response cache was used. */
  cache?: { hits: C; hitUs: C; misses: C; missUs: C };
  /** Present with histogram_latencies=true; series only for decoupled models (as Triton). */
  firstResponse?: Histogram<ModelLabel>;
  /** nodetron's own, beside firstResponse (same switch, decoupled models only): the gaps between a request's data responses. */
  interResponse?: Histogram<ModelLabel>;
  /**
   * nodetron's latency histograms in seconds (latency_histograms, on by
   * default; buckets from histogram_buckets); the two response ones have
   * series only for decoupled models.
   */
  latency?: {
    request: Histogram<ModelLabel>;
    queue: Histogram<ModelLabel>;
    computeInput: Histogram<ModelLabel>;
    computeInfer: Histogram<ModelLabel>;
    computeOutput: Histogram<ModelLabel>;
    firstResponse: Histogram<ModelLabel>;
    interResponse: Histogram<ModelLabel>;
  };
  /** Present with summary_latencies=true. */
  summaries?: {
    request: Summary<ModelLabel>;
    queue: Summary<ModelLabel>;
    computeInput: Summary<ModelLabel>;
    computeInfer: Summary<ModelLabel>;
    computeOutput: Summary<ModelLabel>;
  };
}

export interface ServerFamilies {
  cpuUtilization: Gauge;
  cpuMemoryTotal: Gauge;
  cpuMemoryUsed: Gauge;
}

/** Triton's default first-response histogram buckets (ms). */
export const FIRST_RESPONSE_BUCKETS = [100, 500, 2000, 5000];
/**
 * Inter-response (inter-token) buckets (ms): a token every 5-50 ms is a
 * healthy LLM; past 250 ms a reader sees the stream stall.
 */
export const INTER_RESPONSE_BUCKETS = [1, 5, 10, 25, 50, 100, 250, 500, 1000];
const TYPE_ORDER = ['counter', 'gauge', 'histogram', 'summary'];

export class MetricFamilies {
  readonly registry = new Registry();
  readonly model: ModelFamilies;
  /** Present with --allow-cpu-metrics. */
  readonly server?: ServerFamilies;

  constructor(settings: MetricsSettings, cpuMetrics: boolean) {
    const registers = [this.registry];
    const counter = (name: string, help: string): C => new Counter({ name, help, labelNames: ['model', 'version'], registers });
    const gauge = (name: string, help: string): Gauge<ModelLabel> => new Gauge({ name, help, labelNames: ['model', 'version'], registers });
    const summary = (name: string, help: string): Summary<ModelLabel> =>
      new Summary({
        name,
        help,
        labelNames: ['model', 'version'],
        registers,
        percentiles: settings.summaryQuantiles.map((q) => q.quantile),
        // prometheus-cpp's default sliding window: 60 s in 5 age buckets.
        maxAgeSeconds: 60,
        ageBuckets: 5,
      });
    const histogram = (name: string, help: string): Histogram<ModelLabel> =>
      new Histogram({ name, help, labelNames: ['model', 'version'], buckets: settings.histogramBuckets, registers });
    // Registration order is Triton's (protocol.md §5.3).
    this.model = {
      requestSuccess: counter('nv_inference_request_success', 'Number of successful inference requests, all batch sizes'),
      requestFailure: new Counter({
        name: 'nv_inference_request_failure',
        help: 'Number of failed inference requests, all batch sizes',
        labelNames: ['model', 'reason', 'version'],
        registers,
      }),
      inferenceCount: counter('nv_inference_count', 'Number of inferences performed (does not include cached requests)'),
      execCount: counter('nv_inference_exec_count', 'Number of model executions performed (does not include cached requests)'),
      durations: settings.counterLatencies
        ? {
            request: counter('nv_inference_request_duration_us', 'Cumulative inference request duration in microseconds (includes cached requests)'),
            queue: counter('nv_inference_queue_duration_us', 'Cumulative inference queuing duration in microseconds (includes cached requests)'),
            computeInput: counter(
              'nv_inference_compute_input_duration_us',
              'Cumulative compute input duration in microseconds (does not include cached requests)',
            ),
            computeInfer: counter(
              'nv_inference_compute_infer_duration_us',
              'Cumulative compute inference duration in microseconds (does not include cached requests)',
            ),
            computeOutput: counter(
              'nv_inference_compute_output_duration_us',
              'Cumulative inference compute output duration in microseconds (does not include cached requests)',
            ),
          }
        : undefined,
      pending: gauge('nv_inference_pending_request_count', 'Instantaneous number of pending requests awaiting execution per-model.'),
      loadDuration: gauge('nv_model_load_duration_secs', 'Model load time in seconds'),
      cache: settings.counterLatencies
        ? {
            hits: counter('nv_cache_num_hits_per_model', 'Number of cache hits per model'),
            hitUs: counter('nv_cache_hit_duration_per_model', 'Total cache hit duration per model, in microseconds'),
            misses: counter('nv_cache_num_misses_per_model', 'Number of cache misses per model'),
            missUs: counter('nv_cache_miss_duration_per_model', 'Total cache miss (insert+lookup) duration per model, in microseconds'),
          }
        : undefined,
      firstResponse: settings.histogramLatencies
        ? new Histogram({
            name: 'nv_inference_first_response_histogram_ms',
            help: 'Duration from request to first response in milliseconds',
            labelNames: ['model', 'version'],
            buckets: FIRST_RESPONSE_BUCKETS,
            registers,
          })
        : undefined,
      interResponse: settings.histogramLatencies
        ? new Histogram({
            name: 'nodetron_inference_inter_response_histogram_ms',
            help: 'Duration between consecutive responses of a decoupled request (inter-token latency) in milliseconds',
            labelNames: ['model', 'version'],
            buckets: INTER_RESPONSE_BUCKETS,
            registers,
          })
        : undefined,
      latency: settings.latencyHistograms
        ? {
            request: histogram(
              'nodetron_inference_request_duration_seconds',
              'Inference request duration in seconds, from admission to the final response (successful requests, includes cached requests)',
            ),
            queue: histogram(
              'nodetron_inference_queue_duration_seconds',
              'Inference queuing duration in seconds (successful requests; a cache hit counts with no wait)',
            ),
            computeInput: histogram('nodetron_inference_compute_input_duration_seconds', 'Compute input duration in seconds (successful requests that ran)'),
            computeInfer: histogram(
              'nodetron_inference_compute_infer_duration_seconds',
              'Compute inference duration in seconds (successful requests that ran)',
            ),
            computeOutput: histogram('nodetron_inference_compute_output_duration_seconds', 'Compute output duration in seconds (successful requests that ran)'),
            firstResponse: histogram(
              'nodetron_inference_first_response_duration_seconds',
              'Duration from request to first response in seconds (decoupled models: time to first token)',
            ),
            interResponse: histogram(
              'nodetron_inference_inter_response_duration_seconds',
              'Duration between consecutive data responses of a decoupled request in seconds (inter-token latency)',
            ),
          }
        : undefined,
      summaries:
        settings.summaryLatencies && settings.summaryQuantiles.length > 0
          ? {
              request: summary('nv_inference_request_summary_us', 'Summary of inference request duration in microseconds (includes cached requests)'),
              queue: summary('nv_inference_queue_summary_us', 'Summary of inference queuing duration in microseconds (includes cached requests)'),
              computeInput: summary(
                'nv_inference_compute_input_summary_us',
                'Cumulative compute input duration in microseconds (does not include cached requests)',
              ),
              computeInfer: summary(
                'nv_inference_compute_infer_summary_us',
                'Cumulative compute inference duration in microseconds (does not include cached requests)',
              ),
              computeOutput: summary(
                'nv_inference_compute_output_summary_us',
                'Cumulative inference compute output duration in microseconds (does not include cached requests)',
              ),
            }
          : undefined,
    };
    if (cpuMetrics) {
      this.server = {
        cpuUtilization: new Gauge({ name: 'nv_cpu_utilization', help: 'CPU utilization rate [0.0 - 1.0]', registers }),
        cpuMemoryTotal: new Gauge({ name: 'nv_cpu_memory_total_bytes', help: 'CPU total memory (RAM), in bytes', registers }),
        cpuMemoryUsed: new Gauge({ name: 'nv_cpu_memory_used_bytes', help: 'CPU used memory (RAM), in bytes', registers }),
      };
    }
  }

  /** The exposition text (Prometheus text format 0.0.4). */
  async text(): Promise<string> {
    const metrics = this.registry.getMetricsAsArray();
    const sorted = TYPE_ORDER.flatMap((type) => metrics.filter((m) => (m as unknown as { type: string }).type === type));
    // Public in prom-client 15 but missing from its typings: one family's text.
    const registry = this.registry as unknown as { getMetricsAsString(m: unknown): Promise<string> };
    const parts: string[] = [];
    for (const m of sorted) {
      const text = await registry.getMetricsAsString(m);
      // HELP + TYPE and nothing else: a family without series is left out.
      if (text.split('\n').length > 2) parts.push(text);
    }
    return parts.length === 0 ? '' : `${parts.join('\n')}\n`;
  }
}
