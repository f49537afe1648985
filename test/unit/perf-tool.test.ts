/**
 * The pure parts of `nodetron perf`: option parsing (perf_analyzer's
 * spellings and errors), ranges, shapes, latency percentiles, the stability
 * rule, server-side splits from two statistics snapshots, the knee, and the
 * request tensors built from metadata.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { buildTensors } from '../../src/perf/input-tensors';
import { findKnee, isStable, parseServerStats, percentile, serverSplit, summarize } from '../../src/perf/perf-math';
import { parsePerfOptions, parseRange, PerfUsageError, rangeSteps, type PerfOptions } from '../../src/perf/perf-options';

test('options: perf_analyzer spellings', () => {
  const o = parsePerfOptions([
    '-m',
    'simple',
    '-x',
    '1',
    '-u',
    'localhost:9000',
    '-i',
    'grpc',
    '-b',
    '4',
    '--shape',
    'IN:3,4',
    '--input-data',
    'zero',
    '--concurrency-range',
    '1:8:2',
    '--measurement-interval=500',
    '--percentile',
    '95',
    '-f',
    'o.csv',
  ]);
  assert.equal(o.model, 'simple');
  assert.equal(o.version, '1');
  assert.equal(o.url, 'localhost:9000');
  assert.equal(o.protocol, 'grpc');
  assert.equal(o.batchSize, 4);
  assert.deepEqual(o.shapes.get('IN'), [3, 4]);
  assert.equal(o.inputData, 'zero');
  assert.deepEqual(o.concurrency, { start: 1, end: 8, step: 2 });
  assert.equal(o.requestRate, undefined);
  assert.equal(o.measurementIntervalMs, 500);
  assert.equal(o.percentile, 95);
  assert.equal(o.csvFile, 'o.csv');
});

test('options: defaults', () => {
  const o = parsePerfOptions(['-m', 'm']);
  assert.equal(o.url, 'localhost:8000');
  assert.equal(o.protocol, 'http');
  assert.equal(o.inputFormat, 'binary');
  assert.deepEqual(o.concurrency, { start: 1, end: 1, step: 1 });
  assert.equal(parsePerfOptions(['-m', 'm', '-i', 'grpc']).url, 'localhost:8001');
  assert.deepEqual(parsePerfOptions(['-m', 'm', '--request-rate-range', '100:300:100']).requestRate, { start: 100, end: 300, step: 100 });
});

test('options: errors name the option', () => {
  const cases: [string[], RegExp][] = [
    [[], /-m: a model name is required/],
    [['-m', 'm', '--bogus'], /unknown option '--bogus'/],
    [['-m', 'm', '-b', 'x'], /-b: expected an integer, got 'x'/],
    [['-m', 'm', '-b', '0'], /-b: must be positive/],
    [['-m', 'm', '-i', 'tcp'], /-i: expected one of http, grpc, got 'tcp'/],
    [['-m', 'm', '--shape', 'IN'], /--shape: expected NAME:d1,d2/],
    [['-m', 'm', '--shape', 'IN:3,x'], /dimension 'x'/],
    [['-m', 'm', '--concurrency-range', '8:1'], /end 1 is below start 8/],
    [['-m', 'm', '--concurrency-range', '1:2', '--request-rate-range', '5'], /cannot be used together/],
    [['-m', 'm', '--percentile', '100'], /--percentile: must be between 1 and 99/],
    [['-m', 'm', '-p'], /-p: missing value/],
  ];
  for (const [argv, re] of cases)
    assert.throws(
      () => parsePerfOptions(argv),
      (e: unknown) => e instanceof PerfUsageError && re.test(e.message),
      argv.join(' '),
    );
});

const PASTED: [string[], Partial<PerfOptions>][] = [
  [['--measurement-mode=count_windows'], { windowRequests: 50, notes: [] }],
  [['--measurement-mode', 'count_windows', '--measurement-request-count', '200'], { windowRequests: 200 }],
  [['--measurement-mode=time_windows'], { windowRequests: undefined }],
  [['--latency-threshold', '5'], { latencyThresholdMs: 5 }],
  [['-l', '20', '-v'], { latencyThresholdMs: 20, verbose: true }],
  [['-t', '4'], { concurrency: { start: 4, end: 4, step: 1 } }],
  [['--shared-memory=none'], { notes: [] }],
  [['--async'], { notes: ['--async/--sync: nodetron perf always sends asynchronously, with the concurrency (or rate) in flight'] }],
  [
    ['-a', '--max-threads', '16', '--collect-metrics'],
    {
      notes: [
        '--async/--sync: nodetron perf always sends asynchronously, with the concurrency (or rate) in flight',
        '--max-threads=16: ignored; one thread drives every request (the concurrency sets how many are in flight)',
        '--collect-metrics: ignored; nodetron serves no GPU metrics; the server-side split comes from the statistics API',
      ],
    },
  ],
];
for (const [argv, want] of PASTED) {
  test(`options: pasted perf_analyzer flags ${argv.join(' ')}`, () => {
    const o = parsePerfOptions(['-m', 'm', ...argv]);
    for (const [k, v] of Object.entries(want)) assert.deepEqual(o[k as keyof PerfOptions], v, k);
  });
}

const PASTED_ERRORS: [string[], string][] = [
  [['--shared-memory=system'], '--shared-memory=system: not supported by nodetron perf yet; tensors go in the request (--shared-memory=none, the default)'],
  [['--shared-memory', 'cuda'], '--shared-memory=cuda: not supported by nodetron perf yet; tensors go in the request (--shared-memory=none, the default)'],
  [['--shared-memory=tmpfs'], "--shared-memory: expected one of none, system, cuda, got 'tmpfs'"],
  [['--measurement-mode=windows'], "--measurement-mode: expected one of time_windows, count_windows, got 'windows'"],
  [['-t', '2', '--concurrency-range', '1:4'], '-t and --concurrency-range cannot be used together'],
];
for (const [argv, message] of PASTED_ERRORS) {
  test(`options: ${argv.join(' ')} is refused naming it`, () => {
    assert.throws(
      () => parsePerfOptions(['-m', 'm', ...argv]),
      (e: unknown) => e instanceof PerfUsageError && e.message === message,
    );
  });
}

test('server split: two loaded versions are summed (requests go to the newest)', () => {
  const entry = (version: string, n: number) => ({
    name: 'm',
    version,
    inference_count: n,
    execution_count: n,
    inference_stats: { success: { count: n }, queue: { ns: n * 1000 }, compute_input: { ns: 0 }, compute_infer: { ns: n * 4000 }, compute_output: { ns: 0 } },
  });
  const a = parseServerStats({ model_stats: [entry('1', 0), entry('2', 10)] }, 'm')!;
  const b = parseServerStats({ model_stats: [entry('1', 0), entry('2', 30)] }, 'm')!;
  assert.deepEqual(serverSplit(a, b), { requests: 20, avgBatch: 1, queueUs: 1, computeInputUs: 0, computeInferUs: 4, computeOutputUs: 0 });
});

test('ranges', () => {
  assert.deepEqual(rangeSteps(parseRange('r', '1:8:2')), [1, 3, 5, 7]);
  assert.deepEqual(rangeSteps(parseRange('r', '4')), [4]);
  assert.deepEqual(rangeSteps(parseRange('r', '2:4')), [2, 3, 4]);
});

test('percentiles and summary', () => {
  const xs = Array.from({ length: 100 }, (_, i) => 100 - i);
  const s = summarize(xs, undefined);
  assert.equal(s.p50Us, 50);
  assert.equal(s.p99Us, 99);
  assert.equal(s.avgUs, 50.5);
  assert.equal(s.reportUs, 50.5);
  assert.equal(summarize(xs, 90).reportUs, 90);
  assert.equal(percentile([], 50), 0);
});

test('stability: three windows within the percentage', () => {
  const w = (count: number, lat: number) => ({ count, errors: 0, seconds: 1, latenciesUs: [lat] });
  const cases: [ReturnType<typeof w>[], boolean][] = [
    [[w(100, 10), w(100, 10)], false],
    [[w(100, 10), w(105, 10), w(95, 10)], true],
    [[w(100, 10), w(130, 10), w(95, 10)], false],
    [[w(100, 10), w(100, 15), w(100, 10)], false],
    [[w(10, 50), w(100, 10), w(101, 10), w(99, 10)], true],
    [[w(0, 0), w(0, 0), w(0, 0)], false],
  ];
  for (const [ws, want] of cases) assert.equal(isStable(ws, 10, undefined), want, JSON.stringify(ws.map((x) => x.count)));
});

test('server split: deltas per request', () => {
  const json = (n: number, q: number) => ({
    model_stats: [
      {
        name: 'm',
        inference_count: String(n * 2),
        execution_count: String(n),
        inference_stats: {
          success: { count: String(n), ns: '0' },
          queue: { count: n, ns: q },
          compute_input: { count: n, ns: n * 1000 },
          compute_infer: { count: n, ns: n * 5000 },
          compute_output: { count: n, ns: n * 2000 },
        },
      },
    ],
  });
  const a = parseServerStats(json(10, 10_000), 'm')!;
  const b = parseServerStats(json(30, 50_000), 'm')!;
  assert.deepEqual(serverSplit(a, b), { requests: 20, avgBatch: 2, queueUs: 2, computeInputUs: 1, computeInferUs: 5, computeOutputUs: 2 });
  assert.equal(parseServerStats(json(1, 1), 'other'), undefined);
  assert.equal(serverSplit(a, a).queueUs, 0);
});

test('knee: where more load stops buying throughput', () => {
  const cases: [number[], number][] = [
    [[100, 200, 300, 310, 305], 2],
    [[100, 200, 400], -1],
    [[100, 100], 0],
    [[100], -1],
  ];
  for (const [xs, want] of cases) assert.equal(findKnee(xs), want, xs.join(','));
});

test('tensors from metadata: batch dim, --shape, data', () => {
  const inputs = [
    { name: 'A', datatype: 'INT32', shape: [-1, 4] },
    { name: 'B', datatype: 'FP32', shape: [-1, -1] },
  ];
  const [a, b] = buildTensors(inputs, 8, { batchSize: 2, shapes: new Map([['B', [3]]]), inputData: 'zero' });
  assert.deepEqual(a!.shape, [2, 4]);
  assert.equal(a!.bytes.length, 32);
  assert.deepEqual(b!.shape, [2, 3]);
  assert.equal(b!.values.length, 6);
  assert.throws(
    () => buildTensors(inputs, 8, { batchSize: 1, shapes: new Map(), inputData: 'zero' }),
    /input 'B' has variable dims \[-1\]; give them with --shape B:/,
  );
  assert.throws(() => buildTensors(inputs, 8, { batchSize: 9, shapes: new Map([['B', [3]]]), inputData: 'zero' }), /over the model's max_batch_size 8/);
  assert.throws(() => buildTensors(inputs, 0, { batchSize: 2, shapes: new Map(), inputData: 'zero' }), /does not support batching/);
  assert.throws(() => buildTensors(inputs, 8, { batchSize: 1, shapes: new Map([['C', [1]]]), inputData: 'zero' }), /no input 'C'/);
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'perf-')), 'd.json');
  fs.writeFileSync(file, JSON.stringify({ data: [{ A: [1, 2, 3, 4], B: { content: [1.5, 2.5], shape: [2] } }] }));
  const [fa, fb] = buildTensors(inputs, 8, { batchSize: 2, shapes: new Map(), inputData: file });
  assert.deepEqual(fa!.values, [1, 2, 3, 4, 1, 2, 3, 4]);
  assert.deepEqual(fa!.bytes.readInt32LE(4), 2);
  assert.deepEqual(fb!.shape, [2, 2]);
  assert.equal(fb!.bytes.readFloatLE(4), 2.5);
  fs.rmSync(path.dirname(file), { recursive: true });
});
