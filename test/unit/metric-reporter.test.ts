import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseMeminfo, parseProcStat, utilization } from '../../src/metrics/cpu-metrics';
import { MetricFamilies } from '../../src/metrics/metric-families';
import { ModelMetricReporter } from '../../src/metrics/metric-reporter';
import { DEFAULT_LATENCY_BUCKETS, resolveMetricsSettings } from '../../src/metrics/metrics-config';
import { ModelStatistics } from '../../src/metrics/model-statistics';
import type { RequestDoneStats } from '../../src/scheduler/scheduler-hooks';

const done = (q: number, c: number, e: number): RequestDoneStats => ({
  success: true,
  queueStartNs: q,
  computeStartNs: c,
  computeInputEndNs: c + 1000,
  computeInferEndNs: c + 5000,
  computeEndNs: c + 7000,
  endNs: e,
});

function series(text: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const sp = line.lastIndexOf(' ');
    m.set(line.slice(0, sp), Number(line.slice(sp + 1)));
  }
  return m;
}

const L = 'model="m",version="2"';

const CONFIGS: { name: string; config: Record<string, string>; present: string[]; absent: string[] }[] = [
  {
    name: 'defaults',
    config: {},
    present: [
      'nv_inference_request_duration_us',
      'nv_inference_compute_output_duration_us',
      'nodetron_inference_request_duration_seconds',
      'nodetron_inference_queue_duration_seconds',
      'nodetron_inference_compute_infer_duration_seconds',
    ],
    // Not decoupled: no response histograms.
    absent: ['nv_inference_request_summary_us', 'nv_inference_first_response_histogram_ms', 'nodetron_inference_first_response_duration_seconds'],
  },
  {
    name: 'latency_histograms=false',
    config: { latency_histograms: 'false' },
    present: ['nv_inference_request_duration_us'],
    absent: ['nodetron_inference_request_duration_seconds', 'nodetron_inference_queue_duration_seconds'],
  },
  {
    name: 'counter_latencies=false',
    config: { counter_latencies: 'false' },
    present: ['nv_inference_count'],
    absent: ['nv_inference_request_duration_us', 'nv_inference_queue_duration_us'],
  },
  {
    name: 'summaries',
    config: { summary_latencies: 'true', summary_quantiles: '0.5:0.05,0.99:0.001' },
    present: ['nv_inference_request_summary_us', 'nv_inference_compute_infer_summary_us'],
    absent: [],
  },
  // Not decoupled: the response histograms have no series (Triton's rule), so their families stay out.
  {
    name: 'histogram',
    config: { histogram_latencies: 'true' },
    present: ['nv_inference_request_duration_us'],
    absent: ['nv_inference_queue_summary_us', 'nv_inference_first_response_histogram_ms', 'nodetron_inference_inter_response_histogram_ms'],
  },
];

for (const c of CONFIGS) {
  test(`metric families with ${c.name}`, async () => {
    const { settings } = resolveMetricsSettings(c.config);
    const families = new MetricFamilies(settings, false);
    const reporter = new ModelMetricReporter(families, 'm', 2);
    const stats = new ModelStatistics();
    for (const s of [done(0, 3000, 20_000), done(1000, 3000, 21_000)]) {
      stats.requestDone(s);
      if (reporter.observes) reporter.observe(s);
    }
    stats.executionDone(2, { computeStartNs: 3000, computeInputEndNs: 4000, computeInferEndNs: 8000, computeEndNs: 10_000 });
    reporter.sync(stats, 3);
    const text = await families.text();
    const names = new Set(
      text
        .split('\n')
        .filter((l) => l.startsWith('# TYPE '))
        .map((l) => l.split(' ')[2]),
    );
    for (const p of c.present) assert.ok(names.has(p), `${p} present`);
    for (const a of c.absent) assert.ok(!names.has(a), `${a} absent`);
    const m = series(text);
    assert.equal(m.get(`nv_inference_request_success{${L}}`), 2);
    assert.equal(m.get(`nv_inference_count{${L}}`), 2);
    assert.equal(m.get(`nv_inference_exec_count{${L}}`), 1);
    assert.equal(m.get(`nv_inference_pending_request_count{${L}}`), 3);
    assert.equal(m.get('nv_inference_request_failure{model="m",reason="BACKEND",version="2"}'), 0);
    if (settings.counterLatencies) {
      assert.equal(m.get(`nv_inference_request_duration_us{${L}}`), 40); // (20000 + 20000) ns
      assert.equal(m.get(`nv_inference_queue_duration_us{${L}}`), 5); // 3000 + 2000 ns
      assert.equal(m.get(`nv_inference_compute_infer_duration_us{${L}}`), 8);
    }
    if (settings.summaryLatencies) {
      assert.equal(m.get(`nv_inference_request_summary_us_count{${L}}`), 2);
      assert.ok(m.has(`nv_inference_request_summary_us{quantile="0.99",${L}}`));
      assert.ok(!m.has(`nv_inference_request_summary_us{quantile="0.9",${L}}`));
    }
    // A second sync adds only what is new.
    stats.requestDone(done(0, 1000, 10_000));
    reporter.sync(stats, 0);
    assert.equal(series(await families.text()).get(`nv_inference_request_success{${L}}`), 3);
    // Unload: every series of the version goes, and empty families leave the text.
    reporter.remove();
    assert.equal(await families.text(), '');
  });
}

const MS = 1e6;
/** Responses of decoupled requests (index, kind, since admission, since the previous) and what the histograms hold after them. */
const RESPONSES: { name: string; responses: [number, 'success' | 'fail' | 'empty' | 'cancel', number, number][]; first: number[]; gaps: number[] }[] = [
  {
    name: 'a stream of three words and an empty final',
    responses: [
      [0, 'success', 300 * MS, 290 * MS],
      [1, 'success', 340 * MS, 40 * MS],
      [2, 'success', 360 * MS, 20 * MS],
      [3, 'empty', 361 * MS, 1 * MS],
    ],
    first: [300],
    gaps: [40, 20],
  },
  { name: 'one response only', responses: [[0, 'success', 7 * MS, 5 * MS]], first: [7], gaps: [] },
  {
    name: 'an error first, then words',
    responses: [
      [0, 'fail', 2 * MS, 2 * MS],
      [1, 'success', 12 * MS, 10 * MS],
    ],
    first: [2],
    gaps: [10],
  },
  { name: 'cancelled before its first word', responses: [[0, 'cancel', 50 * MS, 50 * MS]], first: [], gaps: [] },
  {
    name: 'a cancel after a word',
    responses: [
      [0, 'success', 3 * MS, 3 * MS],
      [1, 'cancel', 9 * MS, 6 * MS],
    ],
    first: [3],
    gaps: [],
  },
];

for (const c of RESPONSES) {
  test(`response histograms of a decoupled model: ${c.name}`, async () => {
    const families = new MetricFamilies(resolveMetricsSettings({ histogram_latencies: 'true' }).settings, false);
    const reporter = new ModelMetricReporter(families, 'm', 2, true);
    assert.ok(reporter.observesResponses);
    for (const [index, kind, sinceStart, sincePrevious] of c.responses) reporter.observeResponse(index, kind, sinceStart, sincePrevious);
    const m = series(await families.text());
    const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
    assert.equal(m.get(`nv_inference_first_response_histogram_ms_count{${L}}`), c.first.length);
    assert.equal(m.get(`nv_inference_first_response_histogram_ms_sum{${L}}`), sum(c.first));
    assert.equal(m.get(`nv_inference_first_response_histogram_ms_bucket{le="100",${L}}`), c.first.filter((x) => x <= 100).length);
    assert.equal(m.get(`nodetron_inference_inter_response_histogram_ms_count{${L}}`), c.gaps.length);
    assert.equal(m.get(`nodetron_inference_inter_response_histogram_ms_sum{${L}}`), sum(c.gaps));
    assert.equal(m.get(`nodetron_inference_inter_response_histogram_ms_bucket{le="25",${L}}`), c.gaps.filter((x) => x <= 25).length);
    reporter.remove();
    assert.equal(await families.text(), '');
  });
}

test('latency histograms: seconds, the buckets given, the same requests as the statistics', async () => {
  const families = new MetricFamilies(resolveMetricsSettings({ histogram_buckets: '0.00001,0.0001' }).settings, false);
  const reporter = new ModelMetricReporter(families, 'm', 2);
  const stats = new ModelStatistics();
  // Request 20 us and 50 us; queue 3 us and 2 us; compute input 1 us, infer 4 us, output 2 us each.
  const requests = [done(0, 3000, 20_000), done(1000, 3000, 51_000), { ...done(0, 0, 5000), success: false }];
  for (const s of requests) {
    if (stats.requestDone(s) && reporter.observes) reporter.observe(s);
  }
  const m = series(await families.text());
  const h = (name: string, suffix: string): number | undefined => m.get(`nodetron_inference_${name}_duration_seconds_${suffix}{${L}}`);
  const le = (name: string, bound: string): number | undefined => m.get(`nodetron_inference_${name}_duration_seconds_bucket{le="${bound}",${L}}`);
  assert.equal(h('request', 'count'), stats.success.count, 'one observation per successful request, as the statistics count');
  assert.ok(Math.abs(h('request', 'sum')! - stats.success.ns / 1e9) < 1e-12, `sum ${h('request', 'sum')} vs ${stats.success.ns} ns`);
  assert.equal(le('request', '0.00001'), 0);
  assert.equal(le('request', '0.0001'), 2);
  assert.equal(le('request', '+Inf'), 2);
  assert.ok(Math.abs(h('queue', 'sum')! - stats.queue.ns / 1e9) < 1e-12);
  assert.ok(Math.abs(h('compute_infer', 'sum')! - 8e-6) < 1e-12);
  assert.equal(h('compute_output', 'count'), 2);
});

test('response latency histograms (seconds) for a decoupled model, by default', async () => {
  const families = new MetricFamilies(resolveMetricsSettings({}).settings, false);
  const reporter = new ModelMetricReporter(families, 'm', 2, true);
  assert.ok(reporter.observesResponses);
  reporter.observeResponse(0, 'success', 2_000_000, 2_000_000);
  reporter.observeResponse(1, 'success', 7_000_000, 5_000_000);
  reporter.observeResponse(2, 'empty', 7_500_000, 500_000);
  const m = series(await families.text());
  assert.equal(m.get(`nodetron_inference_first_response_duration_seconds_count{${L}}`), 1);
  assert.equal(m.get(`nodetron_inference_first_response_duration_seconds_sum{${L}}`), 0.002);
  assert.equal(m.get(`nodetron_inference_inter_response_duration_seconds_count{${L}}`), 1, 'only data responses are gaps');
  assert.equal(m.get(`nodetron_inference_inter_response_duration_seconds_bucket{le="0.005",${L}}`), 1);
  assert.equal(m.get(`nv_inference_first_response_histogram_ms_count{${L}}`), undefined, "Triton's own stays behind histogram_latencies");
});

test('response histograms are off without histogram_latencies, and for a model that is not decoupled', () => {
  const off = new MetricFamilies(resolveMetricsSettings({ latency_histograms: 'false' }).settings, false);
  assert.equal(new ModelMetricReporter(off, 'm', 1, true).observesResponses, false);
  const on = new MetricFamilies(resolveMetricsSettings({ histogram_latencies: 'true' }).settings, false);
  assert.equal(new ModelMetricReporter(on, 'm', 1, false).observesResponses, false);
});

test('counters, gauges, histograms, summaries in that order; labels sorted by name', async () => {
  const ORDER = ['counter', 'gauge', 'histogram', 'summary'];
  const families = new MetricFamilies(resolveMetricsSettings({}).settings, false);
  new ModelMetricReporter(families, 'm', 1).setLoadDuration(0.5);
  const text = await families.text();
  const types = text
    .split('\n')
    .filter((l) => l.startsWith('# TYPE '))
    .map((l) => l.split(' ')[3]);
  assert.deepEqual(
    types,
    [...types].sort((a, b) => ORDER.indexOf(a!) - ORDER.indexOf(b!)),
  );
  assert.match(text, /^nv_inference_request_failure\{model="m",reason="OTHER",version="1"\} 0$/m);
  assert.match(text, /^nv_model_load_duration_secs\{model="m",version="1"\} 0\.5$/m);
});

const SETTINGS: [Record<string, string>, Partial<ReturnType<typeof resolveMetricsSettings>['settings']>, number][] = [
  [{}, { counterLatencies: true, histogramLatencies: false, summaryLatencies: false }, 0],
  [{ counter_latencies: 'false', summary_latencies: 'true' }, { counterLatencies: false, summaryLatencies: true }, 0],
  [{ counter_latencies: 'TRUE' }, { counterLatencies: true }, 1],
  [
    { summary_quantiles: '0.5:0.05,bad,1.5:0.1,0.9:0.01' },
    {
      summaryQuantiles: [
        { quantile: 0.5, error: 0.05 },
        { quantile: 0.9, error: 0.01 },
      ],
    },
    2,
  ],
  [{ unknown_thing: '1' }, {}, 1],
  [{}, { latencyHistograms: true, histogramBuckets: DEFAULT_LATENCY_BUCKETS }, 0],
  [{ latency_histograms: 'false', histogram_buckets: '0.001, 0.01,1' }, { latencyHistograms: false, histogramBuckets: [0.001, 0.01, 1] }, 0],
  [{ histogram_buckets: '0.01,0.001' }, { histogramBuckets: DEFAULT_LATENCY_BUCKETS }, 1],
  [{ histogram_buckets: '0.001,,1' }, { histogramBuckets: DEFAULT_LATENCY_BUCKETS }, 1],
  [{ histogram_buckets: '-1' }, { histogramBuckets: DEFAULT_LATENCY_BUCKETS }, 1],
];

for (const [config, expected, warnings] of SETTINGS) {
  test(`--metrics-config ${JSON.stringify(config)}`, () => {
    const r = resolveMetricsSettings(config);
    for (const [k, v] of Object.entries(expected)) assert.deepEqual(r.settings[k as keyof typeof r.settings], v, k);
    assert.equal(r.warnings.length, warnings, r.warnings.join('; '));
  });
}

test("default quantiles are Triton's five", () => {
  assert.deepEqual(
    resolveMetricsSettings({}).settings.summaryQuantiles.map((q) => q.quantile),
    [0.5, 0.9, 0.95, 0.99, 0.999],
  );
});

test('CPU readings from /proc texts', () => {
  const a = parseProcStat('cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4\n')!;
  const b = parseProcStat('cpu  200 0 200 800 100 0 0 0 50 0\n')!;
  assert.deepEqual(a, { busy: 200, total: 1000 });
  assert.equal(utilization(a, b), 200 / 300);
  assert.equal(utilization(b, b), 0);
  assert.equal(parseProcStat('nonsense'), undefined);
  assert.deepEqual(parseMeminfo('MemTotal:       1000 kB\nMemFree:   100 kB\nMemAvailable:    400 kB\n'), { total: 1024000, used: 614400 });
  assert.equal(parseMeminfo('nothing'), undefined);
});
