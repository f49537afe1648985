// Live charts of one model, refreshed every second from its statistics and
// the metrics (live-stats.js says what each line is). uPlot draws them.
import { ApiError, get, h, modelPath } from './api.js';
import { parseMetrics } from './prometheus.js';
import { FAILURE_REASONS, derive, sample } from './live-stats.js';

const POINTS = 120;
const PERIOD_MS = 1000;
const COLORS = ['#2f5fd0', '#c62828', '#1a7f37', '#b26a00', '#7b3fc4', '#00838f'];

function chartSpecs(status) {
  const noMetrics = status.metrics.enabled ? '' : 'Needs metrics: the server runs with --allow-metrics=false.';
  return [
    { id: 'throughput', title: 'Requests / s', series: [['requests', 'success'], ['failed', 'failed']] },
    {
      id: 'latency', title: 'Request latency (µs)', series: [['latencyAvg', 'average'], ['p50', 'p50'], ['p99', 'p99']],
      note: status.metrics.summaries ? '' : 'p50 and p99 need --metrics-config summary_latencies=true (Triton\'s latency summaries); the average is from the statistics.',
    },
    {
      id: 'split', title: 'Time per request (µs): queue vs compute',
      series: [['queue', 'queue'], ['computeInput', 'compute input'], ['computeInfer', 'compute infer'], ['computeOutput', 'compute output']],
    },
    { id: 'batch', title: 'Average batch size (inferences per execution)', series: [['batch', 'inferences / execution']] },
    { id: 'pending', title: 'Pending requests', series: [['pending', 'pending']], note: noMetrics },
    { id: 'failures', title: 'Failures / s by reason', series: FAILURE_REASONS.map((r) => [`fail_${r}`, r]), note: noMetrics },
    { id: 'cache', title: 'Response cache / s', series: [['cacheHits', 'hits'], ['cacheMisses', 'misses']] },
  ];
}

const fmt = (v) => (v === null || v === undefined ? '–' : Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(2));

export class LiveCharts {
  constructor(root, model, status) {
    this.model = model;
    this.status = status;
    this.specs = chartSpecs(status);
    this.xs = [];
    this.values = new Map(this.specs.flatMap((s) => s.series.map(([key]) => [key, []])));
    this.plots = [];
    this.prev = undefined;
    this.stopped = false;
    const grid = h('div', { className: 'grid', id: 'charts' });
    root.append(h('h2', null, 'Live'), grid);
    for (const spec of this.specs) {
      const plotBox = h('div');
      const now = h('p', { className: 'chart-note now', dataset: { chart: spec.id, points: '0' } }, 'waiting for two samples…');
      grid.append(h('div', { className: 'card', dataset: { chart: spec.id } }, h('h3', null, spec.title), plotBox, now, spec.note ? h('p', { className: 'chart-note' }, spec.note) : ''));
      const plot = new uPlot({
        width: Math.max(360, grid.clientWidth / 2 - 40), height: 150,
        legend: { show: true, live: false },
        scales: { x: { time: true } },
        axes: [{}, { size: 64 }],
        series: [{}, ...spec.series.map(([, label], i) => ({ label, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: false }))],
      }, [[], ...spec.series.map(() => [])], plotBox);
      this.plots.push({ spec, plot, now });
    }
    this.timer = setInterval(() => void this.tick(), PERIOD_MS);
    void this.tick();
  }

  async tick() {
    if (this.stopped || this.busy) return;
    this.busy = true;
    try {
      const [stats, text] = await Promise.all([
        get(`${modelPath(this.model)}/stats`).then((s) => s.model_stats),
        this.status.metrics.enabled ? get('/v2/nodetron/metrics', 'text') : Promise.resolve(undefined),
      ]);
      const s = sample(stats, text === undefined ? undefined : parseMetrics(text), this.model, Date.now());
      if (this.prev !== undefined) this.push(s.timeMs / 1000, derive(this.prev, s));
      this.prev = s;
    } catch (err) {
      // Not READY right now (unloaded, reloading): the statistics say why; keep trying.
      for (const p of this.plots) p.now.textContent = err instanceof ApiError ? err.message : String(err);
      this.prev = undefined;
    } finally {
      this.busy = false;
    }
  }

  push(x, d) {
    this.xs.push(x);
    for (const [key, ys] of this.values) ys.push(d[key] ?? null);
    if (this.xs.length > POINTS) {
      this.xs.shift();
      for (const ys of this.values.values()) ys.shift();
    }
    for (const { spec, plot, now } of this.plots) {
      plot.setData([this.xs, ...spec.series.map(([key]) => this.values.get(key))]);
      now.textContent = `now: ${spec.series.map(([key, label]) => `${label} ${fmt(d[key])}`).join(' · ')}`;
      now.dataset.points = String(this.xs.length);
      now.dataset.last = JSON.stringify(Object.fromEntries(spec.series.map(([key]) => [key, d[key]])));
    }
  }

  dispose() {
    this.stopped = true;
    clearInterval(this.timer);
    for (const p of this.plots) p.plot.destroy();
  }
}
