/**
 * The gRPC side of the input hardening, through the real server and a real
 * grpc-js client: reserved `triton_` parameter keys, duplicate output
 * names, model names that try to leave the repository in every rpc that
 * takes one (ModelStreamInfer keeps its stream open after one), a config
 * override nested past Triton's JSON limit, and shared-memory keys that try
 * to leave /dev/shm; each followed by an inference that must still be
 * answered right.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { createClient, int32Bytes, int32Values } from './grpc-test-client';
import type { GrpcTestClient } from './grpc-test-client';
import { MODEL_REPOSITORY, startServer } from './server-process';
import type { ServerProcess } from './server-process';

let server: ServerProcess;
let client: GrpcTestClient;
before(async () => {
  server = await startServer([
    `--model-repository=${MODEL_REPOSITORY}`,
    '--allow-grpc=true',
    '--grpc-port=0',
    '--grpc-address=127.0.0.1',
    '--model-control-mode=explicit',
    '--load-model=simple',
    '--allow-client-shm=true',
  ]);
  client = createClient(server.grpcPort);
});
after(async () => {
  client?.close();
  assert.equal(await server.stop(), 0, server.output().slice(-3000));
});

const in0 = Array.from({ length: 16 }, (_, i) => i);
const in1 = Array.from({ length: 16 }, () => 3);

function simpleRequest(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model_name: 'simple',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
    ],
    raw_input_contents: [int32Bytes(in0), int32Bytes(in1)],
    ...extra,
  };
}

interface InferReply {
  raw_output_contents: Buffer[];
}

async function assertServes(after: string): Promise<void> {
  const r = await client.call<InferReply>('ModelInfer', simpleRequest());
  assert.deepEqual(
    int32Values(r.raw_output_contents[0]),
    in0.map((v) => v + 3),
    `a good inference after ${after}`,
  );
}

async function rejects(p: Promise<unknown>, code: grpc.status, details: string, what: string): Promise<void> {
  await assert.rejects(p, (err: grpc.ServiceError) => {
    assert.deepEqual([err.code, err.details], [code, details], what);
    return true;
  });
}

test("reserved triton_ parameter keys and duplicate output names are refused with Triton's texts", async () => {
  const reserved =
    "parameter keys starting with 'triton_' are reserved for Triton usage. Only the following keys starting with 'triton_' are allowed: triton_enable_empty_final_response";
  const cases: [request: Record<string, unknown>, details: string][] = [
    [simpleRequest({ parameters: { triton_x: { bool_param: true } } }), reserved],
    [simpleRequest({ parameters: { triton_enable_empty_final_responses: { bool_param: true } } }), reserved],
    [
      simpleRequest({ id: 'g1', outputs: [{ name: 'OUTPUT1' }, { name: 'OUTPUT0' }, { name: 'OUTPUT1' }] }),
      "[request id: g1] output 'OUTPUT1' already exists in request",
    ],
  ];
  for (const [request, details] of cases) {
    await rejects(client.call('ModelInfer', request), grpc.status.INVALID_ARGUMENT, details, details);
    await assertServes(details);
  }
  // The one allowed triton_ key is accepted on ModelInfer.
  await client.call('ModelInfer', simpleRequest({ parameters: { triton_enable_empty_final_response: { bool_param: true } } }));
});

test('model names that try to leave the repository are refused by every rpc', async () => {
  for (const name of ['..', '.', '/etc', '../../etc', 'a\\b', 'simple\0']) {
    const details = `invalid model name '${name}', model name must not contain path traversal characters`;
    const calls: [string, Promise<unknown>][] = [
      ['ModelInfer', client.call('ModelInfer', simpleRequest({ model_name: name }))],
      ['ModelInfer with a version', client.call('ModelInfer', simpleRequest({ model_name: name, model_version: '1' }))],
      ['ModelReady', client.call('ModelReady', { name })],
      ['ModelMetadata', client.call('ModelMetadata', { name })],
      ['ModelConfig', client.call('ModelConfig', { name })],
      ['ModelStatistics', client.call('ModelStatistics', { name })],
      ['TraceSetting', client.call('TraceSetting', { model_name: name })],
      ['RepositoryModelLoad', client.call('RepositoryModelLoad', { model_name: name })],
      ['RepositoryModelUnload', client.call('RepositoryModelUnload', { model_name: name })],
    ];
    for (const [rpc, call] of calls) await rejects(call, grpc.status.INVALID_ARGUMENT, details, `${rpc} of ${JSON.stringify(name)}`);
  }
  await rejects(
    client.call('ModelConfig', { name: 'no_such_model' }),
    grpc.status.NOT_FOUND,
    "Request for unknown model: 'no_such_model' is not found",
    'an unknown name',
  );
  await assertServes('path-traversal model names');
});

test('ModelStreamInfer answers a refused model name on the stream and serves the next request', async () => {
  const stream = client.inference.ModelStreamInfer() as grpc.ClientDuplexStream<
    object,
    { error_message: string; infer_response?: { id: string; raw_output_contents: Buffer[] } }
  >;
  const replies: { error_message: string; infer_response?: { id: string; raw_output_contents: Buffer[] } }[] = [];
  const ended = new Promise<void>((resolve, reject) => {
    stream.on('data', (r: (typeof replies)[number]) => replies.push(r));
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  stream.write(simpleRequest({ id: 'bad', model_name: '../simple' }));
  stream.write(simpleRequest({ id: 'good' }));
  stream.end();
  await ended;
  assert.deepEqual(
    replies.map((r) => [r.infer_response?.id, r.error_message]),
    [
      ['bad', "invalid model name '../simple', model name must not contain path traversal characters"],
      ['good', ''],
    ],
  );
  assert.deepEqual(
    int32Values(replies[1].infer_response!.raw_output_contents[0]),
    in0.map((v) => v + 3),
  );
});

test('a config override nested past 100 levels and shared-memory keys that leave /dev/shm are refused', async () => {
  const deep = '['.repeat(200_000) + '"v"' + ']'.repeat(200_000);
  await rejects(
    client.call('RepositoryModelLoad', {
      model_name: 'simple',
      parameters: { config: { string_param: `{"name":"simple","parameters":{"x":{"string_value":${deep}}}}` } },
    }),
    grpc.status.INTERNAL,
    "failed to load 'simple', failed to poll from model repository: Invalid config override: JSON nesting depth exceeds maximum allowed limit (100)",
    'deep config override',
  );
  await assertServes('a deep config override');
  const why = ": a key names one object in /dev/shm, so after its leading '/' it must not contain '/', be '.' or '..', or hold a NUL byte";
  for (const key of ['/../../etc/hostname', '/a/b', '/..']) {
    await rejects(
      client.call('SystemSharedMemoryRegister', { name: 'r', key, offset: 0, byte_size: 4 }),
      grpc.status.INVALID_ARGUMENT,
      `cannot register shared memory region 'r' - invalid shm key '${key}'${why}`,
      key,
    );
  }
  assert.deepEqual(await client.call('SystemSharedMemoryStatus', {}), { regions: {} });
  await assertServes('refused shared-memory keys');
});
