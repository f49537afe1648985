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
}

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
  };
  for (const key of Object.keys(config)) {
    if (!['counter_latencies', 'histogram_latencies', 'summary_latencies', 'summary_quantiles'].includes(key)) {
      warnings.push(`unknown metrics config setting '${key}' is ignored`);
    }
  }
  return { settings, warnings };
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
