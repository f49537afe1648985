/**
 * Overload through the real server (one start, a temporary repository with
 * the gated Python model of fixtures/scheduling_models and an ensemble over
 * it): --max-queued-requests refuses the request over the bound at once,
 * HTTP 429 with Retry-After and gRPC RESOURCE_EXHAUSTED with a retry-after
 * trailer, both with Triton's "Exceeds maximum queue size"; the requests it
 * holds all finish. An ensemble's max_inflight_requests holds a step back
 * (it waits, nothing is refused). The gate holds executions while a test
 * fills the queue; the metrics pending-request gauge says what the server
 * has admitted.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { infer, type InferResult } from '../../src/client/kserve-http-client';
import { createClient, int32Bytes, type GrpcTestClient } from './grpc-test-client';
import { REPO_ROOT, pendingRequests, startServer, untilPending, type ServerProcess } from './server-process';

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures/scheduling_models');

let server: ServerProcess;
let client: GrpcTestClient;
let repo: string;
let gate: string;

const ENSEMBLE = `platform: "ensemble"
max_batch_size: 1
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "ORDER" data_type: TYPE_INT32 dims: [ 1 ] } ]
ensemble_scheduling {
  max_inflight_requests: 1
  step [ { model_name: "gated" model_version: -1 input_map { key: "IN" value: "IN" } output_map { key: "ORDER" value: "ORDER" } } ]
}
`;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-overload-'));
  fs.cpSync(path.join(FIXTURES, 'gated'), path.join(repo, 'gated'), { recursive: true });
  fs.mkdirSync(path.join(repo, 'gated_pipeline', '1'), { recursive: true });
  fs.writeFileSync(path.join(repo, 'gated_pipeline', 'config.pbtxt'), ENSEMBLE);
  gate = path.join(repo, 'gated', 'closed');
  server = await startServer([`--model-repository=${repo}`, '--max-queued-requests=3', '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1']);
  client = createClient(server.grpcPort);
});

after(async () => {
  fs.rmSync(gate, { force: true });
  client.close();
  assert.equal(await server.stop(), 0);
  fs.rmSync(repo, { recursive: true, force: true });
});

const send = (model = 'gated', id = ''): Promise<InferResult> =>
  infer(server.url, model, [{ name: 'IN', datatype: 'INT32', shape: [1, 1], data: [0] }], id === '' ? {} : { id });

const FULL =
  'Exceeds maximum queue size: the server holds 3 inference requests, the most --max-queued-requests=3 allows; ' +
  'retry after 1 s, or raise --max-queued-requests';

test('over --max-queued-requests: HTTP 429 + Retry-After and gRPC RESOURCE_EXHAUSTED + retry-after, at once; the held requests finish', async () => {
  fs.writeFileSync(gate, '');
  try {
    const held = [send()];
    await untilPending(server, 'gated', 1); // running, held by the gate
    held.push(send(), send());
    await untilPending(server, 'gated', 3); // two more queued: the server holds 3

    const over = await send('gated', 'h4');
    assert.equal(over.status, 429);
    assert.equal(over.headers.get('retry-after'), '1');
    assert.equal(over.json.error, `[request id: h4] ${FULL}`);

    const err = await client
      .call('ModelInfer', {
        model_name: 'gated',
        id: 'g4',
        inputs: [{ name: 'IN', datatype: 'INT32', shape: [1, 1] }],
        raw_input_contents: [int32Bytes([0])],
      })
      .then(
        () => undefined,
        (e: grpc.ServiceError) => e,
      );
    assert.ok(err !== undefined, 'the gRPC call over the bound fails');
    assert.equal(err.code, 8, 'RESOURCE_EXHAUSTED');
    assert.equal(err.details, `[request id: g4] ${FULL}`);
    assert.deepEqual(err.metadata.get('retry-after'), ['1']);

    assert.equal(await pendingRequests(server, 'gated'), 3, 'the refused requests never reached the model');
    fs.rmSync(gate);
    for (const r of await Promise.all(held)) assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal((await send()).status, 200, 'room again once they finished');
  } finally {
    fs.rmSync(gate, { force: true });
  }
});

test("ensemble max_inflight_requests: 1 holds the second request's step back (backpressure, not an error), then runs it", async () => {
  fs.writeFileSync(gate, '');
  try {
    const both = [send('gated_pipeline'), send('gated_pipeline')];
    await untilPending(server, 'gated_pipeline', 2); // both ensemble requests admitted
    // A step is sent as soon as its ensemble request is admitted, unless its step is full.
    assert.equal(await pendingRequests(server, 'gated'), 1, 'only one step request reached the composing model');
    fs.rmSync(gate);
    for (const r of await Promise.all(both)) assert.equal(r.status, 200, JSON.stringify(r.json));
  } finally {
    fs.rmSync(gate, { force: true });
  }
});
