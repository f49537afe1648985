/**
 * The gRPC endpoint through the real server and real clients: a
 * @grpc/grpc-js client built from our protos drives every rpc; a Python
 * grpcio client generated from the same protos infers on `simple`; TLS and
 * mutual TLS with certificates made here by the openssl CLI.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { createClient, int32Bytes, int32Values } from './grpc-test-client';
import type { GrpcTestClient } from './grpc-test-client';
import { MODEL_REPOSITORY, REPO_ROOT, startServer } from './server-process';
import type { ServerProcess } from './server-process';
import { recordSkip } from './needs';

const GRPC_ARGS = ['--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1'];

let server: ServerProcess;
let client: GrpcTestClient;
before(async () => {
  server = await startServer([`--model-repository=${MODEL_REPOSITORY}`, ...GRPC_ARGS]);
  assert.ok(server.grpcPort > 0, 'the log names the bound gRPC port');
  client = createClient(server.grpcPort);
});
after(async () => {
  client?.close();
  assert.equal(await server.stop(), 0, 'server exits 0 on SIGTERM');
});

const in0 = Array.from({ length: 16 }, (_, i) => i);
const in1 = Array.from({ length: 16 }, () => 1);

function simpleRequest(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model_name: 'simple',
    id: 'r1',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
    ],
    raw_input_contents: [int32Bytes(in0), int32Bytes(in1)],
    ...extra,
  };
}

async function rejects(p: Promise<unknown>, code: grpc.status, details: string | RegExp): Promise<void> {
  await assert.rejects(p, (err: grpc.ServiceError) => {
    assert.equal(err.code, code, `status ${err.code} (${err.details})`);
    if (typeof details === 'string') assert.equal(err.details, details);
    else assert.match(err.details, details);
    return true;
  });
}

test('log line and health: ServerLive, ServerReady, grpc.health.v1 Check', async () => {
  assert.match(server.output(), /Started GRPCInferenceService at 127\.0\.0\.1:\d+/);
  assert.deepEqual(await client.call('ServerLive', {}), { live: true });
  assert.deepEqual(await client.call('ServerReady', {}), { ready: true });
  assert.deepEqual(await client.check(), { status: 'SERVING' });
});

test('ServerMetadata and ModelMetadata', async () => {
  const meta = await client.call<{ name: string; version: string; extensions: string[] }>('ServerMetadata', {});
  assert.equal(meta.name, 'triton');
  assert.ok(meta.extensions.includes('model_repository'));
  assert.deepEqual(await client.call('ModelMetadata', { name: 'simple', version: '' }), {
    name: 'simple',
    versions: ['1'],
    platform: 'onnxruntime_onnx',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: ['-1', '16'] },
      { name: 'INPUT1', datatype: 'INT32', shape: ['-1', '16'] },
    ],
    outputs: [
      { name: 'OUTPUT0', datatype: 'INT32', shape: ['-1', '16'] },
      { name: 'OUTPUT1', datatype: 'INT32', shape: ['-1', '16'] },
    ],
  });
});

test('ModelReady: ready, ready: false with status OK for a failed lookup (as Triton), an error for a bad version text', async () => {
  assert.deepEqual(await client.call('ModelReady', { name: 'simple', version: '' }), { ready: true });
  assert.deepEqual(await client.call('ModelReady', { name: 'simple', version: '1' }), { ready: true });
  assert.deepEqual(await client.call('ModelReady', { name: 'nope' }), { ready: false });
  assert.deepEqual(await client.call('ModelReady', { name: 'simple', version: '7' }), { ready: false });
  await rejects(
    client.call('ModelReady', { name: 'simple', version: 'x' }),
    grpc.status.INVALID_ARGUMENT,
    "failed to get model version from specified version string 'x' (details: stol), version should be an integral value > 0",
  );
});

test('ModelConfig returns the ModelConfig message, 64-bit fields intact', async () => {
  const { config } = await client.call<{ config: Record<string, any> }>('ModelConfig', { name: 'simple' });
  assert.equal(config.name, 'simple');
  assert.equal(config.platform, 'onnxruntime_onnx');
  assert.equal(config.max_batch_size, 8);
  assert.deepEqual(
    config.input.map((i: any) => [i.name, i.data_type, i.dims]),
    [
      ['INPUT0', 'TYPE_INT32', ['16']],
      ['INPUT1', 'TYPE_INT32', ['16']],
    ],
  );
  assert.equal(config.instance_group[0].kind, 'KIND_CPU');
  const dense = await client.call<{ config: Record<string, any> }>('ModelConfig', { name: 'dense_classifier' });
  assert.deepEqual(dense.config.dynamic_batching.preferred_batch_size, [8, 16, 32]); // int32
  assert.equal(typeof dense.config.dynamic_batching.max_queue_delay_microseconds, 'string'); // uint64
  await rejects(client.call('ModelConfig', { name: 'nope' }), grpc.status.NOT_FOUND, "Request for unknown model: 'nope' is not found");
});

test('ModelInfer on simple with raw_input_contents: one raw output per output', async () => {
  const res = await client.call<Record<string, any>>('ModelInfer', simpleRequest());
  assert.equal(res.model_name, 'simple');
  assert.equal(res.model_version, '1');
  assert.equal(res.id, 'r1');
  assert.deepEqual(
    res.outputs.map((o: any) => [o.name, o.datatype, o.shape]),
    [
      ['OUTPUT0', 'INT32', ['1', '16']],
      ['OUTPUT1', 'INT32', ['1', '16']],
    ],
  );
  assert.equal(res.raw_output_contents.length, 2);
  assert.deepEqual(
    int32Values(res.raw_output_contents[0]),
    in0.map((v) => v + 1),
  );
  assert.deepEqual(
    int32Values(res.raw_output_contents[1]),
    in0.map((v) => v - 1),
  );
});

test('ModelInfer with typed contents, a requested output subset and parameters', async () => {
  const res = await client.call<Record<string, any>>('ModelInfer', {
    model_name: 'simple',
    model_version: '1',
    parameters: { priority: { uint64_param: 0 }, custom: { string_param: 'x' }, sequence_id: { int64_param: 0 } },
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: { int_contents: in0 } },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], contents: { int_contents: in1 } },
    ],
    outputs: [{ name: 'OUTPUT1' }],
  });
  assert.equal(res.id, '');
  assert.deepEqual(
    res.outputs.map((o: any) => o.name),
    ['OUTPUT1'],
  );
  assert.equal(res.raw_output_contents.length, 1);
  assert.deepEqual(
    int32Values(res.raw_output_contents[0]),
    in0.map((v) => v - 1),
  );
});

test('ModelInfer errors carry Triton status codes and texts', async () => {
  await rejects(client.call('ModelInfer', { ...simpleRequest(), model_name: 'nope' }), grpc.status.NOT_FOUND, "Request for unknown model: 'nope' is not found");
  await rejects(
    client.call(
      'ModelInfer',
      simpleRequest({
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 8] },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 8] },
        ],
      }),
    ),
    grpc.status.INVALID_ARGUMENT,
    /^\[request id: r1\] unexpected shape for input 'INPUT0' for model 'simple'\. Expected \[-1,16\], got \[1,8\]\. NOTE:/,
  );
  await rejects(
    client.call(
      'ModelInfer',
      simpleRequest({
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, -1] },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
        ],
      }),
    ),
    grpc.status.INVALID_ARGUMENT,
    "[request id: r1] All input dimensions should be specified for input 'INPUT0' for model 'simple', got [1,-1]",
  );
  await rejects(
    client.call(
      'ModelInfer',
      simpleRequest({
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: { int_contents: in0 } },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
        ],
      }),
    ),
    grpc.status.INVALID_ARGUMENT,
    "contents field must not be specified when using raw_input_contents for 'INPUT0' for model 'simple'",
  );
  await rejects(
    client.call('ModelInfer', simpleRequest({ raw_input_contents: [int32Bytes(in0)] })),
    grpc.status.INVALID_ARGUMENT,
    "unable to find data for input tensor 'INPUT1' for model 'simple' in request.",
  );
  await rejects(
    client.call('ModelInfer', simpleRequest({ raw_input_contents: [int32Bytes(in0), int32Bytes([1, 2])] })),
    grpc.status.INVALID_ARGUMENT,
    "[request id: r1] input byte size mismatch for input 'INPUT1' for model 'simple'. Expected 64, got 8",
  );
  await rejects(
    client.call('ModelInfer', simpleRequest({ parameters: { priority: { string_param: 'high' } } })),
    grpc.status.INVALID_ARGUMENT,
    "invalid value type for 'priority' parameter, expected int64_param or uint64_param.",
  );
});

interface StreamReply {
  error_message: string;
  infer_response: Record<string, any> | null;
}

test('ModelStreamInfer: responses in request order, an error in the middle keeps the stream open', async () => {
  const stream = client.inference.ModelStreamInfer() as grpc.ClientDuplexStream<object, StreamReply>;
  const replies: StreamReply[] = [];
  const ended = new Promise<void>((resolve, reject) => {
    stream.on('data', (r: StreamReply) => replies.push(r));
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  stream.write(simpleRequest({ id: 'a' }));
  stream.write(simpleRequest({ id: 'b', raw_input_contents: [int32Bytes(in0)] }));
  stream.write({ ...simpleRequest({ id: 'c' }), model_name: 'nope' });
  stream.write(simpleRequest({ id: 'd' }));
  stream.end();
  await ended;
  assert.deepEqual(
    replies.map((r) => r.infer_response?.id),
    ['a', 'b', 'c', 'd'],
  );
  assert.deepEqual(
    replies.map((r) => r.error_message),
    ['', "unable to find data for input tensor 'INPUT1' for model 'simple' in request.", "Request for unknown model: 'nope' is not found", ''],
  );
  for (const k of [0, 3]) {
    const r = replies[k].infer_response!;
    assert.equal(r.model_name, 'simple');
    assert.deepEqual(r.parameters.triton_final_response, { parameter_choice: 'bool_param', bool_param: true });
    assert.deepEqual(
      int32Values(r.raw_output_contents[0]),
      in0.map((v) => v + 1),
    );
  }
});

test('ModelStreamInfer with triton_grpc_error ends the stream with the first error status', async () => {
  const md = new grpc.Metadata();
  md.set('triton_grpc_error', 'true');
  const stream = client.inference.ModelStreamInfer(md) as grpc.ClientDuplexStream<object, StreamReply>;
  const replies: StreamReply[] = [];
  const status = new Promise<grpc.ServiceError>((resolve) => {
    stream.on('data', (r: StreamReply) => replies.push(r));
    stream.on('error', resolve);
  });
  stream.write(simpleRequest({ id: 'a' }));
  stream.write({ ...simpleRequest({ id: 'b' }), model_name: 'nope' });
  const err = await status;
  assert.equal(err.code, grpc.status.NOT_FOUND);
  assert.equal(err.details, "Request for unknown model: 'nope' is not found");
  assert.deepEqual(
    replies.map((r) => r.infer_response?.id),
    ['a'],
  );
});

test('repository, statistics, trace, log and shared-memory rpcs', async () => {
  const index = await client.call<{ models: Record<string, string>[] }>('RepositoryIndex', {});
  assert.ok(index.models.some((m) => m.name === 'simple' && m.version === '1' && m.state === 'READY'));
  await rejects(client.call('RepositoryIndex', { repository_name: 'r' }), grpc.status.UNIMPLEMENTED, "'repository_name' specification is not supported");
  await rejects(
    client.call('RepositoryModelLoad', { model_name: 'simple' }),
    grpc.status.UNAVAILABLE,
    "explicit model load / unload is not allowed if polling is enabled. The server runs in model control mode 'none'. Start the server with --model-control-mode=explicit to load and unload models through the repository API.",
  );
  await rejects(
    client.call('RepositoryModelUnload', { model_name: 'simple', parameters: { unload_dependents: { string_param: 'x' } } }),
    grpc.status.INVALID_ARGUMENT,
    "invalid value type for 'unload_dependents' parameter, expected bool_param.",
  );
  const disabled = "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.";
  await rejects(client.call('SystemSharedMemoryRegister', { name: 'r', key: '/k', byte_size: 64 }), grpc.status.UNIMPLEMENTED, disabled);
  await rejects(client.call('SystemSharedMemoryUnregister', {}), grpc.status.UNIMPLEMENTED, disabled);
  await rejects(client.call('CudaSharedMemoryRegister', { name: 'r', byte_size: 64 }), grpc.status.UNIMPLEMENTED, disabled);
  assert.deepEqual(await client.call('SystemSharedMemoryStatus', {}), { regions: {} });
  assert.deepEqual(await client.call('CudaSharedMemoryStatus', {}), { regions: {} });
  await rejects(client.call('SystemSharedMemoryStatus', { name: 'r' }), grpc.status.NOT_FOUND, "Unable to find system shared memory region: 'r'");
  // The same refusal over HTTP (default --allow-client-shm=false).
  const reg = await fetch(`${server.url}/v2/systemsharedmemory/region/r/register`, { method: 'POST', body: '{"key":"/k","byte_size":64}' });
  assert.deepEqual({ status: reg.status, body: await reg.json() }, { status: 501, body: { error: disabled } });
  const st = await fetch(`${server.url}/v2/systemsharedmemory/status`);
  assert.deepEqual({ status: st.status, body: await st.json() }, { status: 200, body: [] });
  const log = await client.call<{ settings: Record<string, Record<string, unknown>> }>('LogSettings', {});
  assert.equal(log.settings.log_info.bool_param, true);
  assert.equal(log.settings.log_format.string_param, 'default');
  const trace = await client.call<{ settings: Record<string, { value: string[] }> }>('TraceSetting', {});
  assert.ok(Array.isArray(trace.settings.trace_level.value));
  const stats = await client.call<{ model_stats: Record<string, any>[] }>('ModelStatistics', { name: 'simple' });
  assert.deepEqual(
    stats.model_stats.map((m) => [m.name, m.version]),
    [['simple', '1']],
  );
  assert.ok(Number(stats.model_stats[0].inference_stats.success.count) > 0, 'the gRPC inferences above were counted');
  await rejects(client.call('ModelStatistics', { name: 'nope' }), grpc.status.INVALID_ARGUMENT, "requested model 'nope' is not available");
  const set = await client.call<{ settings: Record<string, Record<string, unknown>> }>('LogSettings', { settings: { log_verbose_level: { uint32_param: 0 } } });
  assert.equal(set.settings.log_verbose_level.uint32_param, 0);
  await rejects(client.call('LogSettings', { settings: { log_info: { string_param: 'x' } } }), grpc.status.INVALID_ARGUMENT, "expect boolean for 'log_info'");
  await rejects(
    client.call('TraceSetting', { settings: { trace_rate: { value: ['1', '2'] } } }),
    grpc.status.INVALID_ARGUMENT,
    "expect only 1 value for 'trace_rate'",
  );
});

test('a Python grpcio client generated from our protos infers on simple', (t) => {
  const probe = spawnSync('python3', ['-c', 'import grpc_tools, grpc, numpy'], { encoding: 'utf8' });
  if (probe.status !== 0) {
    t.skip(recordSkip('python3 with grpcio, grpcio-tools and numpy is not installed (pip install grpcio grpcio-tools)'));
    return;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-pygrpc-'));
  try {
    const proto = path.join(REPO_ROOT, 'proto');
    execFileSync(
      'python3',
      ['-m', 'grpc_tools.protoc', `-I${proto}`, `--python_out=${dir}`, `--grpc_python_out=${dir}`, 'grpc_service.proto', 'model_config.proto', 'health.proto'],
      { cwd: proto },
    );
    const script = path.join(REPO_ROOT, 'test/integration/fixtures/grpc_infer_simple.py');
    const out = execFileSync('python3', [script, dir, `127.0.0.1:${server.grpcPort}`], { encoding: 'utf8' });
    assert.match(out, /^ok /m);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

function makeCerts(dir: string): void {
  const run = (args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  };
  fs.writeFileSync(path.join(dir, 'san.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=nodetron-test-ca', '-keyout', 'ca.key', '-out', 'ca.pem']);
  for (const name of ['server', 'client']) {
    run([
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      `/CN=${name === 'server' ? 'localhost' : 'client'}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
    ]);
    run([
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '1',
      '-out',
      `${name}.pem`,
      '-extfile',
      'san.cnf',
    ]);
  }
}

test('TLS and mutual TLS', async (t) => {
  if (spawnSync('openssl', ['version']).status !== 0) {
    t.skip(recordSkip('the openssl CLI is not installed; cannot make test certificates (apt-get install openssl)'));
    return;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-tls-'));
  try {
    makeCerts(dir);
    const f = (n: string): string => path.join(dir, n);
    const read = (n: string): Buffer => fs.readFileSync(f(n));
    const tlsArgs = [
      `--model-repository=${MODEL_REPOSITORY}`,
      ...GRPC_ARGS,
      '--http-thread-count=1',
      `--grpc-server-cert=${f('server.pem')}`,
      `--grpc-server-key=${f('server.key')}`,
      `--grpc-root-cert=${f('ca.pem')}`,
    ];

    await t.test('TLS: a client trusting the CA infers', async () => {
      const s = await startServer([...tlsArgs, '--grpc-use-ssl=true']);
      const c = createClient(s.grpcPort, grpc.credentials.createSsl(read('ca.pem')), { 'grpc.ssl_target_name_override': 'localhost' });
      try {
        const res = await c.call<Record<string, any>>('ModelInfer', simpleRequest());
        assert.deepEqual(
          int32Values(res.raw_output_contents[0]),
          in0.map((v) => v + 1),
        );
        const plain = createClient(s.grpcPort);
        await assert.rejects(plain.call('ServerLive', {}), (e: grpc.ServiceError) => e.code === grpc.status.UNAVAILABLE);
        plain.close();
      } finally {
        c.close();
        assert.equal(await s.stop(), 0);
      }
    });

    await t.test('mutual TLS: a client certificate is required', async () => {
      const s = await startServer([...tlsArgs, '--grpc-use-ssl-mutual=true']);
      const good = createClient(s.grpcPort, grpc.credentials.createSsl(read('ca.pem'), read('client.key'), read('client.pem')), {
        'grpc.ssl_target_name_override': 'localhost',
      });
      const anonymous = createClient(s.grpcPort, grpc.credentials.createSsl(read('ca.pem')), { 'grpc.ssl_target_name_override': 'localhost' });
      try {
        assert.deepEqual(await good.call('ServerLive', {}), { live: true });
        await assert.rejects(anonymous.call('ServerLive', {}), (e: grpc.ServiceError) => e.code === grpc.status.UNAVAILABLE);
      } finally {
        good.close();
        anonymous.close();
        assert.equal(await s.stop(), 0);
      }
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
