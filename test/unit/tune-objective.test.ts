/** How `nodetron tune` judges sweeps and configs: when a sweep stops, which point stands for it, and the verdict against noise. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { choosePoint, sweepDone, verdict, type Point, type Trial } from '../../src/tune/tune-objective';
import { progressFor } from '../../src/tune/tune-cli';
import { candidateLabel, type Candidate } from '../../src/tune/tune-space';

const pt = (concurrency: number, throughput: number, p99Ms: number, extra: Partial<Point> = {}): Point => ({
  concurrency,
  throughput,
  p50Us: (p99Ms * 1000) / 2,
  p99Us: p99Ms * 1000,
  stable: true,
  noisePct: 2,
  errors: 0,
  cpuUsPerRequest: undefined,
  avgBatch: undefined,
  ...extra,
});

const sweeps: { name: string; points: Point[]; budgetMs?: number; done: boolean; chosen: number }[] = [
  { name: 'one point: go on', points: [pt(1, 1000, 1)], done: false, chosen: 0 },
  { name: 'still growing 10%: go on', points: [pt(1, 1000, 1), pt(2, 1800, 1.2)], done: false, chosen: 1 },
  { name: 'past the knee: stop, the knee stands for it', points: [pt(1, 1000, 1), pt(2, 1800, 1.2), pt(4, 1900, 2.5)], done: true, chosen: 1 },
  { name: 'an error ends the sweep and the point does not count', points: [pt(1, 1000, 1), pt(2, 1900, 1.2, { errors: 3 })], done: true, chosen: 0 },
  { name: 'over the budget: stop', points: [pt(1, 1000, 1), pt(2, 1800, 6)], budgetMs: 5, done: true, chosen: 0 },
  { name: 'with a budget, 5% more still counts', points: [pt(1, 1000, 1), pt(2, 1800, 2), pt(4, 1890, 3)], budgetMs: 5, done: false, chosen: 2 },
  { name: 'with a budget, under 2% more: stop', points: [pt(1, 1000, 1), pt(2, 1800, 2), pt(4, 1810, 3)], budgetMs: 5, done: true, chosen: 2 },
  { name: 'nothing under the budget', points: [pt(1, 1000, 9)], budgetMs: 5, done: true, chosen: -1 },
];

for (const c of sweeps) {
  test(`sweep: ${c.name}`, () => {
    assert.equal(sweepDone(c.points, c.budgetMs), c.done);
    assert.equal(choosePoint(c.points, c.budgetMs), c.chosen);
  });
}

const cand = (instances: number): Candidate => ({ instances, maxBatch: 0, batching: undefined, intraOp: undefined, interOp: undefined });
const trialOf = (instances: number, throughputs: number[], noisePct = 2): Trial => ({
  candidate: cand(instances),
  points: [pt(4, throughputs[0]!, 2, { noisePct })],
  error: undefined,
  chosen: 0,
  again: throughputs.slice(1),
  seconds: 10,
});

const verdicts: { name: string; shipped: Trial; best: Trial | undefined; shippedIsBest: boolean; text: RegExp }[] = [
  {
    name: 'the best is the shipped one',
    shipped: trialOf(1, [1000]),
    best: undefined,
    shippedIsBest: true,
    text: /^the shipped config is the best one measured$/,
  },
  {
    name: 'clearly faster',
    shipped: trialOf(1, [1000, 1010]),
    best: trialOf(2, [1500, 1480]),
    shippedIsBest: false,
    text: /^instances=2 is best: \+48\.3% over/,
  },
  {
    name: 'faster by less than the noise of its samples',
    shipped: trialOf(1, [1000, 1000]),
    best: trialOf(2, [1200, 1000]),
    shippedIsBest: true,
    text: /^the shipped config is best: the fastest other one \(instances=2\) was \+10\.0%, within the noise of 18\.2%$/,
  },
  {
    name: 'faster by less than 3%, whatever the windows say',
    shipped: trialOf(1, [1000, 1000], 0),
    best: trialOf(2, [1020, 1020], 0),
    shippedIsBest: true,
    text: /within the noise of 3\.0%/,
  },
  {
    name: 'the shipped config had no qualifying point',
    shipped: { ...trialOf(1, [1000]), chosen: -1 },
    best: trialOf(2, [900]),
    shippedIsBest: false,
    text: /no point that qualified/,
  },
];

for (const c of verdicts) {
  test(`verdict: ${c.name}`, () => {
    const v = verdict(c.shipped, c.best, candidateLabel);
    assert.equal(v.shippedIsBest, c.shippedIsBest);
    assert.equal(v.winner, c.shippedIsBest ? c.shipped : c.best);
    assert.match(v.text, c.text);
  });
}

test('progress: a bar on a terminal (config, concurrency, elapsed, left), a line per config elsewhere', () => {
  const trial: Trial = { ...trialOf(2, [1234.5]), seconds: 3 };
  const run = (tty: boolean): string => {
    let err = '';
    const p = progressFor({ stdout: () => undefined, stderr: (t) => (err += t), tty }, 60_000);
    p.start(18);
    p.point(2, 18, 'instances=2', 8);
    p.trial(trial, 2, 18);
    return err;
  };
  const bar = run(true);
  assert.match(bar, /\r\x1b\[K\[-{20}\] 0:00 elapsed, 1:00 left config 3\/18: instances=2, concurrency 8/);
  assert.match(bar, /\r\x1b\[Kconfig 3\/18 instances=2: 1234\.5 infer\/s at concurrency 4, p99 2\.000 ms\n/);
  const lines = run(false);
  assert.doesNotMatch(lines, /\r|\x1b/);
  assert.match(lines, /^tune: config 3\/18 instances=2: 1234\.5 infer\/s at concurrency 4, p99 2\.000 ms$/m);
});
