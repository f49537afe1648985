// What the live charts draw, from two samples of a model's statistics
// (GET /v2/models/<m>/stats, summed over its versions) and of /metrics:
// rates per second and averages per request over the interval between them.
import { modelMax, modelSum } from './prometheus.js';

export const FAILURE_REASONS = ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER'];

/** One sample: the statistics totals of every version, and the metric samples. */
export function sample(stats, metrics, model, timeMs) {
  const t = { timeMs, inference: 0, execution: 0 };
  for (const key of ['success', 'fail', 'queue', 'compute_input', 'compute_infer', 'compute_output', 'cache_hit', 'cache_miss']) t[key] = { count: 0, ns: 0 };
  for (const v of stats) {
    t.inference += v.inference_count;
    t.execution += v.execution_count;
    for (const [key, d] of Object.entries(v.inference_stats)) {
      if (t[key] === undefined) continue;
      t[key].count += d.count;
      t[key].ns += d.ns;
    }
  }
  if (metrics !== undefined) {
    t.pending = modelSum(metrics, 'nv_inference_pending_request_count', model);
    t.failures = Object.fromEntries(FAILURE_REASONS.map((r) => [r, modelSum(metrics, 'nv_inference_request_failure', model, { reason: r }) ?? 0]));
    t.p50 = modelMax(metrics, 'nv_inference_request_summary_us', model, { quantile: '0.5' });
    t.p99 = modelMax(metrics, 'nv_inference_request_summary_us', model, { quantile: '0.99' });
  }
  return t;
}

const perSecond = (d, dt) => (dt > 0 ? d / dt : 0);
/** Average µs per counted request over the interval; null (a gap) when none. */
const avgUs = (a, b) => (b.count > a.count ? (b.ns - a.ns) / (b.count - a.count) / 1000 : null);

/** The charts' values between two samples (`a` before `b`); a counter that went back (a reload) counts from zero. */
export function derive(a, b) {
  const dt = (b.timeMs - a.timeMs) / 1000;
  const delta = (x, y) => (y >= x ? y - x : y);
  const executions = delta(a.execution, b.execution);
  const out = {
    requests: perSecond(delta(a.success.count, b.success.count), dt),
    failed: perSecond(delta(a.fail.count, b.fail.count), dt),
    latencyAvg: avgUs(a.success, b.success),
    p50: b.p50 ?? null,
    p99: b.p99 ?? null,
    queue: avgUs(a.queue, b.queue),
    computeInput: avgUs(a.compute_input, b.compute_input),
    computeInfer: avgUs(a.compute_infer, b.compute_infer),
    computeOutput: avgUs(a.compute_output, b.compute_output),
    // Inferences per execution: the batching ratio.
    batch: executions > 0 ? delta(a.inference, b.inference) / executions : null,
    pending: b.pending ?? null,
    cacheHits: perSecond(delta(a.cache_hit.count, b.cache_hit.count), dt),
    cacheMisses: perSecond(delta(a.cache_miss.count, b.cache_miss.count), dt),
  };
  for (const r of FAILURE_REASONS) {
    out[`fail_${r}`] = b.failures === undefined ? null : perSecond(delta(a.failures[r], b.failures[r]), dt);
  }
  return out;
}
