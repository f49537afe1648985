/**
 * Every example model through the real server: the dynamically batched float
 * model under concurrency, the image classifier with binary tensors and
 * classification, and every Triton datatype round-tripping through
 * `identity_types` in JSON and binary form.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { infer } from '../../src/client/kserve-http-client';
import type { ClientTensor } from '../../src/client/kserve-http-client';
import { startServer } from './server-process';
import type { ServerProcess } from './server-process';

let server: ServerProcess;
before(async () => {
  server = await startServer();
});
after(async () => {
  assert.equal(await server.stop(), 0);
});

test('dense_classifier: 48 concurrent single-row requests equal the batched answers row by row', async () => {
  const rows = Array.from({ length: 48 }, (_, k) => Array.from({ length: 64 }, (_, i) => Math.sin(k * 64 + i)));
  const single = await Promise.all(rows.map((row) => infer(server.url, 'dense_classifier', [{ name: 'input', datatype: 'FP32', shape: [1, 64], data: row }])));
  const batched = await infer(server.url, 'dense_classifier', [{ name: 'input', datatype: 'FP32', shape: [8, 64], data: rows.slice(0, 8).flat() }]);
  assert.equal(batched.status, 200, JSON.stringify(batched.json));
  const all = (batched.json.outputs as { data: number[]; shape: number[] }[])[0];
  assert.deepEqual(all.shape, [8, 10]);
  single.forEach((r, k) => {
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const out = (r.json.outputs as { data: number[]; shape: number[] }[])[0];
    assert.deepEqual(out.shape, [1, 10]);
    if (k < 8) {
      out.data.forEach((v, i) => assert.ok(Math.abs(v - all.data[k * 10 + i]) < 1e-4, `row ${k} col ${i}`));
    }
  });
});

test("dense_classifier: batch over max_batch_size is refused with Triton's text", async () => {
  const r = await infer(server.url, 'dense_classifier', [{ name: 'input', datatype: 'FP32', shape: [33, 64], data: new Uint8Array(33 * 64 * 4) }]);
  assert.equal(r.status, 400);
  assert.equal(r.json.error, "[request id: <id_unknown>] inference request batch-size must be <= 32 for 'dense_classifier'");
});

test('image_classifier: binary [2,3,224,224] input, probabilities sum to 1, classification top-3', async () => {
  const pixels = new Float32Array(2 * 3 * 224 * 224).map((_, i) => ((i * 7919) % 255) / 255);
  const r = await infer(server.url, 'image_classifier', [{ name: 'input', datatype: 'FP32', shape: [2, 3, 224, 224], data: new Uint8Array(pixels.buffer) }], {
    outputs: [{ name: 'probabilities', binary: true }],
  });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const probs = new Float32Array(new Uint8Array(r.binary.get('probabilities')!).buffer);
  assert.equal(probs.length, 2000);
  for (const half of [probs.subarray(0, 1000), probs.subarray(1000)]) {
    assert.ok(Math.abs(half.reduce((a, b) => a + b, 0) - 1) < 1e-3);
  }
  const body = Buffer.concat([
    Buffer.from(
      JSON.stringify({
        inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], parameters: { binary_data_size: 3 * 224 * 224 * 4 } }],
        outputs: [{ name: 'probabilities', parameters: { classification: 3 } }],
      }),
    ),
  ]);
  const header = body.length;
  const res = await fetch(`${server.url}/v2/models/image_classifier/infer`, {
    method: 'POST',
    headers: { 'Inference-Header-Content-Length': String(header) },
    body: Buffer.concat([body, Buffer.from(pixels.buffer, 0, 3 * 224 * 224 * 4)]),
  });
  assert.equal(res.status, 200);
  const json = (await res.json()) as { outputs: { datatype: string; shape: number[]; data: string[] }[] };
  assert.equal(json.outputs[0].datatype, 'BYTES');
  assert.deepEqual(json.outputs[0].shape, [1, 3]);
  for (const s of json.outputs[0].data) assert.match(s, /^[0-9.]+:[0-9]+:class_[0-9]+$/);
});

const TYPES: { dt: string; json: unknown[]; bytes: (n: number) => Uint8Array }[] = [
  { dt: 'BOOL', json: [true, false, true], bytes: () => Uint8Array.from([1, 0, 1]) },
  { dt: 'UINT8', json: [0, 7, 255], bytes: () => Uint8Array.from([0, 7, 255]) },
  { dt: 'UINT16', json: [0, 7, 65535], bytes: () => new Uint8Array(Uint16Array.from([0, 7, 65535]).buffer) },
  { dt: 'UINT32', json: [0, 7, 4294967295], bytes: () => new Uint8Array(Uint32Array.from([0, 7, 4294967295]).buffer) },
  { dt: 'UINT64', json: [0, 7, 9007199254740991], bytes: () => new Uint8Array(BigUint64Array.from([0n, 7n, 18446744073709551615n]).buffer) },
  { dt: 'INT8', json: [-128, 0, 127], bytes: () => new Uint8Array(Int8Array.from([-128, 0, 127]).buffer) },
  { dt: 'INT16', json: [-32768, 0, 32767], bytes: () => new Uint8Array(Int16Array.from([-32768, 0, 32767]).buffer) },
  { dt: 'INT32', json: [-2147483648, 0, 2147483647], bytes: () => new Uint8Array(Int32Array.from([-2147483648, 0, 2147483647]).buffer) },
  {
    dt: 'INT64',
    json: [-9007199254740991, 0, 9007199254740991],
    bytes: () => new Uint8Array(BigInt64Array.from([-9223372036854775808n, 0n, 9223372036854775807n]).buffer),
  },
  { dt: 'FP16', json: [], bytes: () => new Uint8Array(Uint16Array.from([0x3c00, 0x0000, 0xc000]).buffer) },
  { dt: 'FP32', json: [1.5, -0.25, 3e38], bytes: () => new Uint8Array(Float32Array.from([1.5, -0.25, 3e38]).buffer) },
  { dt: 'FP64', json: [1.5, -0.1, 1e300], bytes: () => new Uint8Array(Float64Array.from([1.5, -0.1, 1e300]).buffer) },
  { dt: 'BYTES', json: ['a', 'مرحبا', ''], bytes: () => bytesTensor(['a', 'مرحبا', '']) },
];

function bytesTensor(items: string[]): Uint8Array {
  const parts = items.flatMap((s) => {
    const b = Buffer.from(s);
    const len = Buffer.alloc(4);
    len.writeUInt32LE(b.length);
    return [len, b];
  });
  return Buffer.concat(parts);
}

function allInputs(binary: boolean): ClientTensor[] {
  return TYPES.map((t) => ({
    name: `INPUT_${t.dt}`,
    datatype: t.dt,
    shape: [1, 3],
    data: binary || t.dt === 'FP16' ? t.bytes(3) : t.json,
  }));
}

test('identity_types: every datatype round-trips byte for byte through binary tensors', async () => {
  const r = await infer(server.url, 'identity_types', allInputs(true), { binaryDataOutput: true });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  for (const t of TYPES) {
    assert.deepEqual(Uint8Array.from(r.binary.get(`OUTPUT_${t.dt}`)!), Uint8Array.from(t.bytes(3)), t.dt);
  }
});

test('identity_types: JSON tensors come back as the same JSON values', async () => {
  const inputs = allInputs(false);
  const r = await infer(server.url, 'identity_types', inputs, {
    outputs: TYPES.filter((t) => t.dt !== 'FP16').map((t) => ({ name: `OUTPUT_${t.dt}` })),
  });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const outputs = r.json.outputs as { name: string; datatype: string; data: unknown[] }[];
  for (const t of TYPES.filter((x) => x.dt !== 'FP16')) {
    const o = outputs.find((x) => x.name === `OUTPUT_${t.dt}`)!;
    assert.equal(o.datatype, t.dt);
    if (t.dt === 'FP32') {
      assert.deepEqual(o.data, [...Float32Array.from(t.json as number[])]);
    } else {
      assert.deepEqual(o.data, t.json, t.dt);
    }
  }
});

test('identity_types: FP16 as JSON is refused naming the input', async () => {
  const inputs = allInputs(false).map((t) => (t.datatype === 'FP16' ? { ...t, data: [1, 2, 3] } : t));
  const r = await infer(server.url, 'identity_types', inputs);
  assert.equal(r.status, 400);
  assert.equal(r.json.error, 'receiving FP16 data via JSON is not supported. Please use the binary data format for input INPUT_FP16');
});

test('datatype mismatch names the input, the model, expected and got', async () => {
  const r = await infer(server.url, 'simple', [
    { name: 'INPUT0', datatype: 'FP32', shape: [1, 16], data: new Uint8Array(64) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(64) },
  ]);
  assert.equal(r.status, 400);
  assert.equal(r.json.error, "[request id: <id_unknown>] inference input 'INPUT0' data-type is 'FP32', but model 'simple' expects 'INT32'");
});

test('missing and unknown inputs are named', async () => {
  const missing = await infer(server.url, 'simple', [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(64) }], { id: 'm1' });
  assert.equal(missing.status, 400);
  assert.match(
    String(missing.json.error),
    /^\[request id: m1\] expected 2 inputs but got 1 inputs for model 'simple'\. Got input\(s\) \['INPUT0'\], but missing required input\(s\) \['INPUT1'\]/,
  );
  const unknown = await infer(server.url, 'simple', [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(64) },
    { name: 'INPUTX', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(64) },
  ]);
  assert.equal(unknown.status, 400);
  assert.match(String(unknown.json.error), /INPUTX/);
});

test('byte-size mismatch of a binary input is refused', async () => {
  const r = await infer(server.url, 'simple', [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(60) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(64) },
  ]);
  assert.equal(r.status, 400);
  assert.equal(r.json.error, "[request id: <id_unknown>] input byte size mismatch for input 'INPUT0' for model 'simple'. Expected 64, got 60");
});
