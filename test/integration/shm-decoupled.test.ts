/**
 * One server with gRPC and `--allow-client-shm=true`: a decoupled Python
 * model (repeat_py) streamed over ModelStreamInfer, and client system shared
 * memory end to end over HTTP and gRPC (a real /dev/shm file made here,
 * registered, inputs read from it and outputs written into it, status,
 * unregister and Triton's error texts). The default (shm refused) is checked
 * in grpc.test.ts.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { createClient, int32Bytes, int32Values } from './grpc-test-client';
import type { GrpcTestClient } from './grpc-test-client';
import { MODEL_REPOSITORY, REPO_ROOT, startServer } from './server-process';
import type { ServerProcess } from './server-process';

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures/python_models');
const SHM_NAME = `nodetron_test_${process.pid}`;
const SHM_FILE = `/dev/shm/${SHM_NAME}`;
const KEY = `/${SHM_NAME}`;

let server: ServerProcess;
let client: GrpcTestClient;
let repo: string;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-shm-'));
  fs.cpSync(path.join(MODEL_REPOSITORY, 'simple'), path.join(repo, 'simple'), { recursive: true });
  fs.cpSync(path.join(FIXTURES, 'repeat_py'), path.join(repo, 'repeat_py'), { recursive: true });
  fs.writeFileSync(SHM_FILE, Buffer.alloc(512));
  server = await startServer([`--model-repository=${repo}`, '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1', '--allow-client-shm=true']);
  client = createClient(server.grpcPort);
});

after(async () => {
  client?.close();
  assert.equal(await server.stop(), 0);
  fs.rmSync(SHM_FILE, { force: true });
  fs.rmSync(repo, { recursive: true, force: true });
});

async function rejects(p: Promise<unknown>, code: grpc.status, details: string): Promise<void> {
  await assert.rejects(p, (err: grpc.ServiceError) => {
    assert.equal(err.code, code, `status ${err.code} (${err.details})`);
    assert.equal(err.details, details);
    return true;
  });
}

interface StreamResponse {
  error_message: string;
  infer_response: {
    outputs: { name: string }[];
    raw_output_contents: Buffer[];
    parameters: Record<string, { bool_param?: boolean }>;
  };
}

/** Sends the requests, half-closes, and collects every response until the server ends the stream. */
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

function repeatRequest(values: number[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model_name: 'repeat_py',
    inputs: [{ name: 'IN', datatype: 'INT32', shape: [values.length] }],
    raw_input_contents: [int32Bytes(values)],
    ...extra,
  };
}

test('decoupled repeat_py over ModelStreamInfer: every response in order, then the stream completes', async () => {
  const plain = await stream([repeatRequest([4, 5, 6])]);
  assert.equal(plain.length, 3, 'the flags-only final is not sent unless asked for');
  plain.forEach((r, i) => {
    assert.equal(r.error_message, '');
    const outs = r.infer_response.outputs.map((o) => o.name);
    assert.deepEqual(int32Values(r.infer_response.raw_output_contents[outs.indexOf('OUT')]), [[4, 5, 6][i]]);
    assert.deepEqual(int32Values(r.infer_response.raw_output_contents[outs.indexOf('IDX')]), [i]);
    assert.equal(r.infer_response.parameters.triton_final_response?.bool_param, false);
  });

  const flagged = await stream([repeatRequest([7, 8], { parameters: { triton_enable_empty_final_response: { bool_param: true } } })]);
  assert.equal(flagged.length, 3);
  assert.deepEqual(
    flagged.map((r) => r.infer_response.parameters.triton_final_response?.bool_param),
    [false, false, true],
    'triton_final_response is false on all but the last',
  );
  assert.deepEqual(flagged[2].infer_response.outputs, [], 'the final response carries no outputs');
  assert.deepEqual(int32Values(flagged[1].infer_response.raw_output_contents[0]), [8]);
});

test('ModelInfer on a decoupled model answers UNIMPLEMENTED', async () => {
  await rejects(
    client.call('ModelInfer', repeatRequest([1])),
    grpc.status.UNIMPLEMENTED,
    "ModelInfer RPC doesn't support models with decoupled transaction policy",
  );
});

// The file: INPUT0 at 0, INPUT1 at 64 (region "in" = bytes 0..127); OUTPUT0
// at 0 and OUTPUT1 at 64 of region "out" = bytes 128..255 of the file.
const in0 = Array.from({ length: 16 }, (_, i) => i * 3);
const in1 = Array.from({ length: 16 }, (_, i) => 100 - i);
const sum = in0.map((v, i) => v + in1[i]);
const diff = in0.map((v, i) => v - in1[i]);

function fillInputs(): void {
  const fd = fs.openSync(SHM_FILE, 'r+');
  fs.writeSync(fd, Buffer.concat([int32Bytes(in0), int32Bytes(in1), Buffer.alloc(128)]), 0, 256, 0);
  fs.closeSync(fd);
}

function readOutputs(): { out0: number[]; out1: number[] } {
  const b = fs.readFileSync(SHM_FILE);
  return { out0: int32Values(b.subarray(128, 192)), out1: int32Values(b.subarray(192, 256)) };
}

async function http(method: string, p: string, body?: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(server.url + p, { method, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, text: await res.text() };
}

const shmParams = (region: string, offset: number, size: number) => ({
  shared_memory_region: region,
  shared_memory_offset: offset,
  shared_memory_byte_size: size,
});

test('system shared memory over HTTP: register, status, infer in and out of the region, errors, unregister', async () => {
  fillInputs();
  assert.equal((await http('POST', '/v2/systemsharedmemory/region/in/register', { key: KEY, offset: 0, byte_size: 128 })).status, 200);
  assert.equal((await http('POST', '/v2/systemsharedmemory/region/out/register', { key: KEY, offset: 128, byte_size: 128 })).status, 200);
  assert.deepEqual(JSON.parse((await http('GET', '/v2/systemsharedmemory/status')).text), [
    { name: 'in', key: KEY, offset: 0, byte_size: 128 },
    { name: 'out', key: KEY, offset: 128, byte_size: 128 },
  ]);
  assert.deepEqual(JSON.parse((await http('GET', '/v2/systemsharedmemory/region/out/status')).text), [{ name: 'out', key: KEY, offset: 128, byte_size: 128 }]);

  const request = (outParams: object) => ({
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: shmParams('in', 0, 64) },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: shmParams('in', 64, 64) },
    ],
    outputs: [
      { name: 'OUTPUT0', parameters: shmParams('out', 0, 64) },
      { name: 'OUTPUT1', parameters: outParams },
    ],
  });
  const r = await http('POST', '/v2/models/simple/infer', request({ ...shmParams('out', 64, 64), binary_data: false }));
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(JSON.parse(r.text).outputs, [
    { name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16] },
    { name: 'OUTPUT1', datatype: 'INT32', shape: [1, 16] },
  ]);
  assert.deepEqual(readOutputs(), { out0: sum, out1: diff });

  // A JSON output next to an shm one.
  const mixed = await http('POST', '/v2/models/simple/infer', request({}));
  assert.equal(mixed.status, 200, mixed.text);
  assert.deepEqual(JSON.parse(mixed.text).outputs[1].data, diff);

  const errors: [object, number, string][] = [
    [request(shmParams('nope', 0, 64)), 404, "Unable to find shared memory region: 'nope'"],
    [request(shmParams('out', 128, 64)), 400, "Invalid offset for shared memory region: 'out'"],
    [request(shmParams('out', 96, 64)), 400, "Invalid offset + byte size for shared memory region: 'out'"],
    [
      request(shmParams('out', 64, 32)),
      500,
      "shared memory size specified with the request for output 'OUTPUT1' (32 bytes) should be at least 64 bytes to hold the results",
    ],
  ];
  for (const [body, status, error] of errors) {
    const e = await http('POST', '/v2/models/simple/infer', body);
    assert.deepEqual({ status: e.status, body: JSON.parse(e.text) }, { status, body: { error } });
  }

  const registerErrors: [string, object | undefined, number, string][] = [
    ['/v2/systemsharedmemory/region/in/register', { key: KEY, byte_size: 8 }, 400, "shared memory region 'in' already in manager"],
    ['/v2/systemsharedmemory/region/x/register', { byte_size: 8 }, 400, "Shared memory register request has no 'key' field"],
    ['/v2/systemsharedmemory/region/x/register', { key: KEY }, 400, "Shared memory register request has no 'byte_size' field"],
    [
      '/v2/systemsharedmemory/region/x/register',
      { key: '/nodetron_no_such_key', byte_size: 8 },
      500,
      "Unable to open shared memory region: '/nodetron_no_such_key'",
    ],
    ['/v2/systemsharedmemory/region/x/register', { key: KEY, offset: 500, byte_size: 64 }, 400, "failed to register shared memory region 'x': invalid args"],
    ['/v2/systemsharedmemory/register', { key: KEY, byte_size: 8 }, 400, "'region name' is necessary to register system shared memory region"],
    [
      '/v2/cudasharedmemory/region/c/register',
      { raw_handle: { b64: '' }, device_id: 0, byte_size: 8 },
      400,
      "failed to register CUDA shared memory region: 'c', GPUs not supported",
    ],
  ];
  for (const [p, body, status, error] of registerErrors) {
    const e = await http('POST', p, body);
    assert.deepEqual({ status: e.status, body: JSON.parse(e.text) }, { status, body: { error } }, p);
  }
  const unknown = await http('GET', '/v2/systemsharedmemory/region/x/status');
  assert.deepEqual(
    { status: unknown.status, body: JSON.parse(unknown.text) },
    { status: 404, body: { error: "Unable to find system shared memory region: 'x'" } },
  );

  assert.equal((await http('POST', '/v2/systemsharedmemory/region/in/unregister')).status, 200);
  assert.equal((await http('POST', '/v2/systemsharedmemory/region/never/unregister')).status, 200);
  assert.deepEqual(
    JSON.parse((await http('GET', '/v2/systemsharedmemory/status')).text).map((r: { name: string }) => r.name),
    ['out'],
  );
  const gone = await http('POST', '/v2/models/simple/infer', request(shmParams('out', 64, 64)));
  assert.deepEqual(JSON.parse(gone.text), { error: "Unable to find shared memory region: 'in'" });
  assert.equal((await http('POST', '/v2/systemsharedmemory/unregister')).status, 200);
  assert.equal((await http('GET', '/v2/systemsharedmemory/status')).text, '[]');
});

test('system shared memory over gRPC: register, status, ModelInfer in and out of the region, errors, unregister', async () => {
  fillInputs();
  await client.call('SystemSharedMemoryRegister', { name: 'gin', key: KEY, offset: 0, byte_size: 128 });
  await client.call('SystemSharedMemoryRegister', { name: 'gout', key: KEY, offset: 128, byte_size: 128 });
  const status = await client.call<{ regions: Record<string, unknown> }>('SystemSharedMemoryStatus', { name: 'gout' });
  assert.deepEqual(status, { regions: { gout: { name: 'gout', key: KEY, offset: '128', byte_size: '128' } } });
  assert.deepEqual(Object.keys((await client.call<{ regions: object }>('SystemSharedMemoryStatus', {})).regions).sort(), ['gin', 'gout']);

  const p = (region: string, offset: number, size: number) => ({
    shared_memory_region: { string_param: region },
    shared_memory_offset: { int64_param: offset },
    shared_memory_byte_size: { int64_param: size },
  });
  const request = (out1: object) => ({
    model_name: 'simple',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: p('gin', 0, 64) },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: p('gin', 64, 64) },
    ],
    outputs: [
      { name: 'OUTPUT0', parameters: p('gout', 0, 64) },
      { name: 'OUTPUT1', parameters: out1 },
    ],
  });
  const r = await client.call<{ outputs: { name: string }[]; raw_output_contents: Buffer[] }>('ModelInfer', request(p('gout', 64, 64)));
  assert.deepEqual(
    r.outputs.map((o) => o.name),
    ['OUTPUT0', 'OUTPUT1'],
  );
  assert.deepEqual(
    r.raw_output_contents.map((b) => b.length),
    [0, 0],
    'one empty raw entry per shm output',
  );
  assert.deepEqual(readOutputs(), { out0: sum, out1: diff });

  const mixed = await client.call<{ raw_output_contents: Buffer[] }>('ModelInfer', request({}));
  assert.deepEqual(int32Values(mixed.raw_output_contents[1]), diff);

  await rejects(client.call('ModelInfer', request(p('nope', 0, 64))), grpc.status.NOT_FOUND, "Unable to find shared memory region: 'nope'");
  await rejects(
    client.call('ModelInfer', request(p('gout', 100, 64))),
    grpc.status.INVALID_ARGUMENT,
    "Invalid offset + byte size for shared memory region: 'gout'",
  );
  await rejects(
    client.call('SystemSharedMemoryRegister', { name: 'gin', key: KEY, byte_size: 8 }),
    grpc.status.ALREADY_EXISTS,
    "shared memory region 'gin' already in manager",
  );
  await rejects(
    client.call('SystemSharedMemoryRegister', { name: 'k', key: '/triton_python_backend_shm_region_1', byte_size: 8 }),
    grpc.status.INVALID_ARGUMENT,
    "cannot register shared memory region 'k' with key '/triton_python_backend_shm_region_1' as the key contains the reserved prefix 'triton_python_backend_shm_region_'",
  );
  await rejects(
    client.call('CudaSharedMemoryRegister', { name: 'c', byte_size: 8 }),
    grpc.status.INVALID_ARGUMENT,
    "failed to register CUDA shared memory region: 'c', GPUs not supported",
  );

  // Regions are shared by both protocols.
  assert.deepEqual(
    JSON.parse((await http('GET', '/v2/systemsharedmemory/status')).text).map((x: { name: string }) => x.name),
    ['gin', 'gout'],
  );
  await client.call('SystemSharedMemoryUnregister', { name: 'gin' });
  await rejects(client.call('SystemSharedMemoryStatus', { name: 'gin' }), grpc.status.NOT_FOUND, "Unable to find system shared memory region: 'gin'");
  await client.call('SystemSharedMemoryUnregister', {});
  assert.deepEqual(await client.call('SystemSharedMemoryStatus', {}), { regions: {} });
});
