/**
 * What `nodetron tune` prints: a table with a row per config at the point
 * that stands for it (the winner and the shipped config marked), a CSV with
 * every point of every sweep, a JSON document for scripts, and the comment
 * that heads config.tuned.pbtxt. Pure.
 */
import type { Point, Trial } from './tune-objective';
import { noiseOf, samples, score } from './tune-objective';
import type { TuneResult } from './tune-runner';
import { candidateKey, candidateLabel } from './tune-space';

const ms = (us: number): string => (us / 1000).toFixed(us < 10_000 ? 3 : 1);
const f0 = (n: number | undefined): string => (n === undefined ? '-' : n.toFixed(0));

function mark(r: TuneResult, t: Trial): string {
  const marks: string[] = [];
  if (t === r.verdict.winner) marks.push('<- winner');
  if (t === r.shipped) marks.push('shipped');
  if (t.error !== undefined) marks.push(`did not load: ${t.error.split('\n')[0]!.slice(0, 160)}`);
  else if (t.chosen < 0) marks.push(r.objective.startsWith('highest') ? 'no point under the latency budget' : 'no point without errors');
  return marks.join(', ');
}

function clock(seconds: number): string {
  const s = Math.round(seconds);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

export function tuneTable(r: TuneResult): string {
  const lines = [
    `nodetron tune: ${r.model}, ${r.objective}; ${r.trials.length} configs measured in ${clock(r.elapsedSeconds)} of a ${clock(r.budgetSeconds)} budget` +
      (r.ended === 'budget' ? ` (the budget ended the search with ${r.left} candidates left)` : ''),
    '',
    '| config | concurrency | infer/s | p50 ms | p99 ms | server CPU us/req | avg batch | noise | |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  const order = [...r.trials].sort((a, b) => score(b) - score(a));
  for (const t of order) {
    const p: Point | undefined = t.points[t.chosen];
    const again = t.again.length > 0 ? ` (again: ${t.again.map((x) => x.toFixed(0)).join(', ')})` : '';
    lines.push(
      `| ${candidateLabel(t.candidate)} | ${p?.concurrency ?? '-'} | ${p === undefined ? '-' : score(t).toFixed(1) + again} | ` +
        `${p === undefined ? '-' : ms(p.p50Us)} | ${p === undefined ? '-' : ms(p.p99Us)} | ${f0(p?.cpuUsPerRequest)} | ${p?.avgBatch === undefined ? '-' : p.avgBatch.toFixed(1)} | ` +
        `${p === undefined ? '-' : `${(noiseOf(t) * 100).toFixed(1)}%${p.stable ? '' : ' (not stable)'}`} | ${mark(r, t)} |`,
    );
  }
  lines.push('', `Verdict: ${r.verdict.text}.`);
  lines.push(
    `Measured on ${r.cores} cores with the load generator in this process, on the same cores; infer/s is the mean of the sweep's point and the measurements again at the end.`,
  );
  return lines.join('\n') + '\n';
}

const CSV_HEAD = 'config,concurrency,inferences_per_sec,p50_us,p99_us,server_cpu_us_per_request,avg_batch,noise_pct,stable,errors,chosen,winner,shipped,error';

function csvCell(text: string): string {
  return /[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function tuneCsv(r: TuneResult): string {
  const rows = [CSV_HEAD];
  for (const t of r.trials) {
    const flags = (i: number): string[] => [i === t.chosen ? '1' : '0', t === r.verdict.winner && i === t.chosen ? '1' : '0', t === r.shipped ? '1' : '0'];
    if (t.points.length === 0)
      rows.push(
        [csvCell(candidateLabel(t.candidate)), '', '', '', '', '', '', '', '', '', '0', '0', t === r.shipped ? '1' : '0', csvCell(t.error ?? '')].join(','),
      );
    t.points.forEach((p, i) => {
      rows.push(
        [
          csvCell(candidateLabel(t.candidate)),
          p.concurrency,
          p.throughput.toFixed(2),
          f0(p.p50Us),
          f0(p.p99Us),
          p.cpuUsPerRequest === undefined ? '' : f0(p.cpuUsPerRequest),
          p.avgBatch === undefined ? '' : p.avgBatch.toFixed(2),
          p.noisePct.toFixed(1),
          p.stable ? 1 : 0,
          p.errors,
          ...flags(i),
          '',
        ].join(','),
      );
    });
  }
  return rows.join('\n') + '\n';
}

export function tuneJson(r: TuneResult, tunedText: string, writtenTo: string[]): string {
  const trial = (t: Trial): Record<string, unknown> => ({
    config: candidateLabel(t.candidate),
    key: candidateKey(t.candidate),
    candidate: t.candidate,
    error: t.error ?? null,
    chosen_point: t.chosen,
    score: score(t),
    samples: samples(t),
    noise: noiseOf(t),
    points: t.points,
    seconds: t.seconds,
  });
  return (
    JSON.stringify(
      {
        model: r.model,
        objective: r.objective,
        cores: r.cores,
        budget_seconds: r.budgetSeconds,
        elapsed_seconds: r.elapsedSeconds,
        ended: r.ended,
        candidates_left: r.left,
        verdict: { text: r.verdict.text, shipped_is_best: r.verdict.shippedIsBest, gain: r.verdict.gain, noise: r.verdict.noise },
        winner: trial(r.verdict.winner),
        shipped: trial(r.shipped),
        trials: r.trials.map(trial),
        tuned_config_pbtxt: tunedText,
        written: writtenTo,
      },
      null,
      2,
    ) + '\n'
  );
}

/** The comment lines at the top of config.tuned.pbtxt: what won, by how much, measured how. */
export function tunedHeader(r: TuneResult, when: Date): string {
  const w = r.verdict.winner;
  const p = w.points[w.chosen];
  const s = r.shipped.points[r.shipped.chosen];
  const line = (t: Trial, q: Point | undefined): string =>
    q === undefined ? 'no qualifying point' : `${score(t).toFixed(1)} infer/s at concurrency ${q.concurrency}, p99 ${ms(q.p99Us)} ms`;
  return [
    `# Written by nodetron tune on ${when.toISOString()} (${r.cores} cores): ${r.objective}.`,
    `# ${r.verdict.text}.`,
    `# This config: ${candidateLabel(w.candidate)}: ${line(w, p)}.`,
    `# Shipped: ${candidateLabel(r.shipped.candidate)}: ${line(r.shipped, s)}.`,
    '',
  ].join('\n');
}
