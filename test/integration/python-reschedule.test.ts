/**
 * pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE through the real server
 * and real Python stubs. nodetron cannot take a request back into its
 * scheduler yet (iterative sequence batching is not implemented), so a
 * rescheduled request is answered at once with Triton's text for a model
 * that cannot be rescheduled ("Request is released with
 * TRITONSERVER_REQUEST_RELEASE_RESCHEDULE ...") and what to do, never left
 * waiting; a response returned for a rescheduled request is python_backend's
 * batch error; the instance keeps serving.
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
const REFUSED = 'Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not configured to handle such a flag.';

let server: ServerProcess;
let client: GrpcTestClient;
let repo: string;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-reschedule-'));
  for (const m of ['reschedule', 'reschedule_decoupled']) fs.cpSync(path.join(FIXTURES, m), path.join(repo, m), { recursive: true });
  server = await startServer([`--model-repository=${repo}`, '--allow-grpc=true', '--grpc-port=0']);
  client = createClient(server.grpcPort);
});

after(async () => {
  client?.close();
  assert.equal(await server.stop(), 0);
  fs.rmSync(repo, { recursive: true, force: true });
});

const run = (c: number) => infer(server.url, 'reschedule', [{ name: 'CASE', datatype: 'INT32', shape: [1], data: [c] }]);

test('a rescheduled request (None returned for it) is answered with Triton\'s text and what to do', async () => {
  const r = await run(0);
  assert.equal(r.status, 501, JSON.stringify(r.json));
  const msg = String(r.json.error);
  assert.ok(msg.startsWith(REFUSED), msg);
  assert.match(msg, /nodetron does not reschedule requests yet .*answer the request in the execution that has it\.$/);
});

test('a response returned for a rescheduled request is python_backend\'s batch error', async () => {
  const r = await run(1);
  assert.equal(r.status, 500);
  assert.equal(r.json.error,
    "Failed to process the request(s) for model 'reschedule_0', message: Expected a None object in the execute function return list for reschduled request, found type '<class '_nt_response.InferenceResponse'>'.");
});

test('the instance keeps serving requests it is not asked to reschedule, also next to rescheduled ones', async () => {
  const rs = await Promise.all([2, 0, 2, 0, 2].map(run));
  assert.deepEqual(rs.map((r) => r.status), [200, 501, 200, 501, 200]);
  assert.deepEqual((rs[0]!.json.outputs as { data: number[] }[])[0]!.data, [2]);
});

type StreamReply = { error_message: string; infer_response?: { outputs: { name: string }[]; raw_output_contents: Buffer[] } };

test('decoupled: the response sent before rescheduling arrives, then the request ends with the error', async () => {
  const s = client.inference.ModelStreamInfer() as grpc.ClientDuplexStream<object, StreamReply>;
  const replies: StreamReply[] = [];
  const ended = new Promise<void>((resolve, reject) => {
    s.on('data', (r: StreamReply) => replies.push(r));
    s.on('end', resolve);
    s.on('error', reject);
  });
  s.write({ model_name: 'reschedule_decoupled', inputs: [{ name: 'IN', datatype: 'INT32', shape: [1] }], raw_input_contents: [int32Bytes([7])] });
  s.end();
  await ended;
  assert.equal(replies.length, 2, JSON.stringify(replies.map((r) => r.error_message)));
  assert.equal(replies[0]!.error_message, '');
  assert.deepEqual(int32Values(replies[0]!.infer_response!.raw_output_contents[0]!), [7]);
  assert.ok(replies[1]!.error_message.startsWith(REFUSED), replies[1]!.error_message);
});
