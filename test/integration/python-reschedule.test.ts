/**
 * pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE through the real server
 * and real Python stubs, modelled on Triton's qa request_rescheduling models.
 * With `sequence_batching { iterative_sequence: true }` a rescheduled request
 * runs again as its sequence's next step (same correlation id, no START) and
 * is answered when the model finally releases it: non-decoupled after N
 * executions, decoupled with one response per execution, or through the
 * first execution's response sender from a thread of the model. Statistics
 * count every execution and the request once. Without iterative_sequence the
 * request is answered at once with Triton's refusal text and what to do; a
 * response returned for a rescheduled request is python_backend's batch
 * error; the instance keeps serving.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { infer } from '../../src/client/kserve-http-client';
import { createClient, int32Bytes, int32Values } from './grpc-test-client';
import type { GrpcTestClient } from './grpc-test-client';
import { REPO_ROOT, startServer } from './server-process';
import type { ServerProcess } from './server-process';

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures/python_models');
const MODELS = ['reschedule', 'reschedule_decoupled', 'iterative_steps', 'iterative_generate', 'iterative_once'];
const REFUSED = 'Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not configured to handle such a flag.';

let server: ServerProcess;
let client: GrpcTestClient;
let repo: string;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-reschedule-'));
  for (const m of MODELS) fs.cpSync(path.join(FIXTURES, m), path.join(repo, m), { recursive: true });
  server = await startServer([`--model-repository=${repo}`, '--allow-grpc=true', '--grpc-port=0']);
  client = createClient(server.grpcPort);
});

after(async () => {
  client?.close();
  assert.equal(await server.stop(), 0);
  fs.rmSync(repo, { recursive: true, force: true });
});

const run = (c: number) => infer(server.url, 'reschedule', [{ name: 'CASE', datatype: 'INT32', shape: [1], data: [c] }]);
const steps = (n: number, sequenceId?: number) =>
  infer(
    server.url,
    'iterative_steps',
    [{ name: 'STEPS', datatype: 'INT32', shape: [1], data: [n] }],
    sequenceId === undefined ? {} : { parameters: { sequence_id: sequenceId, sequence_start: true } },
  );

type StreamReply = {
  error_message: string;
  infer_response?: { outputs: { name: string }[]; raw_output_contents: Buffer[]; parameters?: Record<string, { bool_param?: boolean }> };
};

/** One request on its own ModelStreamInfer stream: every reply until the server ends the stream. */
async function stream(model: string, inputs: { name: string; values: number[] }[]): Promise<StreamReply[]> {
  const s = client.inference.ModelStreamInfer() as grpc.ClientDuplexStream<object, StreamReply>;
  const replies: StreamReply[] = [];
  const ended = new Promise<void>((resolve, reject) => {
    s.on('data', (r: StreamReply) => {
      replies.push(r);
      if (r.error_message !== '' || r.infer_response?.parameters?.['triton_final_response']?.bool_param === true) s.end();
    });
    s.on('end', resolve);
    s.on('error', reject);
  });
  s.write({
    model_name: model,
    // The stream ends at the final response, also an empty one (Triton sends that only when asked).
    parameters: { triton_enable_empty_final_response: { bool_param: true } },
    inputs: inputs.map((i) => ({ name: i.name, datatype: 'INT32', shape: [1] })),
    raw_input_contents: inputs.map((i) => int32Bytes(i.values)),
  });
  await ended;
  return replies;
}

/** The OUT values of the replies that carry one (the final one may be empty). */
const outs = (replies: StreamReply[]): number[] =>
  replies.flatMap((r) => (r.infer_response?.raw_output_contents.length ? int32Values(r.infer_response.raw_output_contents[0]!) : []));

interface Stats {
  inference_count: number;
  execution_count: number;
  inference_stats: Record<string, { count: number; ns: number }>;
}

async function stats(model: string): Promise<Stats> {
  const res = await fetch(`${server.url}/v2/models/${model}/stats`);
  assert.equal(res.status, 200);
  return ((await res.json()) as { model_stats: Stats[] }).model_stats[0]!;
}

test('iterative_sequence, non-decoupled: a request rescheduled until its 3rd execution is answered then, with its correlation id and no START on the re-runs', async () => {
  const r = await steps(3);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const [count, firstFlags, lastFlags, corrid] = (r.json.outputs as { data: number[] }[])[0]!.data;
  assert.equal(count, 3);
  assert.equal(firstFlags, 1, 'the first execution starts the sequence');
  assert.equal(lastFlags, 0, 'a rescheduled execution has neither START nor END');
  assert.ok(Number(corrid) > 0, `an iterative request is given a correlation id, got ${corrid}`);
});

test('iterative_sequence, non-decoupled: concurrent sequences each get their own answer; a client sequence id is kept', async () => {
  const rs = await Promise.all([steps(2), steps(4), steps(1), steps(3, 777)]);
  for (const r of rs) assert.equal(r.status, 200, JSON.stringify(r.json));
  const data = rs.map((r) => (r.json.outputs as { data: number[] }[])[0]!.data);
  assert.deepEqual(
    data.map((d) => d[0]),
    [2, 4, 1, 3],
  );
  assert.deepEqual(
    data.map((d) => d[2]),
    [0, 0, 1, 0],
  );
  assert.equal(data[3]![3], 777);
  assert.equal(new Set(data.map((d) => d[3])).size, 4, 'each request is a sequence of its own');
});

test('statistics: every execution counts, the request succeeds once', async () => {
  const before = await stats('iterative_steps');
  const r = await steps(5);
  assert.equal(r.status, 200);
  const now = await stats('iterative_steps');
  assert.equal(now.execution_count - before.execution_count, 5);
  assert.equal(now.inference_count - before.inference_count, 5);
  assert.equal(now.inference_stats['success']!.count - before.inference_stats['success']!.count, 1);
  assert.equal(now.inference_stats['fail']?.count ?? 0, before.inference_stats['fail']?.count ?? 0);
});

test('iterative_sequence, decoupled: one response per execution, rescheduled between them, then FINAL', async () => {
  const [a, b] = await Promise.all([stream('iterative_generate', [{ name: 'IN', values: [3] }]), stream('iterative_generate', [{ name: 'IN', values: [2] }])]);
  for (const replies of [a, b])
    assert.deepEqual(
      replies.map((r) => r.error_message),
      replies.map(() => ''),
    );
  assert.deepEqual(outs(a!), [2, 1, 0]);
  assert.deepEqual(outs(b!), [1, 0]);
});

test("iterative_sequence, decoupled: responses a thread sends through the first execution's sender reach the client; FINAL before the reschedule ends the request", async () => {
  const threaded = await stream('iterative_once', [
    { name: 'CASE', values: [1] },
    { name: 'IN', values: [3] },
  ]);
  assert.deepEqual(
    threaded.map((r) => r.error_message),
    threaded.map(() => ''),
  );
  assert.deepEqual(outs(threaded), [3, 2, 1, 0]);
  const finalFirst = await stream('iterative_once', [
    { name: 'CASE', values: [0] },
    { name: 'IN', values: [9] },
  ]);
  assert.deepEqual(
    finalFirst.map((r) => r.error_message),
    finalFirst.map(() => ''),
  );
  assert.deepEqual(outs(finalFirst), [9]);
});

test("without iterative_sequence a rescheduled request (None returned for it) is answered with Triton's text and what to do", async () => {
  const r = await run(0);
  assert.equal(r.status, 501, JSON.stringify(r.json));
  const msg = String(r.json.error);
  assert.ok(msg.startsWith(REFUSED), msg);
  assert.match(msg, /add 'sequence_batching \{ iterative_sequence: true \}' to the model's config, or answer the request in the execution that has it\.$/);
});

test("a response returned for a rescheduled request is python_backend's batch error", async () => {
  const r = await run(1);
  assert.equal(r.status, 500);
  assert.equal(
    r.json.error,
    "Failed to process the request(s) for model 'reschedule_0', message: Expected a None object in the execute function return list for reschduled request, found type '<class '_nt_response.InferenceResponse'>'.",
  );
});

test('the instance keeps serving requests it is not asked to reschedule, also next to rescheduled ones', async () => {
  const rs = await Promise.all([2, 0, 2, 0, 2].map(run));
  assert.deepEqual(
    rs.map((r) => r.status),
    [200, 501, 200, 501, 200],
  );
  assert.deepEqual((rs[0]!.json.outputs as { data: number[] }[])[0]!.data, [2]);
});

test('decoupled without iterative_sequence: the response sent before rescheduling arrives, then the request ends with the refusal', async () => {
  const replies = await stream('reschedule_decoupled', [{ name: 'IN', values: [7] }]);
  assert.equal(replies.length, 2, JSON.stringify(replies.map((r) => r.error_message)));
  assert.equal(replies[0]!.error_message, '');
  assert.deepEqual(int32Values(replies[0]!.infer_response!.raw_output_contents[0]!), [7]);
  assert.ok(replies[1]!.error_message.startsWith(REFUSED), replies[1]!.error_message);
});
