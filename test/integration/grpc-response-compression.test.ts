/**
 * --grpc-infer-response-compression-level through the real server: a raw
 * HTTP/2 client reads each response message's compressed flag and the
 * response's grpc-encoding, and decompresses the message itself; the
 * encoding is gRPC core's choice for the level among those the request's
 * grpc-accept-encoding lists (high: deflate, low: gzip, when both are),
 * identity when it lists neither or at `none`; only the inference rpcs are
 * compressed. The grpc-js client (and Python grpcio, where installed) read
 * the compressed responses transparently.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { gunzipSync, inflateSync } from 'node:zlib';
import { createClient, int32Bytes, int32Values } from './grpc-test-client';
import { RawGrpcClient, grpcFrame } from './grpc-raw-client';
import type { RawCallResult } from './grpc-raw-client';
import { decodeInferResponse, decodeStreamResponse, expectedOutputs, requestBytes, simpleOutputs, simpleRequest, Rng } from './grpc-fuzz-kit';
import { MODEL_REPOSITORY, startServer } from './server-process';
import type { ServerProcess } from './server-process';
import { recordSkip } from './needs';

const GRPC_ARGS = [
  `--model-repository=${MODEL_REPOSITORY}`,
  '--allow-grpc=true',
  '--grpc-port=0',
  '--grpc-address=127.0.0.1',
  '--load-model=simple',
  '--model-control-mode=explicit',
];
const ALL = 'identity,deflate,gzip';

const servers: Record<'high' | 'low' | 'none', ServerProcess | undefined> = { high: undefined, low: undefined, none: undefined };
const raw: Partial<Record<keyof typeof servers, RawGrpcClient>> = {};

before(async () => {
  const levels = ['high', 'low', 'none'] as const;
  const started = await Promise.all(levels.map((l) => startServer([...GRPC_ARGS, `--grpc-infer-response-compression-level=${l}`])));
  levels.forEach((l, i) => {
    servers[l] = started[i]!;
    raw[l] = new RawGrpcClient(started[i]!.grpcPort);
  });
});

after(async () => {
  for (const c of Object.values(raw)) c?.close();
  for (const s of Object.values(servers)) if (s !== undefined) assert.equal(await s.stop(), 0);
});

const rng = new Rng(14);

function unpack(res: RawCallResult, i: number): Buffer {
  const body = res.messages[i]!;
  if (res.compressedFlags[i] === 0) return body;
  return res.encoding === 'gzip' ? gunzipSync(body) : inflateSync(body);
}

async function inferOn(level: keyof typeof servers, accept: string | undefined): Promise<{ res: RawCallResult }> {
  const r = simpleRequest(rng, `c-${level}`);
  const res = await raw[level]!.call('ModelInfer', grpcFrame(requestBytes(r)), { headers: accept === undefined ? {} : { 'grpc-accept-encoding': accept } });
  assert.equal(res.status, 0, res.message);
  assert.equal(res.messages.length, 1);
  const decoded = decodeInferResponse(unpack(res, 0));
  assert.deepEqual(simpleOutputs(decoded), expectedOutputs(r), 'the response decodes to the right outputs');
  return { res };
}

test("high, client accepts deflate and gzip: ModelInfer answers deflate (gRPC core's highest), compressed flag set", async () => {
  const { res } = await inferOn('high', ALL);
  assert.equal(res.encoding, 'deflate');
  assert.deepEqual(res.compressedFlags, [1]);
});

test('low, client accepts deflate and gzip: gzip', async () => {
  const { res } = await inferOn('low', ALL);
  assert.equal(res.encoding, 'gzip');
  assert.deepEqual(res.compressedFlags, [1]);
});

test('high, client accepts gzip only: gzip', async () => {
  const { res } = await inferOn('high', 'identity,gzip');
  assert.equal(res.encoding, 'gzip');
  assert.deepEqual(res.compressedFlags, [1]);
});

test('a client that accepts neither (identity only, or no grpc-accept-encoding) gets identity', async () => {
  for (const accept of ['identity', undefined]) {
    const { res } = await inferOn('high', accept);
    assert.equal(res.encoding, 'identity', String(accept));
    assert.deepEqual(res.compressedFlags, [0]);
  }
});

test('none (the default): identity, whatever the client accepts', async () => {
  const { res } = await inferOn('none', ALL);
  assert.equal(res.encoding, 'identity');
  assert.deepEqual(res.compressedFlags, [0]);
});

test('ModelStreamInfer: every response message of the stream is compressed', async () => {
  const reqs = [simpleRequest(rng, 's1'), simpleRequest(rng, 's2')];
  const res = await raw.high!.call(
    'ModelStreamInfer',
    reqs.map((r) => grpcFrame(requestBytes(r))),
    { headers: { 'grpc-accept-encoding': ALL } },
  );
  assert.equal(res.status, 0, res.message);
  assert.equal(res.encoding, 'deflate');
  assert.deepEqual(res.compressedFlags, [1, 1]);
  const got = res.messages.map((_, i) => decodeStreamResponse(unpack(res, i)));
  for (let i = 0; i < reqs.length; i++) {
    assert.equal(got[i]!.error_message, '');
    assert.deepEqual(simpleOutputs(got[i]!.infer_response!), expectedOutputs(reqs[i]!));
  }
});

test('other rpcs are not compressed (Triton compresses inference responses only)', async () => {
  const res = await raw.high!.call('ServerMetadata', grpcFrame(Buffer.alloc(0)), { headers: { 'grpc-accept-encoding': ALL } });
  assert.equal(res.status, 0, res.message);
  assert.equal(res.encoding, 'identity');
  assert.deepEqual(res.compressedFlags, [0]);
});

test('a grpc-js client reads the compressed responses as usual', async () => {
  const client = createClient(servers.high!.grpcPort);
  try {
    const in0 = Array.from({ length: 16 }, (_, i) => i);
    const in1 = in0.map(() => 1);
    const r = await client.call<{ raw_output_contents: Buffer[] }>('ModelInfer', {
      model_name: 'simple',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
      ],
      raw_input_contents: [int32Bytes(in0), int32Bytes(in1)],
    });
    assert.deepEqual(
      int32Values(r.raw_output_contents[0]!),
      in0.map((v) => v + 1),
    );
    assert.deepEqual(
      int32Values(r.raw_output_contents[1]!),
      in0.map((v) => v - 1),
    );
  } finally {
    client.close();
  }
});

const hasGrpcio = spawnSync('python3', ['-c', 'import grpc'], { stdio: 'ignore' }).status === 0;

test(
  'a Python grpcio client reads the compressed responses',
  { skip: hasGrpcio ? false : recordSkip('python3 has no grpcio (python3 -m pip install grpcio)') },
  () => {
    const r = simpleRequest(rng, 'py');
    const script = [
      'import sys, grpc',
      'ch = grpc.insecure_channel(sys.argv[1])',
      "call = ch.unary_unary('/inference.GRPCInferenceService/ModelInfer', request_serializer=None, response_deserializer=None)",
      'out = call(bytes.fromhex(sys.argv[2]), timeout=20)',
      'sys.stdout.write(out.hex())',
    ].join('\n');
    const py = spawnSync('python3', ['-c', script, `127.0.0.1:${servers.high!.grpcPort}`, requestBytes(r).toString('hex')], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(py.status, 0, py.stderr);
    assert.deepEqual(simpleOutputs(decodeInferResponse(Buffer.from(py.stdout, 'hex'))), expectedOutputs(r));
  },
);
