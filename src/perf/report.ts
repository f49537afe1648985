/**
 * Output of `nodetron perf`: one console line per step, a summary table with
 * the knee marked, and a CSV in perf_analyzer's column spelling (times in µs)
 * with our extra columns (errors, stability, knee) at the end.
 */
import { findKnee, type Window } from './perf-math';
import type { StepResult } from './load-driver';

const f0 = (n: number): string => n.toFixed(0);
const ms = (us: number): string => (us / 1000).toFixed(us < 10_000 ? 3 : 1);

export function stepLine(r: StepResult): string {
  const label = r.mode === 'concurrency' ? `Concurrency: ${r.value}` : `Request rate: ${r.value}`;
  const s = r.server;
  const server =
    s === undefined
      ? 'server split: n/a'
      : `server: queue ${f0(s.queueUs)} us, compute input ${f0(s.computeInputUs)} us, infer ${f0(s.computeInferUs)} us, output ${f0(s.computeOutputUs)} us, avg batch ${s.avgBatch.toFixed(1)}`;
  return (
    `${label}, throughput: ${r.inferencesPerSec.toFixed(1)} infer/sec (${r.requestsPerSec.toFixed(1)} req/s), ` +
    `latency p50 ${ms(r.latency.p50Us)} ms p90 ${ms(r.latency.p90Us)} ms p95 ${ms(r.latency.p95Us)} ms p99 ${ms(r.latency.p99Us)} ms, ` +
    `errors ${r.errors}${r.delayed > 0 ? `, delayed ${r.delayed}` : ''}${r.stable ? '' : ', NOT stable'} (${r.windows} windows)\n  ${server}`
  );
}

/** -v: one measurement window. */
export function windowLine(w: Window, index: number, batchSize: number): string {
  const lat = w.latenciesUs;
  let sum = 0;
  for (let i = 0; i < lat.length; i++) sum += lat[i]!;
  const avg = lat.length > 0 ? sum / lat.length : 0;
  return (
    `  window ${index}: ${w.count} requests in ${w.seconds.toFixed(3)} s, ` +
    `${((w.count * batchSize) / w.seconds).toFixed(1)} infer/sec, avg latency ${f0(avg)} us, errors ${w.errors}`
  );
}

export function kneeIndex(results: StepResult[]): number {
  return findKnee(results.map((r) => r.inferencesPerSec));
}

export function summaryTable(results: StepResult[]): string {
  const knee = kneeIndex(results);
  const head = results[0]?.mode === 'rate' ? 'rate' : 'conc';
  const lines = [
    `| ${head} | infer/s | p50 ms | p90 ms | p95 ms | p99 ms | queue us | c.input us | c.infer us | c.output us | errors | |`,
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  results.forEach((r, i) => {
    const s = r.server;
    lines.push(
      `| ${r.value} | ${r.inferencesPerSec.toFixed(1)} | ${ms(r.latency.p50Us)} | ${ms(r.latency.p90Us)} | ${ms(r.latency.p95Us)} | ${ms(r.latency.p99Us)} | ` +
        `${s ? f0(s.queueUs) : '-'} | ${s ? f0(s.computeInputUs) : '-'} | ${s ? f0(s.computeInferUs) : '-'} | ${s ? f0(s.computeOutputUs) : '-'} | ${r.errors} | ${i === knee ? '<- knee' : ''} |`,
    );
  });
  if (knee < 0 && results.length > 1) lines.push('(knee not reached: throughput still grew by 10% or more at the last step)');
  return lines.join('\n');
}

export function toCsv(results: StepResult[]): string {
  const knee = kneeIndex(results);
  const first = results[0]?.mode === 'rate' ? 'Request Rate' : 'Concurrency';
  const rows = [
    [
      first,
      'Inferences/Second',
      'Server Queue',
      'Server Compute Input',
      'Server Compute Infer',
      'Server Compute Output',
      'p50 latency',
      'p90 latency',
      'p95 latency',
      'p99 latency',
      'Avg latency',
      'Errors',
      'Stable',
      'Knee',
    ].join(','),
  ];
  results.forEach((r, i) => {
    const s = r.server;
    rows.push(
      [
        r.value,
        r.inferencesPerSec.toFixed(2),
        f0(s?.queueUs ?? 0),
        f0(s?.computeInputUs ?? 0),
        f0(s?.computeInferUs ?? 0),
        f0(s?.computeOutputUs ?? 0),
        f0(r.latency.p50Us),
        f0(r.latency.p90Us),
        f0(r.latency.p95Us),
        f0(r.latency.p99Us),
        f0(r.latency.avgUs),
        r.errors,
        r.stable ? 1 : 0,
        i === knee ? 1 : 0,
      ].join(','),
    );
  });
  return rows.join('\n') + '\n';
}
