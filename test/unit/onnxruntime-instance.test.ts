import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import type { BackendInstance, BackendInstanceArgs } from '../../src/backends/backend';
import { completeOnnxConfig } from '../../src/backends/onnxruntime/complete-config';
import { createBackendInstance } from '../../src/backends/onnxruntime/onnxruntime-instance';
import type { DataType } from '../../src/core/datatypes';
import { ServerError } from '../../src/core/errors';
import { Arena } from '../../src/dataplane/arena';
import type { ModelConfig } from '../../src/core/model-config';
import type { InferRequest, TensorRef } from '../../src/core/request';
import { modelFile, repoRoot } from './fixtures/repo-paths';

/** The model's config as auto-complete makes it from an (almost) empty one. */
async function configFor(name: string, fields: Partial<ModelConfig> = {}, backendConfig: Record<string, string> = {}): Promise<ModelConfig> {
  const base: ModelConfig = {
    name,
    platform: 'onnxruntime_onnx',
    backend: 'onnxruntime',
    runtime: '',
    version_policy: {},
    max_batch_size: 8,
    input: [],
    output: [],
    batch_input: [],
    batch_output: [],
    instance_group: [],
    default_model_filename: '',
    cc_model_filenames: {},
    metric_tags: {},
    parameters: {},
    model_warmup: [],
    ...fields,
  };
  return completeOnnxConfig(base, modelFile(name), true, backendConfig);
}

async function instanceFor(config: ModelConfig, overrides: Partial<BackendInstanceArgs> = {}): Promise<BackendInstance> {
  return createBackendInstance({
    config,
    modelDir: path.dirname(path.dirname(modelFile(config.name))),
    version: 1,
    modelPath: modelFile(config.name),
    instanceName: `${config.name}_0`,
    kind: 'KIND_CPU',
    deviceId: 0,
    backendConfig: {},
    instanceCountHint: 1,
    ...overrides,
  });
}

const arena = Arena.create({ initialBytes: 1 << 20, maxBytes: 64 << 20 });

function put(name: string, datatype: DataType, shape: number[], data: ArrayBufferView): TensorRef {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const { offset, gen } = arena.alloc(bytes.byteLength);
  arena.bytes(offset, bytes.byteLength).set(bytes);
  return { name, datatype, shape, offset, gen, byteSize: bytes.byteLength };
}

function serializeStrings(strings: string[]): Buffer {
  return Buffer.concat(
    strings.flatMap((s) => {
      const body = Buffer.from(s, 'utf8');
      const len = Buffer.alloc(4);
      len.writeUInt32LE(body.length);
      return [len, body];
    }),
  );
}

const bytesOf = (ref: TensorRef): Buffer => Buffer.from(arena.bytes(ref.offset, ref.byteSize));
/** A private copy of a tensor's bytes (typed views need their own, aligned buffer). */
const copyOf = (ref: TensorRef): ArrayBuffer => arena.bytes(ref.offset, ref.byteSize).slice().buffer;
const int32s = (ref: TensorRef): number[] => [...new Int32Array(copyOf(ref))];

function request(inputs: TensorRef[], batchSize: number, requestedOutputs: string[] | null = null): InferRequest {
  return { id: '', model: 'm', version: 1, latest: false, batchSize, inputs, requestedOutputs, parameters: {}, arrivalNs: 0 };
}

function freeAll(requests: InferRequest[], responses: { outputs: TensorRef[] }[] = []): void {
  for (const r of requests) for (const t of r.inputs) arena.free(t);
  for (const r of responses) for (const t of r.outputs) arena.free(t);
}

const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);

test('simple: a batch of 3 requests is split per request, each with the outputs it asked for', async () => {
  const before = arena.usedBytes();
  const inst = await instanceFor(await configFor('simple'));
  try {
    // batch sizes 1, 2, 1; INPUT0 = running numbers, INPUT1 = 10 * request index
    const sizes = [1, 2, 1];
    const wanted = [null, ['OUTPUT1'], ['OUTPUT1', 'OUTPUT0']];
    const reqs = sizes.map((bs, i) =>
      request(
        [put('INPUT0', 'INT32', [bs, 16], Int32Array.from(range(bs * 16, 100 * i))), put('INPUT1', 'INT32', [bs, 16], new Int32Array(bs * 16).fill(10 * i))],
        bs,
        wanted[i],
      ),
    );
    const responses = await inst.execute(reqs, arena);
    assert.equal(responses.length, 3);
    responses.forEach((res, i) => {
      const bs = sizes[i];
      const in0 = range(bs * 16, 100 * i);
      assert.equal(res.final, true);
      assert.equal(res.error, undefined);
      // Config order, only the requested ones.
      assert.deepEqual(
        res.outputs.map((o) => o.name),
        i === 1 ? ['OUTPUT1'] : ['OUTPUT0', 'OUTPUT1'],
      );
      for (const o of res.outputs) {
        assert.equal(o.datatype, 'INT32');
        assert.deepEqual(o.shape, [bs, 16]);
        assert.deepEqual(
          int32s(o),
          in0.map((x) => (o.name === 'OUTPUT0' ? x + 10 * i : x - 10 * i)),
        );
      }
    });
    freeAll(reqs, responses);
    assert.equal(arena.usedBytes(), before, 'no arena leak');
  } finally {
    await inst.finalize();
  }
});

test('dense_classifier: batched results equal one-request results', async () => {
  const inst = await instanceFor(await configFor('dense_classifier', { max_batch_size: 32 }));
  try {
    const sizes = [1, 3, 2];
    const data = sizes.map((bs, i) => Float32Array.from(range(bs * 64), (x) => Math.sin(x + 7 * i)));
    const reqs = sizes.map((bs, i) => request([put('input', 'FP32', [bs, 64], data[i])], bs));
    const batched = await inst.execute(reqs, arena);
    for (const [i, bs] of sizes.entries()) {
      const single = request([put('input', 'FP32', [bs, 64], data[i])], bs);
      const [alone] = await inst.execute([single], arena);
      const got = batched[i].outputs[0];
      assert.equal(got.name, 'logits');
      assert.deepEqual(got.shape, [bs, 10]);
      const a = new Float32Array(copyOf(got));
      const b = new Float32Array(copyOf(alone.outputs[0]));
      assert.equal(a.length, bs * 10);
      a.forEach((x, k) => assert.ok(Math.abs(x - b[k]) < 1e-4, `request ${i} element ${k}: ${x} vs ${b[k]}`));
      freeAll([single], [alone]);
    }
    freeAll(reqs, batched);
  } finally {
    await inst.finalize();
  }
});

test('image_classifier: per-request probabilities sum to 1', async () => {
  const inst = await instanceFor(await configFor('image_classifier'));
  try {
    const reqs = [1, 2].map((bs) =>
      request(
        [
          put(
            'input',
            'FP32',
            [bs, 3, 224, 224],
            Float32Array.from({ length: bs * 3 * 224 * 224 }, (_, k) => (k % 255) / 255),
          ),
        ],
        bs,
      ),
    );
    const responses = await inst.execute(reqs, arena);
    for (const [i, res] of responses.entries()) {
      const out = res.outputs[0];
      assert.deepEqual(out.shape, [reqs[i].batchSize, 1000]);
      const p = new Float32Array(copyOf(out));
      for (let row = 0; row < reqs[i].batchSize; row++) {
        const sum = p.subarray(row * 1000, (row + 1) * 1000).reduce((s, x) => s + x, 0);
        assert.ok(Math.abs(sum - 1) < 1e-3, `sum ${sum}`);
      }
    }
    freeAll(reqs, responses);
  } finally {
    await inst.finalize();
  }
});

/** Per datatype: the bytes of a [rows, 3] tensor and of the strings for BYTES. */
function sample(dt: DataType, rows: number, seed: number): ArrayBufferView {
  const n = rows * 3;
  switch (dt) {
    case 'BOOL':
      return Uint8Array.from(range(n), (k) => (k + seed) % 2);
    case 'UINT8':
      return Uint8Array.from(range(n), (k) => (255 - k - seed) & 0xff);
    case 'INT8':
      return Int8Array.from(range(n), (k) => (k % 2 ? -128 : 127) + seed);
    case 'UINT16':
      return Uint16Array.from(range(n), (k) => 65535 - k - seed);
    case 'INT16':
      return Int16Array.from(range(n), (k) => -32768 + k + seed);
    case 'UINT32':
      return Uint32Array.from(range(n), (k) => 4294967295 - k - seed);
    case 'INT32':
      return Int32Array.from(range(n), (k) => -2147483648 + k + seed);
    case 'UINT64':
      return BigUint64Array.from(range(n), (k) => 18446744073709551615n - BigInt(k + seed));
    case 'INT64':
      return BigInt64Array.from(range(n), (k) => -9223372036854775808n + BigInt(k + seed));
    // 1.0, max finite, a NaN payload, -0, smallest subnormal, ...: the bits must survive.
    case 'FP16':
      return Uint16Array.from(range(n), (k) => [0x3c00, 0x7bff, 0x7e01, 0x8000, 0x0001, 0xfc00][(k + seed) % 6]);
    case 'FP32':
      return Float32Array.from(range(n), (k) => (k + seed) * 1.5 - 3.25);
    case 'FP64':
      return Float64Array.from(range(n), (k) => Math.PI * (k - seed) + 1e-300);
    case 'BYTES':
      return serializeStrings(range(n).map((k) => ['', 'a', 'héllo wörld', '日本語', 'x'.repeat(300)][(k + seed) % 5]));
    default:
      throw new Error(`no sample for ${dt}`);
  }
}

const IDENTITY_TYPES: DataType[] = ['BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64', 'FP16', 'FP32', 'FP64', 'BYTES'];

test('identity_types: every datatype round-trips through a batch of two requests', async () => {
  const inst = await instanceFor(await configFor('identity_types'));
  try {
    const sizes = [1, 2];
    const reqs = sizes.map((bs, i) =>
      request(
        IDENTITY_TYPES.map((dt) => put(`INPUT_${dt}`, dt, [bs, 3], sample(dt, bs, i))),
        bs,
      ),
    );
    const responses = await inst.execute(reqs, arena);
    for (const [i, res] of responses.entries()) {
      assert.deepEqual(
        res.outputs.map((o) => o.name),
        IDENTITY_TYPES.map((dt) => `OUTPUT_${dt}`),
      );
      for (const [k, dt] of IDENTITY_TYPES.entries()) {
        const out = res.outputs[k];
        assert.equal(out.datatype, dt);
        assert.deepEqual(out.shape, [sizes[i], 3], dt);
        const want = sample(dt, sizes[i], i);
        assert.deepEqual(bytesOf(out), Buffer.from(want.buffer, want.byteOffset, want.byteLength), dt);
      }
    }
    freeAll(reqs, responses);
  } finally {
    await inst.finalize();
  }
});

test('identity_types with max_batch_size 0: full shapes, one request', async () => {
  // max_batch_size 0 means "unset" to auto-complete, so turn the default off too.
  const config = await configFor('identity_types', { max_batch_size: 0 }, { 'default-max-batch-size': '0' });
  assert.deepEqual(config.input[0].dims, [-1, -1]);
  const inst = await instanceFor(config);
  try {
    const req = request(
      [
        put('INPUT_INT64', 'INT64', [2, 3], sample('INT64', 2, 5)),
        ...IDENTITY_TYPES.filter((d) => d !== 'INT64').map((dt) => put(`INPUT_${dt}`, dt, [1, 3], sample(dt, 1, 0))),
      ],
      1,
      ['OUTPUT_INT64'],
    );
    const [res] = await inst.execute([req], arena);
    assert.deepEqual(
      res.outputs.map((o) => [o.name, o.shape]),
      [['OUTPUT_INT64', [2, 3]]],
    );
    const want = sample('INT64', 2, 5);
    assert.deepEqual(bytesOf(res.outputs[0]), Buffer.from(want.buffer, want.byteOffset, want.byteLength));
    freeAll([req], [res]);
  } finally {
    await inst.finalize();
  }
});

test('a failing run fails the batch with INTERNAL and leaks nothing', async () => {
  const before = arena.usedBytes();
  const inst = await instanceFor(await configFor('simple'));
  try {
    // 15 elements per row where the model wants 16 (the frontend would have refused it).
    const req = request([put('INPUT0', 'INT32', [1, 15], new Int32Array(15)), put('INPUT1', 'INT32', [1, 15], new Int32Array(15))], 1);
    await assert.rejects(inst.execute([req], arena), (err: unknown) => {
      assert.ok(err instanceof ServerError);
      assert.equal(err.code, 'INTERNAL');
      assert.match(err.message, /^onnx runtime error: .*INPUT0/);
      return true;
    });
    freeAll([req]);
    assert.equal(arena.usedBytes(), before);
  } finally {
    await inst.finalize();
  }
});

test('instance creation failures', async () => {
  const config = await configFor('simple');
  const cases: [string, Partial<BackendInstanceArgs>, string, RegExp][] = [
    ['KIND_GPU without the CUDA provider', { kind: 'KIND_GPU', deviceId: 0 }, 'UNAVAILABLE', /on GPU 0: the CUDA execution provider .* not installed/],
    ['missing model file', { modelPath: '/nonexistent/simple/1/model.onnx' }, 'INTERNAL', /^failed to stat file \/nonexistent\/simple\/1\/model.onnx$/],
    [
      'not a model',
      { modelPath: path.join(repoRoot(), 'model_repository', 'simple', 'config.pbtxt') },
      'INTERNAL',
      /^onnx runtime error: .*Protobuf parsing failed/,
    ],
  ];
  for (const [label, overrides, code, message] of cases) {
    await assert.rejects(instanceFor(config, overrides), (err: unknown) => {
      assert.ok(err instanceof ServerError, label);
      assert.equal(err.code, code, label);
      assert.match(err.message, message, label);
      return true;
    });
  }
});

test('finalize is idempotent', async () => {
  const inst = await instanceFor(await configFor('simple'));
  await inst.finalize();
  await inst.finalize();
});
