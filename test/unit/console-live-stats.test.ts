/**
 * The console's pure browser modules, run in Node as the ES modules they
 * are: the Prometheus text reader and what the live charts derive from two
 * samples (rates, per-request averages, the batching ratio, a counter that
 * went back after a reload).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

const CONSOLE = path.resolve(__dirname, '../../../console');
// A path held in a variable: tsc leaves the import() to Node, which loads the file as ESM.
const load = (file: string): Promise<any> => import(pathToFileURL(path.join(CONSOLE, file)).href);

const TEXT = [
  '# HELP nv_inference_pending_request_count Instantaneous number of pending requests',
  '# TYPE nv_inference_pending_request_count gauge',
  'nv_inference_pending_request_count{model="simple",version="1"} 3',
  'nv_inference_pending_request_count{model="simple",version="2"} 2',
  'nv_inference_pending_request_count{model="other",version="1"} 9',
  'nv_inference_request_failure{model="simple",reason="REJECTED",version="1"} 4',
  'nv_inference_request_summary_us{model="simple",version="1",quantile="0.5"} 120',
  'nv_inference_request_summary_us{model="simple",version="2",quantile="0.5"} NaN',
  'nv_inference_request_summary_us{model="simple",version="1",quantile="0.99"} 900',
  'weird{model="a \\"quoted\\" name"} 1',
  '',
].join('\n');

test('parseMetrics, modelSum, modelMax: samples by model over versions', async () => {
  const { parseMetrics, modelSum, modelMax } = await load('prometheus.js');
  const samples = parseMetrics(TEXT);
  assert.equal(samples.length, 8);
  assert.deepEqual(samples[7], { name: 'weird', labels: { model: 'a "quoted" name' }, value: 1 });
  const table: [string, Record<string, string>, number | undefined][] = [
    ['nv_inference_pending_request_count', {}, 5],
    ['nv_inference_request_failure', { reason: 'REJECTED' }, 4],
    ['nv_inference_request_failure', { reason: 'BACKEND' }, undefined],
    ['nv_absent', {}, undefined],
  ];
  for (const [name, extra, want] of table) assert.equal(modelSum(samples, name, 'simple', extra), want, name);
  assert.equal(modelMax(samples, 'nv_inference_request_summary_us', 'simple', { quantile: '0.5' }), 120, 'NaN (no observation yet) is skipped');
  assert.equal(modelMax(samples, 'nv_inference_request_summary_us', 'simple', { quantile: '0.99' }), 900);
});

interface Stat {
  count: number;
  ns: number;
}
function stats(success: Stat, queue: Stat, inference: number, execution: number, cacheHits = 0): unknown[] {
  const z = { count: 0, ns: 0 };
  return [
    {
      inference_count: inference,
      execution_count: execution,
      inference_stats: {
        success,
        fail: z,
        queue,
        compute_input: z,
        compute_infer: z,
        compute_output: z,
        cache_hit: { count: cacheHits, ns: 0 },
        cache_miss: z,
      },
    },
  ];
}

test('derive: rates per second, averages per request, inferences per execution', async () => {
  const { sample, derive } = await load('live-stats.js');
  const { parseMetrics } = await load('prometheus.js');
  const metrics = parseMetrics(TEXT);
  const table: [string, unknown[], unknown[], number, Record<string, number | null>][] = [
    [
      'steady load, batches of 4',
      stats({ count: 10, ns: 10e6 }, { count: 10, ns: 1e6 }, 10, 5),
      stats({ count: 30, ns: 50e6 }, { count: 30, ns: 3e6 }, 30, 10),
      2000,
      { requests: 10, latencyAvg: 2000, queue: 100, batch: 4, pending: 5, p50: 120, p99: 900, fail_REJECTED: 0 },
    ],
    [
      'idle: no averages (gaps), no batching ratio',
      stats({ count: 30, ns: 50e6 }, { count: 30, ns: 3e6 }, 30, 10),
      stats({ count: 30, ns: 50e6 }, { count: 30, ns: 3e6 }, 30, 10),
      1000,
      { requests: 0, latencyAvg: null, queue: null, batch: null },
    ],
    [
      'a reload reset the counters: counted from zero',
      stats({ count: 500, ns: 1e9 }, { count: 500, ns: 1e8 }, 500, 500),
      stats({ count: 4, ns: 4e6 }, { count: 4, ns: 4e5 }, 4, 2),
      1000,
      { requests: 4, batch: 2 },
    ],
    [
      'cache hits per second',
      stats({ count: 0, ns: 0 }, { count: 0, ns: 0 }, 0, 0, 0),
      stats({ count: 0, ns: 0 }, { count: 0, ns: 0 }, 0, 0, 6),
      3000,
      { cacheHits: 2 },
    ],
  ];
  for (const [what, a, b, dtMs, want] of table) {
    const d = derive(sample(a, metrics, 'simple', 1000), sample(b, metrics, 'simple', 1000 + dtMs));
    for (const [k, v] of Object.entries(want)) assert.equal(d[k], v, `${what}: ${k}`);
  }
  const noMetrics = derive(
    sample(stats({ count: 0, ns: 0 }, { count: 0, ns: 0 }, 0, 0), undefined, 'simple', 0),
    sample(stats({ count: 1, ns: 1e3 }, { count: 1, ns: 0 }, 1, 1), undefined, 'simple', 1000),
  );
  assert.equal(noMetrics.pending, null);
  assert.equal(noMetrics.fail_REJECTED, null);
  assert.equal(noMetrics.p99, null);
});
