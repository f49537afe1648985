/**
 * gRPC server reflection (issue 33 item 4) with a real grpcio client whose
 * stubs grpcio-tools generates from the reflection.proto that ships with
 * @grpc/reflection: it lists the services and describes
 * inference.GRPCInferenceService from the file descriptors the server sends,
 * as `grpcurl list` and `grpcurl describe` do, over v1 and v1alpha (older
 * grpcurl builds ask v1alpha). --grpc-reflection=false turns it off.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gatedBy, needsPython } from './needs';
import { MODEL_REPOSITORY, REPO_ROOT, startServer, type ServerProcess } from './server-process';

const skip = needsPython(
  'python3',
  [
    { module: 'grpc', pkg: 'grpcio' },
    { module: 'grpc_tools', pkg: 'grpcio-tools' },
  ],
  'python3 -m pip install grpcio grpcio-tools',
);
const CLIENT = path.join(REPO_ROOT, 'test/integration/fixtures/grpc_reflection_client.py');
const REFLECTION_PROTOS = path.join(REPO_ROOT, 'node_modules/@grpc/reflection/build/proto/grpc/reflection');

// Reflection needs no model: one, so the server starts fast.
const ARGS = [`--model-repository=${MODEL_REPOSITORY}`, '--model-control-mode=explicit', '--load-model=simple', '--allow-grpc=true', '--grpc-port=0'];

interface Described {
  services?: string[];
  files?: string[];
  methods?: string[];
  ModelInfer?: { input: string; output: string };
  error?: string;
  details?: string;
}

const { before, after, test } = gatedBy(skip);
let stubs: string;
let server: ServerProcess;
const ask = (port: number, version: 'v1' | 'v1alpha' = 'v1'): Described =>
  JSON.parse(execFileSync('python3', [CLIENT, stubs, `127.0.0.1:${port}`, version], { encoding: 'utf8' })) as Described;

before(async () => {
  stubs = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-reflection-'));
  fs.mkdirSync(path.join(stubs, 'v1alpha'));
  for (const [version, out] of [
    ['v1', stubs],
    ['v1alpha', path.join(stubs, 'v1alpha')],
  ] as const) {
    const dir = path.join(REFLECTION_PROTOS, version);
    execFileSync('python3', ['-m', 'grpc_tools.protoc', `-I${dir}`, `--python_out=${out}`, `--grpc_python_out=${out}`, 'reflection.proto']);
  }
  server = await startServer(ARGS);
});
after(async () => {
  await server?.stop();
  fs.rmSync(stubs, { recursive: true, force: true });
});

for (const version of ['v1', 'v1alpha'] as const) {
  test(`${version}: lists the services and describes ModelInfer, without the proto files`, () => {
    const d = ask(server.grpcPort, version);
    assert.equal(d.error, undefined, d.details);
    for (const s of ['inference.GRPCInferenceService', 'grpc.health.v1.Health']) assert.ok(d.services?.includes(s), `${s} in ${d.services?.join(', ')}`);
    assert.ok((d.files?.length ?? 0) > 0, 'the file descriptors that define the service come back');
    for (const m of ['ServerLive', 'ModelMetadata', 'ModelInfer', 'ModelStreamInfer', 'RepositoryModelLoad']) assert.ok(d.methods?.includes(m), m);
    assert.deepEqual(d.ModelInfer, { input: '.inference.ModelInferRequest', output: '.inference.ModelInferResponse' });
  });
}

test('--grpc-reflection=false: the service is not there (UNIMPLEMENTED)', async () => {
  const off = await startServer([...ARGS, '--grpc-reflection=false']);
  try {
    assert.equal(ask(off.grpcPort).error, 'UNIMPLEMENTED');
  } finally {
    await off.stop();
  }
});
