/**
 * `--metrics-config <setting>=<value>` (protocol.md §5.4) resolved into what
 * the metric families need. Pure, so it is table-tested. Unknown settings and
 * malformed quantile pairs produce warnings (Triton logs and skips them).
 */

export interface Quantile {
  quantile: number;
  error: number;
}

export interface MetricsSettings {
  /** The `*_duration_us` counters. */
  counterLatencies: boolean;
  /** `nv_inference_first_response_histogram_ms`. */
  histogramLatencies: boolean;
  /** The `*_summary_us` summaries. */
  summaryLatencies: boolean;
  summaryQuantiles: Quantile[];
  /** nodetron's own latency histograms in seconds (`nodetron_inference_*_duration_seconds`), on by default. */
  latencyHistograms: boolean;
  /** Their bucket bounds, in seconds (`histogram_buckets`). */
  histogramBuckets: number[];
}

/** 0.1 ms to 60 s: the range from a tiny model's queue time to an LLM's whole answer. */
export const DEFAULT_LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

const KEYS = ['counter_latencies', 'histogram_latencies', 'summary_latencies', 'summary_quantiles', 'latency_histograms', 'histogram_buckets'];

export const DEFAULT_QUANTILES = '0.5:0.05,0.9:0.01,0.95:0.001,0.99:0.001,0.999:0.001';

export function resolveMetricsSettings(config: Record<string, string>): { settings: MetricsSettings; warnings: string[] } {
  const warnings: string[] = [];
  const bool = (key: string, dflt: boolean): boolean => {
    const v = config[key];
    // Only the literal strings are recognised; anything else keeps the default.
    if (v === 'true') return true;
    if (v === 'false') return false;
    if (v !== undefined) warnings.push(`invalid value for metrics config '${key}': '${v}', expected 'true' or 'false'; using ${dflt}`);
    return dflt;
  };
  const settings: MetricsSettings = {
    counterLatencies: bool('counter_latencies', true),
    histogramLatencies: bool('histogram_latencies', false),
    summaryLatencies: bool('summary_latencies', false),
    summaryQuantiles: parseQuantiles(config['summary_quantiles'] ?? DEFAULT_QUANTILES, warnings),
    latencyHistograms: bool('latency_histograms', true),
    histogramBuckets: config['histogram_buckets'] === undefined ? DEFAULT_LATENCY_BUCKETS : parseBuckets(config['histogram_buckets'], warnings),
  };
  for (const key of Object.keys(config)) {
    if (!KEYS.includes(key)) {
      warnings.push(`unknown metrics config setting '${key}' is ignored`);
    }
  }
  return { settings, warnings };
}

/** `histogram_buckets=0.001,0.01,0.1`: ascending positive bounds in seconds; anything else is reported and the defaults kept. */
export function parseBuckets(text: string, warnings: string[]): number[] {
  const parts = text.split(',').map((p) => p.trim());
  const values = parts.map(Number);
  const bad = parts.findIndex((p, i) => p === '' || !Number.isFinite(values[i]) || values[i]! <= 0 || (i > 0 && values[i]! <= values[i - 1]!));
  if (bad >= 0) {
    warnings.push(
      `invalid value for metrics config 'histogram_buckets': '${text}' (at '${parts[bad]}'), expected ascending positive bucket bounds in seconds ` +
        `separated by commas, e.g. 0.001,0.01,0.1,1; using the defaults`,
    );
    return DEFAULT_LATENCY_BUCKETS;
  }
  return values;
}

/** `<quantile>:<error>,...`; an invalid pair is reported and skipped. */
export function parseQuantiles(text: string, warnings: string[]): Quantile[] {
  const out: Quantile[] = [];
  for (const pair of text.split(',')) {
    const m = /^\s*([0-9]*\.?[0-9]+)\s*:\s*([0-9]*\.?[0-9]+)\s*$/.exec(pair);
    const q = m ? Number(m[1]) : NaN;
    const e = m ? Number(m[2]) : NaN;
    if (!m || !(q >= 0 && q <= 1) || !(e >= 0 && e <= 1)) {
      warnings.push(
        `invalid summary quantile pair '${pair}' in metrics config 'summary_quantiles', expected <quantile>:<error> with values in [0, 1]; skipped`,
      );
      continue;
    }
    if (!out.some((x) => x.quantile === q)) out.push({ quantile: q, error: e });
  }
  return out;
}
