/**
 * Observability on the real server: Prometheus metrics, the statistics
 * extension, the logging extension and Triton-mode tracing, from one server
 * start with metrics on a free port, summaries on, and a trace file.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { MODEL_REPOSITORY, startServer, waitForOutput } from './server-process';
import type { ServerProcess } from './server-process';

const REQUESTS = 240;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-metrics-'));
const traceFile = path.join(tmp, 'trace.json');
let server: ServerProcess;
let stopped = false;

before(async () => {
  server = await startServer([
    `--model-repository=${MODEL_REPOSITORY}`,
    '--allow-metrics=true',
    '--metrics-port=0',
    '--metrics-address=127.0.0.1',
    '--metrics-config=summary_latencies=true',
    `--trace-config=triton,file=${traceFile}`,
  ]);
});
after(async () => {
  if (!stopped) await server.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function scrape(): Promise<Map<string, number>> {
  const res = await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
  const series = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const sp = line.lastIndexOf(' ');
    series.set(line.slice(0, sp), Number(line.slice(sp + 1)));
  }
  return series;
}

async function getJson(url: string, init?: RequestInit): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${server.url}${url}`, init);
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

const post = (body: string): RequestInit => ({ method: 'POST', body });
const DENSE = 'model="dense_classifier",version="1"';

test(`metrics and statistics agree after ${REQUESTS} concurrent requests to dense_classifier`, async () => {
  const results = await Promise.all(
    Array.from({ length: REQUESTS }, (_, k) =>
      infer(
        server.url,
        'dense_classifier',
        [{ name: 'input', datatype: 'FP32', shape: [1, 64], data: Array.from({ length: 64 }, (_, i) => Math.cos(k + i)) }],
        { id: `r${k}` },
      ),
    ),
  );
  for (const r of results) assert.equal(r.status, 200, JSON.stringify(r.json));
  // A request refused by validation never reaches the scheduler: counted nowhere.
  const bad = await infer(server.url, 'dense_classifier', [{ name: 'input', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] }]);
  assert.equal(bad.status, 400);

  const m = await scrape();
  const v = (name: string, labels = DENSE): number => {
    const x = m.get(`${name}{${labels}}`);
    assert.notEqual(x, undefined, `series ${name}{${labels}} is missing`);
    return x!;
  };
  assert.equal(v('nv_inference_request_success'), REQUESTS);
  assert.equal(v('nv_inference_count'), REQUESTS);
  const execs = v('nv_inference_exec_count');
  assert.ok(execs > 0 && execs < REQUESTS, `exec count ${execs} shows dynamic batching`);
  for (const reason of ['OTHER', 'BACKEND', 'CANCELED', 'REJECTED']) {
    assert.equal(v('nv_inference_request_failure', `model="dense_classifier",reason="${reason}",version="1"`), 0);
  }
  for (const d of ['request', 'queue', 'compute_input', 'compute_infer', 'compute_output']) {
    assert.ok(v(`nv_inference_${d}_duration_us`) > 0, `${d} duration is non-zero`);
  }
  assert.equal(v('nv_inference_pending_request_count'), 0);
  assert.ok(v('nv_model_load_duration_secs') > 0);
  for (const s of ['request', 'queue', 'compute_input', 'compute_infer', 'compute_output']) {
    assert.equal(v(`nv_inference_${s}_summary_us_count`), REQUESTS);
    assert.ok(m.has(`nv_inference_${s}_summary_us{quantile="0.5",${DENSE}}`), `${s} summary quantile 0.5`);
  }
  assert.ok(m.has('nv_cpu_utilization') && m.get('nv_cpu_memory_total_bytes')! > 0);
  // Every loaded model has its series from load time on.
  assert.equal(m.get('nv_inference_request_success{model="simple",version="1"}'), 0);

  const { status, json } = await getJson('/v2/models/dense_classifier/stats');
  assert.equal(status, 200);
  const stats = (json.model_stats as Record<string, any>[])[0]!;
  assert.equal(stats.name, 'dense_classifier');
  assert.equal(stats.version, '1');
  assert.equal(stats.inference_count, REQUESTS);
  assert.equal(stats.execution_count, execs);
  assert.ok(stats.last_inference > 0);
  const is = stats.inference_stats;
  assert.equal(is.success.count, REQUESTS);
  assert.deepEqual(is.fail, { count: 0, ns: 0 });
  assert.deepEqual(is.cache_hit, { count: 0, ns: 0 });
  assert.deepEqual(is.cache_miss, { count: 0, ns: 0 });
  assert.equal(Math.floor(is.success.ns / 1000), v('nv_inference_request_duration_us'));
  for (const [key, family] of [
    ['queue', 'queue'],
    ['compute_input', 'compute_input'],
    ['compute_infer', 'compute_infer'],
    ['compute_output', 'compute_output'],
  ]) {
    assert.equal(is[key].count, REQUESTS, key);
    assert.equal(Math.floor(is[key].ns / 1000), v(`nv_inference_${family}_duration_us`), key);
  }
  const batches = stats.batch_stats as { batch_size: number; compute_infer: { count: number } }[];
  assert.equal(
    batches.reduce((n, b) => n + b.compute_infer.count, 0),
    execs,
  );
  assert.equal(
    batches.reduce((n, b) => n + b.batch_size * b.compute_infer.count, 0),
    REQUESTS,
  );
  assert.deepEqual(stats.response_stats, {});
  assert.deepEqual(stats.memory_usage, []);
});

test('data-plane families: wake-up counters, and the arena gauge follows tensors in flight back to its baseline', async () => {
  const baseline = server.arenaBaseline!;
  assert.ok(Number.isInteger(baseline) && baseline % 64 === 0, `arena baseline ${baseline}`);
  const pixels = new Uint8Array(3 * 224 * 224 * 4);
  let done = false;
  const requests = Promise.all(
    Array.from({ length: 16 }, () =>
      infer(server.url, 'image_classifier', [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], data: pixels }], { binaryDataOutput: true }),
    ),
  ).finally(() => {
    done = true;
  });
  let peak = 0;
  while (!done) peak = Math.max(peak, await server.arenaUsedBytes());
  for (const r of await requests) assert.equal(r.status, 200);
  assert.ok(peak >= baseline + pixels.length, `while 16 requests of ${pixels.length} B were in flight the arena held ${peak} B (baseline ${baseline})`);

  const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  assert.match(text, /^# TYPE nodetron_dataplane_missed_wakeups_total counter$/m);
  assert.match(text, /^# TYPE nodetron_dataplane_safety_poll_recoveries_total counter$/m);
  assert.match(text, /^# TYPE nodetron_arena_used_bytes gauge$/m);
  const m = await scrape();
  // No producer may leave the consumer asleep; the poll itself may rarely step in on an overloaded box.
  assert.equal(m.get('nodetron_dataplane_missed_wakeups_total'), 0);
  const recoveries = m.get('nodetron_dataplane_safety_poll_recoveries_total')!;
  assert.ok(Number.isInteger(recoveries) && recoveries >= 0, `safety poll recoveries ${recoveries}`);
  const end = Date.now() + 5000;
  let used = m.get('nodetron_arena_used_bytes')!;
  while (used !== baseline && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 25));
    used = await server.arenaUsedBytes();
  }
  assert.equal(used, baseline, 'every request and response block was freed');
});

test('statistics routes: every model, one version, Triton errors', async () => {
  const all = await getJson('/v2/models/stats');
  assert.equal(all.status, 200);
  const names = (all.json.model_stats as { name: string }[]).map((s) => s.name);
  assert.deepEqual(names, [...names].sort());
  assert.ok(names.includes('simple') && names.includes('dense_classifier'));
  assert.equal((await getJson('/v2/models/simple/versions/1/stats')).status, 200);
  assert.deepEqual(await getJson('/v2/models/nope/stats'), { status: 400, json: { error: "requested model 'nope' is not available" } });
  assert.deepEqual(await getJson('/v2/models/simple/versions/7/stats'), {
    status: 400,
    json: { error: "requested model version is not available for model 'simple'" },
  });
});

test('metrics endpoint quirks: other paths answer 200 empty, other methods 405', async () => {
  const other = await fetch(`http://127.0.0.1:${server.metricsPort}/other`);
  assert.equal(other.status, 200);
  assert.equal(await other.text(), '');
  const p = await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`, { method: 'POST' });
  assert.equal(p.status, 405);
  assert.deepEqual(await p.json(), { error: 'Method Not Allowed' });
});

test('logging extension: GET/POST round trip, request-id verbose lines, Triton errors', async () => {
  const initial = await getJson('/v2/logging');
  assert.deepEqual(initial, {
    status: 200,
    json: {
      log_file: '',
      log_info: true,
      log_warning: true,
      log_error: true,
      log_verbose_level: 0,
      log_format: 'default',
    },
  });
  const changed = await getJson('/v2/logging', post('{"log_verbose_level":1,"log_format":"ISO8601","log_info":null}'));
  assert.equal(changed.status, 200);
  assert.equal(changed.json.log_verbose_level, 1);
  assert.equal(changed.json.log_format, 'ISO8601');
  assert.equal(changed.json.log_info, true);
  assert.deepEqual((await getJson('/v2/logging')).json, changed.json);

  const r = await infer(
    server.url,
    'simple',
    [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(1) },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(2) },
    ],
    { id: 'verbose-42' },
  );
  assert.equal(r.status, 200);
  // ISO8601 line carrying the request id, from the main thread, at the file:line that logged it.
  await waitForOutput(server, /\d{4}-\d\d-\d\dT[\d:]+Z I \d+ telemetry\.ts:\d+\] "\[request id: verbose-42\] model 'simple' version 1/);

  assert.deepEqual(await getJson('/v2/logging', post('{"log_file":"/tmp/x.log"}')), {
    status: 501,
    json: { error: 'log file location can not be updated through network protocol' },
  });
  assert.deepEqual(await getJson('/v2/logging', post('{"log_format":"xml"}')), { status: 503, json: { error: 'invalid argument for --log_format, got: xml' } });
  assert.deepEqual(await getJson('/v2/logging', post('{"log_info":"yes"}')), { status: 500, json: { error: 'attempt to access JSON non-boolean as boolean' } });
  assert.deepEqual(await getJson('/v2/logging', post('')), {
    status: 500,
    json: { error: 'failed to parse the request JSON buffer: The document is empty. at 0' },
  });
  const back = await getJson('/v2/logging', post('{"log_verbose_level":0,"log_format":"default"}'));
  assert.deepEqual(back.json, initial.json);
});

test('trace extension: a model setting traces `count` requests into the trace file', async () => {
  assert.deepEqual((await getJson('/v2/trace/setting')).json, {
    trace_level: ['OFF'],
    trace_rate: '1000',
    trace_count: '-1',
    log_frequency: '0',
    trace_file: traceFile,
    trace_mode: 'triton',
  });
  const set = await getJson('/v2/models/simple/trace/setting', post('{"trace_level":["TIMESTAMPS"],"trace_rate":"1","trace_count":"5"}'));
  assert.equal(set.status, 200, JSON.stringify(set.json));
  assert.deepEqual(set.json.trace_level, ['TIMESTAMPS']);
  assert.equal(set.json.trace_count, '5');
  assert.deepEqual(await getJson('/v2/trace/setting', post('{"trace_level":["OFF","TIMESTAMPS"]}')), {
    status: 400,
    json: { error: "Expect only one trace level 'OFF' is specified" },
  });
  assert.deepEqual(await getJson('/v2/models/nope/trace/setting'), { status: 400, json: { error: 'Request for unknown model : nope' } });
  for (let k = 0; k < 7; k++) {
    const r = await infer(
      server.url,
      'simple',
      [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(k) },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(1) },
      ],
      { id: `t${k}` },
    );
    assert.equal(r.status, 200);
  }
  assert.equal((await getJson('/v2/models/simple/trace/setting')).json.trace_count, '0');
  // The trace file is written at shutdown (log_frequency 0).
  stopped = true;
  assert.equal(await server.stop(), 0);
  const records = JSON.parse(fs.readFileSync(traceFile, 'utf8')) as Record<string, any>[];
  const heads = records.filter((r) => r.model_name !== undefined);
  assert.deepEqual(
    heads.map((h) => [h.model_name, h.model_version, h.request_id]),
    [0, 1, 2, 3, 4].map((k) => ['simple', 1, `t${k}`]),
  );
  for (const h of heads) {
    const ts = records.find((r) => r.id === h.id && r.timestamps !== undefined)!.timestamps as { name: string; ns: number }[];
    assert.deepEqual(
      ts.map((t) => t.name),
      ['REQUEST_START', 'QUEUE_START', 'COMPUTE_START', 'COMPUTE_INPUT_END', 'COMPUTE_OUTPUT_START', 'COMPUTE_END', 'REQUEST_END'],
    );
    for (let i = 1; i < ts.length; i++) assert.ok(ts[i]!.ns >= ts[i - 1]!.ns, `${ts[i]!.name} after ${ts[i - 1]!.name}`);
  }
});
