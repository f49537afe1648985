/**
 * The response histograms on the real server (`--metrics-config
 * histogram_latencies=true`): Triton's nv_inference_first_response_histogram_ms
 * and nodetron's nodetron_inference_inter_response_histogram_ms, for the
 * decoupled Python mock LLM (fixtures/generate_models/mock_llm) streamed
 * with curl -N on generate_stream and over gRPC ModelStreamInfer, and absent
 * for the ONNX `simple`, which is
 * not decoupled (Triton shows the histogram for decoupled models only).
 * Also nodetron's latency histograms in seconds (on by default), held
 * against the statistics extension's counts and nanoseconds.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import os from 'node:os';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { createClient, type GrpcTestClient } from './grpc-test-client';
import { MODEL_REPOSITORY, REPO_ROOT, startServer } from './server-process';
import type { ServerProcess } from './server-process';

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures/generate_models');
const FIRST = 'nv_inference_first_response_histogram_ms';
const INTER = 'nodetron_inference_inter_response_histogram_ms';
/** Generous: the machine is shared, and only the lower bounds are the model's. */
const SLACK_MS = 2000;

let server: ServerProcess;
let client: GrpcTestClient;
let repo: string;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-histograms-'));
  fs.cpSync(path.join(FIXTURES, 'mock_llm'), path.join(repo, 'mock_llm'), { recursive: true });
  fs.cpSync(path.join(MODEL_REPOSITORY, 'simple'), path.join(repo, 'simple'), { recursive: true });
  server = await startServer([
    `--model-repository=${repo}`,
    '--allow-metrics=true',
    '--metrics-port=0',
    '--metrics-address=127.0.0.1',
    '--metrics-config=histogram_latencies=true',
    '--allow-grpc=true',
    '--grpc-port=0',
    '--grpc-address=127.0.0.1',
  ]);
  client = createClient(server.grpcPort);
});

after(async () => {
  client?.close();
  if (server !== undefined) assert.equal(await server.stop(), 0, 'the server stops cleanly');
  fs.rmSync(repo, { recursive: true, force: true });
});

/** One histogram's series of one model: count, sum and the buckets by `le`. */
interface Series {
  count: number | undefined;
  sum: number | undefined;
  le: Map<string, number>;
}

async function histogram(family: string, model: string): Promise<Series> {
  const res = await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`);
  assert.equal(res.status, 200);
  const out: Series = { count: undefined, sum: undefined, le: new Map() };
  for (const line of (await res.text()).split('\n')) {
    if (!line.startsWith(family) || !line.includes(`model="${model}"`)) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (line.startsWith(`${family}_count{`)) out.count = value;
    else if (line.startsWith(`${family}_sum{`)) out.sum = value;
    else if (line.startsWith(`${family}_bucket{`)) out.le.set(/le="([^"]+)"/.exec(line)![1]!, value);
  }
  return out;
}

function curlStream(model: string, body: object): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'curl',
      [
        '-sS',
        '-N',
        '-X',
        'POST',
        '-H',
        'Content-Type: application/json',
        '--data-binary',
        JSON.stringify(body),
        `${server.url}/v2/models/${model}/generate_stream`,
      ],
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    );
  });
}

test('a decoupled model has both histograms at zero from load on; a non-decoupled one has neither', async () => {
  for (const family of [FIRST, INTER]) {
    const llm = await histogram(family, 'mock_llm');
    assert.equal(llm.count, 0, `${family} count of mock_llm`);
    assert.equal(llm.sum, 0);
    assert.equal(llm.le.get('+Inf'), 0);
  }
  const r = await infer(server.url, 'simple', [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ]);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  for (const family of [FIRST, INTER]) {
    const simple = await histogram(family, 'simple');
    assert.equal(simple.count, undefined, `${family} has no series for simple (not decoupled)`);
    assert.equal(simple.le.size, 0);
  }
});

test('a stream of 4 words: one first response after first_delay_ms, three gaps of delay_ms', async () => {
  const before = { first: await histogram(FIRST, 'mock_llm'), inter: await histogram(INTER, 'mock_llm') };
  const body = await curlStream('mock_llm', { text_input: 'a b c d', stream: true, parameters: { max_tokens: 4, delay_ms: 60, first_delay_ms: 250 } });
  assert.equal(body.split('\n\n').filter((e) => e.startsWith('data: ')).length, 4, body);
  const first = await histogram(FIRST, 'mock_llm');
  const inter = await histogram(INTER, 'mock_llm');
  assert.equal(first.count! - before.first.count!, 1, 'one first response per request');
  const firstMs = first.sum! - before.first.sum!;
  assert.ok(firstMs >= 250 && firstMs < 250 + SLACK_MS, `first response after ${firstMs} ms, the model waited 250`);
  assert.equal(first.le.get('100'), before.first.le.get('100'), 'nothing under 100 ms');
  assert.equal(first.le.get('+Inf'), first.count);
  // Four data responses, three gaps between them; the empty final response is no gap.
  assert.equal(inter.count! - before.inter.count!, 3, 'a gap per word after the first');
  const gapsMs = inter.sum! - before.inter.sum!;
  // The last word left at least 250 + 3 x 60 ms after admission, however late
  // a busy machine delivered the earlier ones (a late first word makes the
  // gap after it short, so no single gap has a floor).
  assert.ok(firstMs + gapsMs >= 250 + 3 * 60, `first response ${firstMs} ms + gaps ${gapsMs} ms, the model waited 250 + 3 x 60`);
  assert.ok(gapsMs < 3 * 60 + SLACK_MS, `gaps sum to ${gapsMs} ms, the model waited 3 x 60`);
  assert.equal(inter.le.get('+Inf'), inter.count);
});

test('a decoupled request answered in one response counts a first response and no gap', async () => {
  const before = { first: await histogram(FIRST, 'mock_llm'), inter: await histogram(INTER, 'mock_llm') };
  const body = await curlStream('mock_llm', { text_input: 'x y', stream: false, parameters: { max_tokens: 2, first_delay_ms: 120 } });
  assert.equal(body.split('\n\n').filter((e) => e.startsWith('data: ')).length, 1, body);
  const first = await histogram(FIRST, 'mock_llm');
  const inter = await histogram(INTER, 'mock_llm');
  assert.equal(first.count! - before.first.count!, 1);
  const firstMs = first.sum! - before.first.sum!;
  assert.ok(firstMs >= 120 && firstMs < 120 + SLACK_MS, `first response after ${firstMs} ms, the model waited 120`);
  assert.equal(inter.count, before.inter.count, 'one response: no inter-response gap');
});

test('a gRPC ModelStreamInfer stream of 3 words: one first response, two gaps', async () => {
  const before = { first: await histogram(FIRST, 'mock_llm'), inter: await histogram(INTER, 'mock_llm') };
  const call = (client.inference.ModelStreamInfer as () => grpc.ClientDuplexStream<object, { error_message: string }>)();
  const words = await new Promise<number>((resolve, reject) => {
    let n = 0;
    call.on('error', reject);
    call.on('data', (r: { error_message: string }) => {
      if (r.error_message !== '') return reject(new Error(r.error_message));
      if (++n === 3) resolve(n);
    });
    call.write({
      model_name: 'mock_llm',
      inputs: [
        { name: 'text_input', datatype: 'BYTES', shape: [1], contents: { bytes_contents: [Buffer.from('p q r')] } },
        { name: 'stream', datatype: 'BOOL', shape: [1], contents: { bool_contents: [true] } },
      ],
      parameters: { max_tokens: { int64_param: 3 }, delay_ms: { int64_param: 70 }, first_delay_ms: { int64_param: 150 } },
    });
  });
  call.end();
  assert.equal(words, 3);
  // Each response is counted before it is sent, so the third word's gap is in already.
  const first = await histogram(FIRST, 'mock_llm');
  const inter = await histogram(INTER, 'mock_llm');
  assert.equal(first.count! - before.first.count!, 1);
  const firstMs = first.sum! - before.first.sum!;
  assert.ok(firstMs >= 150 && firstMs < 150 + SLACK_MS, `first response after ${firstMs} ms, the model waited 150`);
  assert.equal(inter.count! - before.inter.count!, 2);
  const gapsMs = inter.sum! - before.inter.sum!;
  assert.ok(firstMs + gapsMs >= 150 + 2 * 70, `first response ${firstMs} ms + gaps ${gapsMs} ms, the model waited 150 + 2 x 70`);
  assert.ok(gapsMs < 2 * 70 + SLACK_MS, `gaps sum to ${gapsMs} ms, the model waited 2 x 70`);
});

test("nodetron's latency histograms (seconds, on by default) match the statistics extension's totals", async () => {
  const tensors = [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ];
  for (let i = 0; i < 20; i++) assert.equal((await infer(server.url, 'simple', tensors)).status, 200);
  const stats = (await (await fetch(`${server.url}/v2/models/simple/stats`)).json()) as {
    model_stats: { inference_stats: Record<string, { count: number; ns: number }> }[];
  };
  const s = stats.model_stats[0]!.inference_stats;
  const pairs: [string, string][] = [
    ['request', 'success'],
    ['queue', 'queue'],
    ['compute_input', 'compute_input'],
    ['compute_infer', 'compute_infer'],
    ['compute_output', 'compute_output'],
  ];
  for (const [family, stat] of pairs) {
    const h = await histogram(`nodetron_inference_${family}_duration_seconds`, 'simple');
    assert.ok(s[stat]!.count >= 20, `${stat} count ${s[stat]!.count}`);
    assert.equal(h.count, s[stat]!.count, `${family}: _count is the statistics' ${stat} count`);
    // Seconds summed as floats against integer nanoseconds: within a nanosecond per request.
    assert.ok(Math.abs(h.sum! * 1e9 - s[stat]!.ns) <= h.count!, `${family}: _sum ${h.sum} s vs ${s[stat]!.ns} ns`);
    assert.equal(h.le.get('+Inf'), h.count);
    const bounds = [...h.le.keys()];
    assert.equal(bounds[0], '0.0001', 'buckets from 0.1 ms');
    assert.equal(bounds[bounds.length - 2], '60', 'to 60 s');
    const counts = [...h.le.values()];
    assert.deepEqual(
      counts,
      [...counts].sort((a, b) => a - b),
      `${family}: buckets are cumulative`,
    );
  }
});

test("the seconds response histograms see the same responses as Triton's ms one", async () => {
  const ms = { first: await histogram(FIRST, 'mock_llm'), inter: await histogram(INTER, 'mock_llm') };
  const sec = {
    first: await histogram('nodetron_inference_first_response_duration_seconds', 'mock_llm'),
    inter: await histogram('nodetron_inference_inter_response_duration_seconds', 'mock_llm'),
  };
  assert.ok(ms.first.count! >= 3, 'the streams above were counted');
  assert.equal(sec.first.count, ms.first.count);
  assert.equal(sec.inter.count, ms.inter.count);
  assert.ok(Math.abs(sec.first.sum! * 1000 - ms.first.sum!) < 1e-6 * ms.first.count!, `${sec.first.sum} s vs ${ms.first.sum} ms`);
  assert.ok(Math.abs(sec.inter.sum! * 1000 - ms.inter.sum!) < 1e-6 * ms.inter.count!);
  assert.equal((await histogram('nodetron_inference_first_response_duration_seconds', 'simple')).count, undefined, 'not decoupled: no series');
});
