/**
 * The observability parts the composition root starts and stops as one:
 * tracing, per-version telemetry (statistics + metrics), the CPU poller, the
 * data-plane families (dataplane-metrics.ts) and the metrics endpoint (after
 * HTTP, as Triton starts it). With --allow-metrics=false there is no
 * registry and no listener, while statistics and tracing still work.
 */
import type { ServerOptions } from '../cli-options';
import { ServerError, toErrorInfo } from '../core/errors';
import type { Logger } from '../logging/logger';
import { Tracer } from '../tracing/tracer';
import { CpuMetricsPoller } from './cpu-metrics';
import { registerDataplaneMetrics, type DataplaneSource } from './dataplane-metrics';
import { registerModelStateMetrics, registerThreadCpuMetrics, type ModelStateSource } from './server-state-metrics';
import { MetricFamilies } from './metric-families';
import { resolveMetricsSettings } from './metrics-config';
import { MetricsServer } from './metrics-server';
import { Telemetry } from './telemetry';

export class Observability {
  readonly tracer: Tracer;
  readonly telemetry: Telemetry;
  private readonly families: MetricFamilies | undefined;
  private cpu: CpuMetricsPoller | undefined;
  private server: MetricsServer | undefined;
  private stopped = false;
  private readonly extraText: (() => string)[] = [];
  /** Whether the latency summaries (p50/p99 ...) are on (--metrics-config summary_latencies=true). */
  readonly summaries: boolean = false;

  constructor(
    private readonly options: ServerOptions,
    private readonly log: Logger,
    private readonly dataplane: DataplaneSource,
  ) {
    this.tracer = new Tracer(options.traceConfig, (msg) => log.error(msg));
    if (options.allowMetrics) {
      const { settings, warnings } = resolveMetricsSettings(options.metricsConfig);
      for (const w of warnings) log.warn(w);
      this.families = new MetricFamilies(settings, options.allowCpuMetrics);
      this.summaries = settings.summaryLatencies && settings.summaryQuantiles.length > 0;
      registerDataplaneMetrics(this.families.registry, dataplane);
      registerThreadCpuMetrics(this.families.registry);
    }
    this.telemetry = new Telemetry(log, this.tracer, this.families);
  }

  /** The repository's view of its versions (readiness, instances, restarts), read at each scrape; the repository is made after telemetry. */
  watchModels(source: ModelStateSource): void {
    if (this.families) registerModelStateMetrics(this.families.registry, source);
  }

  /** More exposition text, after nodetron's own families (custom metrics of models). */
  addExposition(source: () => string): void {
    this.extraText.push(source);
  }

  /** The metrics endpoint's text ('' with --allow-metrics=false). */
  async exposition(): Promise<string> {
    this.dataplane.settle();
    return (await this.telemetry.metricsText()) + this.extraText.map((f) => f()).join('');
  }

  /** Start the CPU poller and the metrics endpoint; resolves with the bound port. */
  async startMetrics(): Promise<number> {
    if (!this.families) return 0;
    if (this.families.server) {
      this.cpu = new CpuMetricsPoller(this.families.server, this.options.metricsIntervalMs);
      this.cpu.start();
    }
    this.server = new MetricsServer(() => this.exposition());
    const { metricsAddress: address, metricsPort: port } = this.options;
    let bound: number;
    try {
      bound = await this.server.start(address, port);
    } catch (err) {
      throw new ServerError('UNAVAILABLE', `failed to start Metrics service: ${toErrorInfo(err).message}`);
    }
    this.log.info(`Started Metrics Service at ${address}:${bound}`);
    return bound;
  }

  /** Close the endpoint and write buffered traces. Idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.cpu?.stop();
    await this.server?.stop();
    this.tracer.flush();
  }
}
