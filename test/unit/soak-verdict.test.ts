/**
 * The soak bench's criteria (bench/soak-verdict.ts) and its answer checks
 * (bench/soak-traffic.ts outputsProblem), table-driven: medians, the RSS
 * windows and their growth, counts back to the baseline, failed requests,
 * server statistics against the client's count, wrong or missing outputs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { outputsProblem, SIMPLE } from '../../bench/soak-traffic';
import { agreementVerdict, baselineVerdicts, failureVerdict, median, rssGrowth, rssVerdict, type RssPoint } from '../../bench/soak-verdict';

test('median', () => {
  const cases: [number[], number][] = [
    [[3], 3],
    [[5, 1, 3], 3],
    [[4, 1, 3, 2], 2.5],
    [[2, 2, 9, 2], 2],
  ];
  for (const [values, want] of cases) assert.equal(median(values), want, JSON.stringify(values));
  assert.ok(Number.isNaN(median([])));
});

/** A sample every 10 s from t = 10 s with the given RSS values. */
const series = (mbs: number[]): RssPoint[] => mbs.map((mb, i) => ({ tS: 10 * (i + 1), mb }));

test('RSS growth: median of the first window against the median of the last', () => {
  const cases: { name: string; points: RssPoint[]; windowS: number; first: number; last: number; firstN: number; lastN: number }[] = [
    { name: 'flat', points: series([100, 100, 100, 100, 100, 100]), windowS: 20, first: 100, last: 100, firstN: 3, lastN: 3 },
    {
      name: 'an outlier in a window does not move its median',
      points: series([100, 180, 100, 101, 102, 250, 102]),
      windowS: 20,
      first: 100,
      last: 102,
      firstN: 3,
      lastN: 3,
    },
    {
      name: 'windows hold the samples within windowS of the ends',
      points: series([90, 90, 95, 100, 110, 110]),
      windowS: 10,
      first: 90,
      last: 110,
      firstN: 2,
      lastN: 2,
    },
    { name: 'unordered values in a window', points: series([120, 100, 110, 0, 130, 150, 140]), windowS: 20, first: 110, last: 140, firstN: 3, lastN: 3 },
  ];
  for (const c of cases) {
    const g = rssGrowth(c.points, c.windowS);
    assert.equal(g.firstMb, c.first, c.name);
    assert.equal(g.lastMb, c.last, c.name);
    assert.equal(g.firstSamples, c.firstN, c.name);
    assert.equal(g.lastSamples, c.lastN, c.name);
    assert.equal(g.growthPct, ((c.last - c.first) / c.first) * 100, c.name);
  }
});

test('RSS verdict: under the limit passes, at or over it fails, too few samples fails', () => {
  const cases: { name: string; points: RssPoint[]; pass: boolean; detail: RegExp }[] = [
    { name: 'no growth', points: series([200, 200, 200, 200, 200, 200]), pass: true, detail: /\+0\.00%/ },
    { name: 'shrinking', points: series([200, 200, 200, 190, 190, 190]), pass: true, detail: /-5\.00%/ },
    { name: 'just under 5%', points: series([200, 200, 200, 209.8, 209.8, 209.8]), pass: true, detail: /\+4\.90%/ },
    { name: 'exactly 5%', points: series([200, 200, 200, 210, 210, 210]), pass: false, detail: /\+5\.00%/ },
    { name: 'a leak', points: series([200, 210, 220, 230, 240, 250]), pass: false, detail: /210\.0 MB → 240\.0 MB/ },
    { name: 'two samples in all', points: series([200, 200]), pass: false, detail: /too few samples/ },
  ];
  for (const c of cases) {
    const v = rssVerdict(c.points, 25, 5);
    assert.equal(v.pass, c.pass, `${c.name}: ${v.detail}`);
    assert.match(v.detail, c.detail, c.name);
  }
});

test('counts back to the baseline: equal or fewer pass, more or missing fail', () => {
  const baseline = { threads: 13, fds: 56, stubs: 1 };
  const cases: { name: string; final: Record<string, number>; pass: boolean[] }[] = [
    { name: 'same', final: { threads: 13, fds: 56, stubs: 1 }, pass: [true, true, true] },
    { name: 'fewer', final: { threads: 12, fds: 50, stubs: 0 }, pass: [true, true, true] },
    { name: 'one fd more', final: { threads: 13, fds: 57, stubs: 1 }, pass: [true, false, true] },
    { name: 'a stub left and a thread', final: { threads: 14, fds: 56, stubs: 2 }, pass: [false, true, false] },
    { name: 'not measured', final: { threads: 13, fds: 56 }, pass: [true, true, false] },
  ];
  for (const c of cases) {
    const v = baselineVerdicts(baseline, c.final);
    assert.deepEqual(
      v.map((x) => x.pass),
      c.pass,
      c.name,
    );
    assert.deepEqual(
      v.map((x) => x.criterion),
      ['threads back to the baseline', 'fds back to the baseline', 'stubs back to the baseline'],
    );
  }
  assert.equal(baselineVerdicts(baseline, { threads: 14, fds: 56, stubs: 1 })[0]!.detail, 'baseline 13, after 14');
});

test('failed requests and statistics agreement', () => {
  const failures: [number, number, boolean][] = [
    [0, 1000, true],
    [1, 1000, false],
    [0, 0, false],
  ];
  for (const [failed, total, pass] of failures) assert.equal(failureVerdict('HTTP', failed, total).pass, pass, `${failed} of ${total}`);
  assert.equal(failureVerdict('HTTP', 0, 0).detail, 'no request was answered');
  const agreement: [number, number, number, boolean][] = [
    [500, 500, 0, true],
    [500, 501, 0, false],
    [501, 500, 0, false],
    [500, 500, 1, false],
  ];
  for (const [client, success, fail, pass] of agreement)
    assert.equal(agreementVerdict('simple', client, success, fail).pass, pass, `${client} ${success} ${fail}`);
});

test('answer checks: the expected outputs pass, a wrong value or a missing output is named', () => {
  const ok = new Map(Object.entries(SIMPLE.expected));
  const cases: { name: string; got: Map<string, number[]>; problem: RegExp | undefined }[] = [
    { name: 'expected', got: ok, problem: undefined },
    {
      name: 'wrong value',
      got: new Map([...ok, ['OUTPUT1', SIMPLE.expected.OUTPUT1!.map((v, i) => (i === 3 ? v + 1 : v))]]),
      problem: /simple: OUTPUT1 is \[.*\], expected \[/,
    },
    { name: 'short', got: new Map([...ok, ['OUTPUT0', [1, 2]]]), problem: /OUTPUT0 is \[1,2\]/ },
    { name: 'missing', got: new Map([['OUTPUT0', SIMPLE.expected.OUTPUT0!]]), problem: /output OUTPUT1 is missing \(got OUTPUT0\)/ },
  ];
  for (const c of cases) {
    const p = outputsProblem(SIMPLE, c.got);
    if (c.problem === undefined) assert.equal(p, undefined, c.name);
    else assert.match(p ?? '', c.problem, c.name);
  }
});
