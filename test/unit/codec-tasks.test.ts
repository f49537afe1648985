import { test } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { ServerError } from '../../src/core/errors';
import { Arena } from '../../src/dataplane/arena';
import { MIN_TRANSFER_BYTES, movable, runDecodeTask, runEncodeTask } from '../../src/frontend/http/codec-tasks';
import { decodeRequestBody, decodeWorkBytes, type BodyDecodeTask } from '../../src/frontend/http/request-body-decode';
import { encodeResponseBody, encodeWorkBytes, type ResponseEncodeTask } from '../../src/frontend/http/response-body';
import type { ValidationPlan } from '../../src/request/validation-plan';

const PLAN: ValidationPlan = {
  modelName: 'm',
  maxBatchSize: 0,
  outputs: [],
  requiredInputs: ['A', 'B'],
  decoupled: false,
  inputs: [
    { name: 'A', datatype: 'FP32', dims: [-1], optional: false, isShapeTensor: false },
    { name: 'B', datatype: 'INT32', dims: [-1], optional: false, isShapeTensor: false },
  ],
};

function task(body: Buffer, extra: Partial<BodyDecodeTask> = {}): BodyDecodeTask {
  return { body, contentEncoding: '', headerLength: '', plan: PLAN, maxInputSize: 1 << 24, ...extra };
}

test('movable: a small view is copied into its own exact buffer and not listed; a large one moves as it is', () => {
  const list = new Set<ArrayBuffer>();
  const small = Buffer.from('tiny'); // from Node's pool slab
  assert.ok(small.buffer.byteLength > small.byteLength);
  const s = movable(small, list);
  assert.notEqual(s.buffer, small.buffer);
  assert.equal(s.buffer.byteLength, 4);
  assert.deepEqual([...s], [...small]);
  assert.equal(list.size, 0);

  const big = new Uint8Array(MIN_TRANSFER_BYTES);
  assert.equal(movable(big, list), big);
  assert.equal(movable(big.subarray(0, MIN_TRANSFER_BYTES), list).buffer, big.buffer);
  assert.deepEqual([...list], [big.buffer], 'listed once');

  const shared = new Uint8Array(new SharedArrayBuffer(MIN_TRANSFER_BYTES)); // cannot be transferred: copied
  const c = movable(shared, list);
  assert.ok(c.buffer instanceof ArrayBuffer);
  assert.equal(list.size, 2);
});

test('runDecodeTask: the decoded request of the inline path, its tensors ready to transfer', () => {
  const a = Array.from({ length: 3000 }, (_, i) => i / 8);
  const body = Buffer.from(
    JSON.stringify({
      id: 'x',
      inputs: [
        { name: 'A', datatype: 'FP32', shape: [3000], data: a },
        { name: 'B', datatype: 'INT32', shape: [2], data: [7, 8] },
      ],
    }),
  );
  const inline = decodeRequestBody(task(body));
  const packed = runDecodeTask(task(body));
  assert.ok(packed.result.ok);
  assert.equal(packed.transfer.length, 1, 'the 12000-byte tensor moves, the 8-byte one is copied');
  const moved = structuredClone(packed.result, { transfer: packed.transfer });
  assert.equal(packed.transfer[0].byteLength, 0, 'detached on the sending side: no copy');
  assert.ok(moved.ok);
  assert.deepEqual(
    moved.value.inputs.map((i) => [...i.data]),
    inline.inputs.map((i) => [...i.data]),
  );
  assert.deepEqual({ ...moved.value, inputs: [] }, { ...inline, inputs: [] });
});

test('runDecodeTask: every error comes back as the code and message the inline path throws', () => {
  const full = Buffer.from(JSON.stringify({ inputs: [{ name: 'A', datatype: 'FP32', shape: [2], data: [1, 2] }] }));
  const cases: [string, BodyDecodeTask][] = [
    ['truncated JSON', task(full.subarray(0, full.length - 3))],
    ['bad gzip', task(Buffer.from('not gzip at all'), { contentEncoding: 'gzip' })],
    ['unknown encoding', task(full, { contentEncoding: 'br' })],
    ['header length out of range', task(full, { headerLength: String(full.length + 1) })],
    ['FP16 as JSON', task(Buffer.from(JSON.stringify({ inputs: [{ name: 'A', datatype: 'FP16', shape: [1], data: [1] }] })))],
    ['over the input limit', task(full, { maxInputSize: 10 })],
    ['inflated over the limit', task(zlib.gzipSync(full), { contentEncoding: 'gzip', maxInputSize: 20 })],
  ];
  for (const [name, t] of cases) {
    let thrown: unknown;
    try {
      decodeRequestBody(t);
    } catch (err) {
      thrown = err;
    }
    assert.ok(thrown instanceof ServerError, name);
    assert.deepEqual(runDecodeTask(t), { result: { ok: false, error: { code: thrown.code, message: thrown.message } }, transfer: [] }, name);
  }
});

function encodeTask(arena: Arena, extra: Partial<ResponseEncodeTask> = {}): ResponseEncodeTask {
  const data = new Float32Array(2048).map((_, i) => i / 3);
  const { offset } = arena.alloc(data.byteLength);
  arena.bytes(offset, data.byteLength).set(new Uint8Array(data.buffer));
  return {
    id: 'r',
    modelName: 'm',
    modelVersion: '1',
    outputs: [{ name: 'O', datatype: 'FP32', shape: [2048], offset, byteSize: data.byteLength }],
    requested: null,
    binaryDataOutput: false,
    batched: false,
    labels: {},
    acceptEncoding: '',
    maxJsonChars: 256 * 1024 * 1024,
    ...extra,
  };
}

test('runEncodeTask: the inline body and headers, the body ready to transfer; an encoding error as inline', () => {
  const arena = Arena.create({ initialBytes: 1 << 20 });
  for (const acceptEncoding of ['', 'gzip']) {
    const t = encodeTask(arena, { acceptEncoding });
    const inline = encodeResponseBody(arena, t);
    const packed = runEncodeTask(arena, t);
    assert.ok(packed.result.ok);
    assert.deepEqual(packed.result.value.headers, inline.headers);
    assert.deepEqual(Buffer.from(packed.result.value.body), Buffer.from(inline.body));
    const body = packed.result.value.body;
    if (acceptEncoding === '') assert.ok(body.byteLength >= MIN_TRANSFER_BYTES);
    assert.deepEqual(packed.transfer, body.byteLength >= MIN_TRANSFER_BYTES ? [body.buffer] : [], 'a small (gzip) body is copied');
    assert.equal(body.buffer.byteLength, body.byteLength, 'the body owns its buffer exactly: nothing else is cloned with it');
  }
  const bad = encodeTask(arena);
  bad.outputs[0].shape = [2047];
  assert.deepEqual(runEncodeTask(arena, bad).result, {
    ok: false,
    error: { code: 'INTERNAL', message: "output tensor shape does not match size of output for 'O'" },
  });
});

test('work estimates: JSON bytes to parse; compressed bytes weigh 16, JSON output bytes 8, compressed responses all bytes', () => {
  assert.equal(decodeWorkBytes(1000, '', ''), 1000);
  assert.equal(decodeWorkBytes(1000, 'identity', '100'), 100);
  assert.equal(decodeWorkBytes(1000, '', '0'), 0, 'raw binary request');
  assert.equal(decodeWorkBytes(1000, '', '1001'), 1000, 'invalid header: the whole body');
  assert.equal(decodeWorkBytes(1000, 'gzip', '10'), 16000);

  const arena = Arena.create({ initialBytes: 1 << 20 });
  const t = encodeTask(arena);
  assert.equal(encodeWorkBytes(t), 8 * 8192);
  assert.equal(encodeWorkBytes({ ...t, binaryDataOutput: true }), 0);
  assert.equal(encodeWorkBytes({ ...t, binaryDataOutput: true, acceptEncoding: 'deflate' }), 8192);
  assert.equal(encodeWorkBytes({ ...t, requested: [{ name: 'O', binary: true, classification: 0, parameters: {} }] }), 0);
  assert.equal(encodeWorkBytes({ ...t, requested: [{ name: 'P', binary: false, classification: 0, parameters: {} }] }), 0, 'not requested');
});
