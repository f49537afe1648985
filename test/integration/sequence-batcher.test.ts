/**
 * The sequence batcher as Triton runs it, through the real server with real
 * Python models (fixtures/sequence_slot_models): the direct strategy keeps
 * each sequence at its slot's row and fills idle slots below the highest busy
 * one with not-ready rows (seq_rows answers with every row of its
 * execution); iterative_sequence gives a request without a correlation id
 * its own sequence; implicit state of TYPE_STRING (state_str, state_str_file);
 * the oldest strategy's preserve_ordering, over a gRPC stream, with a
 * decoupled model that answers the requests of a batch last first; and an
 * ONNX model (a copy of `simple`) running padded executions. Metrics
 * are on, so stop() also checks that the arena is back where it started
 * (the not-ready rows and their outputs freed).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { infer, type InferResult } from '../../src/client/kserve-http-client';
import { createClient, int32Bytes, int32Values, type GrpcTestClient } from './grpc-test-client';
import { MODEL_REPOSITORY, REPO_ROOT, startServer, type ServerProcess } from './server-process';

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures/sequence_slot_models');

let server: ServerProcess;
let client: GrpcTestClient;
let repo: string;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-seqslots-'));
  for (const m of fs.readdirSync(FIXTURES)) fs.cpSync(path.join(FIXTURES, m), path.join(repo, m), { recursive: true });
  // The ONNX `simple` (no control inputs) under direct sequence batching: 8 slots, waiting up to 0.5 s for 2 of them.
  const seq = path.join(repo, 'simple_seq');
  fs.cpSync(path.join(MODEL_REPOSITORY, 'simple'), seq, { recursive: true });
  const cfg = fs.readFileSync(path.join(seq, 'config.pbtxt'), 'utf8').replace('name: "simple"', 'name: "simple_seq"');
  fs.writeFileSync(
    path.join(seq, 'config.pbtxt'),
    `${cfg}
instance_group [ { kind: KIND_CPU count: 1 } ]
sequence_batching { max_sequence_idle_microseconds: 10000000 direct { max_queue_delay_microseconds: 500000 minimum_slot_utilization: 0.25 } }
`,
  );
  server = await startServer([
    `--model-repository=${repo}`,
    '--allow-grpc=true',
    '--grpc-port=0',
    '--grpc-address=127.0.0.1',
    '--allow-metrics=true',
    '--metrics-port=0',
    '--metrics-address=127.0.0.1',
  ]);
  client = createClient(server.grpcPort);
});

after(async () => {
  client.close();
  assert.equal(await server.stop(), 0);
  fs.rmSync(repo, { recursive: true, force: true });
});

/** One row of an execution as seq_rows reports it. */
interface Row {
  ready: number;
  start: number;
  end: number;
  corrid: number;
  input: number;
  correlationId: number;
  flags: number;
}

const PAD: Row = { ready: 0, start: 0, end: 0, corrid: 0, input: 0, correlationId: 0, flags: 0 };

function live(corrid: number, input: number, flags: { start?: boolean; end?: boolean } = {}): Row {
  const start = flags.start === true ? 1 : 0;
  const end = flags.end === true ? 1 : 0;
  return { ready: 1, start, end, corrid, input, correlationId: corrid, flags: start | (end << 1) };
}

async function rowsOf(model: string, value: number, parameters: Record<string, unknown>): Promise<{ rows: Row[]; row: number }> {
  const r = await infer(server.url, model, [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: [value] }], { parameters });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const outputs = r.json.outputs as { name: string; data: number[] }[];
  const flat = outputs.find((o) => o.name === 'ROWS')!.data;
  const rows: Row[] = [];
  for (let i = 0; i < flat.length; i += 7) {
    const [ready, start, end, corrid, input, correlationId, flags] = flat.slice(i, i + 7) as number[];
    rows.push({ ready: ready!, start: start!, end: end!, corrid: corrid!, input: input!, correlationId: correlationId!, flags: flags! });
  }
  return { rows, row: outputs.find((o) => o.name === 'ROW')!.data[0]! };
}

function step(id: number, value: number, flags: { start?: boolean; end?: boolean } = {}): Promise<{ rows: Row[]; row: number }> {
  const parameters: Record<string, unknown> = { sequence_id: id };
  if (flags.start === true) parameters.sequence_start = true;
  if (flags.end === true) parameters.sequence_end = true;
  return rowsOf('seq_rows', value, parameters);
}

test("direct: each sequence keeps its slot's row; idle slots below the highest busy one are not-ready rows with Triton's controls", async () => {
  // One at a time, A, B and C take slots 0, 1 and 2 (each waits out the 0.5 s delay alone).
  assert.deepEqual(await step(11, 1, { start: true }), { rows: [live(11, 1, { start: true })], row: 0 });
  assert.deepEqual(await step(12, 2, { start: true }), { rows: [PAD, live(12, 2, { start: true })], row: 1 });
  assert.deepEqual(await step(13, 3, { start: true }), { rows: [PAD, PAD, live(13, 3, { start: true })], row: 2 });
  // A and C together (two of four slots ready): B's idle slot between them is a not-ready row.
  const [a, c] = await Promise.all([step(11, 4), step(13, 5, { end: true })]);
  const both = [live(11, 4), PAD, live(13, 5, { end: true })];
  assert.deepEqual(a, { rows: both, row: 0 });
  assert.deepEqual(c, { rows: both, row: 2 });
  // C has ended: B's execution stops at B's slot, with idle A's slot not-ready.
  assert.deepEqual(await step(12, 6, { end: true }), { rows: [PAD, live(12, 6, { end: true })], row: 1 });
  assert.deepEqual(await step(11, 7, { end: true }), { rows: [live(11, 7, { end: true })], row: 0 });

  // Statistics: executions count every row they ran (as Triton's backends report the batch), inferences only requests.
  const body = (await (await fetch(`${server.url}/v2/models/seq_rows/stats`)).json()) as {
    model_stats: { inference_count: number; execution_count: number; batch_stats: { batch_size: number; compute_infer: { count: number } }[] }[];
  };
  const s = body.model_stats[0]!;
  assert.equal(s.inference_count, 7);
  assert.equal(s.execution_count, 6);
  assert.deepEqual(
    s.batch_stats.map((b) => [b.batch_size, b.compute_infer.count]),
    [
      [1, 2],
      [2, 2],
      [3, 2],
    ],
  );
});

async function simpleStep(id: number, base: number, flags: { start?: boolean; end?: boolean } = {}): Promise<void> {
  const parameters: Record<string, unknown> = { sequence_id: id };
  if (flags.start === true) parameters.sequence_start = true;
  if (flags.end === true) parameters.sequence_end = true;
  const in0 = Array.from({ length: 16 }, (_, i) => base + i);
  const in1 = Array.from({ length: 16 }, () => 3);
  const r = await infer(
    server.url,
    'simple_seq',
    [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: in0 },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: in1 },
    ],
    { parameters },
  );
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const out = new Map((r.json.outputs as { name: string; data: number[] }[]).map((o) => [o.name, o.data]));
  assert.deepEqual(
    out.get('OUTPUT0'),
    in0.map((v) => v + 3),
    `sequence ${id}`,
  );
  assert.deepEqual(
    out.get('OUTPUT1'),
    in0.map((v) => v - 3),
    `sequence ${id}`,
  );
}

test("an ONNX model runs padded direct executions: each sequence gets its own row's outputs", async () => {
  await simpleStep(21, 100, { start: true });
  await simpleStep(22, 200, { start: true });
  await simpleStep(23, 300, { start: true });
  await Promise.all([simpleStep(21, 400, { end: true }), simpleStep(23, 500, { end: true })]);
  await simpleStep(22, 600, { end: true });
  const body = (await (await fetch(`${server.url}/v2/models/simple_seq/stats`)).json()) as {
    model_stats: { inference_count: number; batch_stats: { batch_size: number; compute_infer: { count: number } }[] }[];
  };
  const s = body.model_stats[0]!;
  assert.equal(s.inference_count, 6);
  // Rows: [21], [pad, 22], [pad, pad, 23], [21, pad, 23], [pad, 22].
  assert.deepEqual(
    s.batch_stats.map((b) => [b.batch_size, b.compute_infer.count]),
    [
      [1, 1],
      [2, 2],
      [3, 2],
    ],
  );
});

test('iterative_sequence: a request without a correlation id gets its own sequence (ids from 1, START), ended once it ran', async () => {
  assert.deepEqual(await rowsOf('iterative_rows', 5, {}), { rows: [{ ...live(1, 5, { start: true }) }], row: 0 });
  assert.deepEqual(await rowsOf('iterative_rows', 6, {}), { rows: [{ ...live(2, 6, { start: true }) }], row: 0 }, 'slot 0 was free again');
  const r = await infer(server.url, 'iterative_rows', [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: [7] }], { parameters: { sequence_id: 1 } });
  assert.equal(r.status, 400);
  assert.equal(r.json.error, "inference request for sequence 1 to model 'iterative_rows' must specify the START flag on the first request of the sequence");
  // A client's own correlation id is kept.
  assert.deepEqual(await rowsOf('iterative_rows', 8, { sequence_id: 77, sequence_start: true }), { rows: [live(77, 8, { start: true })], row: 0 });
});

function textStep(model: string, id: number, text: string, flags: { start?: boolean; end?: boolean } = {}): Promise<InferResult> {
  const parameters: Record<string, unknown> = { sequence_id: id };
  if (flags.start === true) parameters.sequence_start = true;
  if (flags.end === true) parameters.sequence_end = true;
  return infer(server.url, model, [{ name: 'INPUT', datatype: 'BYTES', shape: [1, 1], data: [text] }], { parameters });
}

function textOf(r: InferResult): string {
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const outputs = r.json.outputs as { name: string; datatype: string; data: string[] }[];
  assert.deepEqual(
    outputs.map((o) => [o.name, o.datatype]),
    [['OUTPUT', 'BYTES']],
    'the state output stays hidden',
  );
  return outputs[0]!.data[0]!;
}

test("implicit state of TYPE_STRING: each step appends to the state; START resets it to the empty string or the file's string", async () => {
  for (const [model, initial] of [
    ['state_str', ''],
    ['state_str_file', '>>'],
  ] as const) {
    // Two sequences at once, each with its own state.
    const [a1, b1] = await Promise.all([textStep(model, 31, 'ab', { start: true }), textStep(model, 32, 'x', { start: true })]);
    assert.equal(textOf(a1), `${initial}ab`);
    assert.equal(textOf(b1), `${initial}x`);
    const [a2, b2] = await Promise.all([textStep(model, 31, 'cd'), textStep(model, 32, 'é', { end: true })]);
    assert.equal(textOf(a2), `${initial}abcd`);
    assert.equal(textOf(b2), `${initial}xé`);
    assert.equal(textOf(await textStep(model, 31, '', { end: true })), `${initial}abcd`);
    assert.equal(textOf(await textStep(model, 31, 'new', { start: true, end: true })), `${initial}new`);
  }
});

interface StreamResponse {
  error_message: string;
  infer_response: { outputs: { name: string }[]; raw_output_contents: Buffer[] };
}

/** Sends the requests on one ModelStreamInfer, half-closes, and collects the responses in the order they came. */
function stream(requests: object[]): Promise<StreamResponse[]> {
  return new Promise((resolve, reject) => {
    const call = (client.inference.ModelStreamInfer as () => grpc.ClientDuplexStream<object, StreamResponse>)();
    const got: StreamResponse[] = [];
    call.on('data', (r: StreamResponse) => got.push(r));
    call.on('error', reject);
    call.on('end', () => resolve(got));
    for (const r of requests) call.write(r);
    call.end();
  });
}

function seqRequest(model: string, id: number, value: number): object {
  return {
    model_name: model,
    inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1] }],
    raw_input_contents: [int32Bytes([value])],
    parameters: { sequence_id: { int64_param: id }, sequence_start: { bool_param: true }, sequence_end: { bool_param: true } },
  };
}

test('oldest preserve_ordering: a batch answered last first by the model still reaches the client in batch order', async () => {
  const order = async (model: string): Promise<number[]> => {
    const got = await stream([seqRequest(model, 41, 1), seqRequest(model, 42, 2)]);
    return got.map((r) => {
      assert.equal(r.error_message, '');
      return int32Values(r.infer_response.raw_output_contents[0]!)[0]!;
    });
  };
  // Without it the second request's response, sent first, arrives first: the model does reorder.
  assert.deepEqual(await order('oldest_unordered'), [2, 1]);
  assert.deepEqual(await order('oldest_ordered'), [1, 2]);
});
