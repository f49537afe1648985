/**
 * The soak's criteria (bench/soak.ts) as pure functions over its figures:
 * RSS growth (median of the last window of samples against the median of the
 * first), counts back to the idle baseline, zero failed steady requests, and
 * the server's statistics agreeing with what the client was answered.
 * Table-tested in test/unit/soak-verdict.test.ts.
 */

export interface Verdict {
  criterion: string;
  pass: boolean;
  detail: string;
}

/** The middle value (the mean of the two middle ones for an even count); NaN for none. */
export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export interface RssPoint {
  /** Seconds since the soak (after warm-up) began. */
  tS: number;
  mb: number;
}

export interface RssGrowth {
  firstMb: number;
  lastMb: number;
  growthPct: number;
  firstSamples: number;
  lastSamples: number;
}

/** Median RSS of the samples within `windowS` of the first one and within `windowS` of the last one. */
export function rssGrowth(points: RssPoint[], windowS: number): RssGrowth {
  const t0 = points[0]?.tS ?? 0;
  const tEnd = points[points.length - 1]?.tS ?? 0;
  const first = points.filter((p) => p.tS <= t0 + windowS).map((p) => p.mb);
  const last = points.filter((p) => p.tS >= tEnd - windowS).map((p) => p.mb);
  const firstMb = median(first);
  const lastMb = median(last);
  return { firstMb, lastMb, growthPct: ((lastMb - firstMb) / firstMb) * 100, firstSamples: first.length, lastSamples: last.length };
}

/** Fewer samples than this in either window and the growth is not judged. */
const MIN_WINDOW_SAMPLES = 3;

export function rssVerdict(points: RssPoint[], windowS: number, limitPct: number): Verdict {
  const g = rssGrowth(points, windowS);
  const criterion = `RSS growth < ${limitPct}% (server tree, median of the last ${windowS} s vs the first ${windowS} s)`;
  if (g.firstSamples < MIN_WINDOW_SAMPLES || g.lastSamples < MIN_WINDOW_SAMPLES) {
    return {
      criterion,
      pass: false,
      detail: `too few samples to judge (${g.firstSamples} and ${g.lastSamples}, need ${MIN_WINDOW_SAMPLES} in each window): run longer`,
    };
  }
  const sign = g.growthPct >= 0 ? '+' : '';
  return {
    criterion,
    pass: g.growthPct < limitPct,
    detail: `${g.firstMb.toFixed(1)} MB → ${g.lastMb.toFixed(1)} MB (${sign}${g.growthPct.toFixed(2)}%; ${g.firstSamples} and ${g.lastSamples} samples)`,
  };
}

/** One verdict per count: after the soak it must not be above the idle baseline taken after warm-up. */
export function baselineVerdicts(baseline: Record<string, number>, final: Record<string, number>): Verdict[] {
  return Object.entries(baseline).map(([name, before]) => {
    const after = final[name];
    const pass = after !== undefined && after <= before;
    return { criterion: `${name} back to the baseline`, pass, detail: `baseline ${before}, after ${after ?? 'not measured'}` };
  });
}

export function failureVerdict(label: string, failed: number, total: number): Verdict {
  return {
    criterion: `zero failed requests: ${label}`,
    pass: failed === 0 && total > 0,
    detail: total === 0 ? 'no request was answered' : `${failed} failed of ${total}`,
  };
}

/** Every request the client saw answered is one the server counted as a success, once, and the server counted no failure. */
export function agreementVerdict(model: string, clientOk: number, serverSuccess: number, serverFailed: number): Verdict {
  return {
    criterion: `server statistics agree: ${model}`,
    pass: serverSuccess === clientOk && serverFailed === 0,
    detail: `client answered ${clientOk}, server success ${serverSuccess}, server fail ${serverFailed}`,
  };
}
