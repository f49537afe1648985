/**
 * The Python stub's control-channel framing (length-prefixed JSON, split and
 * merged chunks, corrupt frames) and the shared-memory offset allocator
 * (alignment, first fit, coalescing, Triton's growth rule).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BlobBuilder, FrameDecoder, MAX_FRAME_BYTES, encodeFrame } from '../../src/python-backend/ipc-framing';
import { SHM_ALIGN, ShmAllocator } from '../../src/python-backend/shm-allocator';

const messages = [
  { t: 'alive', pid: 1 },
  { t: 'log', message: 'مرحبا 🙂' },
  { t: 'execute', batch: 7, requests: [] },
];

const splits: { name: string; chunk: (all: Buffer) => Buffer[] }[] = [
  { name: 'one chunk', chunk: (all) => [all] },
  { name: 'byte by byte', chunk: (all) => [...all].map((b) => Buffer.from([b])) },
  { name: 'split inside a length prefix', chunk: (all) => [all.subarray(0, 2), all.subarray(2, 30), all.subarray(30)] },
];

for (const s of splits) {
  test(`framing: ${s.name} decodes every message in order`, () => {
    const all = Buffer.concat(messages.map((m) => encodeFrame(m)));
    const d = new FrameDecoder();
    const got = s.chunk(all).flatMap((c) => d.push(c));
    assert.deepEqual(got, messages);
    assert.equal(d.pendingBytes(), 0);
  });
}

test('framing: a partial frame waits, an oversized length and non-JSON are errors', () => {
  const d = new FrameDecoder();
  const frame = encodeFrame({ a: 1 });
  assert.deepEqual(d.push(frame.subarray(0, frame.length - 1)), []);
  assert.equal(d.pendingBytes(), frame.length - 1);
  assert.deepEqual(d.push(frame.subarray(frame.length - 1)), [{ a: 1 }]);
  const big = Buffer.alloc(4);
  big.writeUInt32LE(MAX_FRAME_BYTES + 1, 0);
  assert.throws(() => new FrameDecoder().push(big), /exceeds the/);
  const bad = Buffer.concat([Buffer.from([3, 0, 0, 0]), Buffer.from('{x}')]);
  assert.throws(() => new FrameDecoder().push(bad), /not JSON/);
});

test('framing: a frame with a blob carries 8-byte aligned tensor bytes, split anywhere', () => {
  const blob = new BlobBuilder();
  const a = blob.add(Uint8Array.from([1, 2, 3]));
  const b = blob.add(Uint8Array.from([4, 5, 6, 7, 8, 9, 10, 11, 12]));
  const c = blob.add(new Uint8Array(0));
  assert.deepEqual([a, b, c], [0, 8, 24]);
  const msg = {
    t: 'response',
    outputs: [
      { offset: a, size: 3, inline: true },
      { offset: b, size: 9, inline: true },
    ],
  };
  const all = Buffer.concat([encodeFrame({ t: 'alive' }), encodeFrame(msg, blob), encodeFrame({ t: 'x' }, new BlobBuilder())]);
  for (const cut of [1, 5, 9, all.length - 3]) {
    const d = new FrameDecoder();
    const got = [...d.push(all.subarray(0, cut)), ...d.push(all.subarray(cut))] as { t: string; blob?: Buffer }[];
    assert.deepEqual(
      got.map((m) => m.t),
      ['alive', 'response', 'x'],
    );
    assert.equal(got[0]!.blob, undefined);
    assert.equal(got[2]!.blob, undefined);
    const bytes = got[1]!.blob!;
    assert.deepEqual([...bytes.subarray(a, a + 3)], [1, 2, 3]);
    assert.deepEqual([...bytes.subarray(b, b + 9)], [4, 5, 6, 7, 8, 9, 10, 11, 12]);
    assert.equal(d.pendingBytes(), 0);
  }
});

test('framing: a blob frame whose JSON length overruns it is an error', () => {
  const bad = Buffer.alloc(12);
  bad.writeUInt32LE((8 | 0x80000000) >>> 0, 0);
  bad.writeUInt32LE(100, 4);
  assert.throws(() => new FrameDecoder().push(bad), /does not fit/);
});

const allocCases: { name: string; steps: (a: ShmAllocator) => void }[] = [
  {
    name: 'blocks are aligned and 0 bytes still gets a unique block',
    steps: (a) => {
      const x = a.alloc(1).offset;
      const y = a.alloc(0).offset;
      const z = a.alloc(100).offset;
      assert.deepEqual([x, y, z], [0, SHM_ALIGN, 2 * SHM_ALIGN]);
    },
  },
  {
    name: 'freed neighbours coalesce and are reused first fit',
    steps: (a) => {
      const x = a.alloc(64).offset;
      const y = a.alloc(64).offset;
      a.alloc(64);
      a.release(x);
      a.release(y);
      assert.equal(a.alloc(128).offset, 0);
    },
  },
  {
    name: "growth follows Triton's rule growth * (floor(need / growth) + 1)",
    steps: (a) => {
      const r = a.alloc(1024);
      assert.deepEqual(r, { offset: 0, grew: false });
      const g = a.alloc(2500);
      assert.equal(g.grew, true);
      assert.equal(g.offset, 1024);
      assert.equal(a.size(), 1024 + 1000 * (Math.floor(2560 / 1000) + 1));
    },
  },
  {
    name: 'releasing an unknown offset is an error',
    steps: (a) => assert.throws(() => a.release(128), /not an allocated block/),
  },
];

for (const c of allocCases) {
  test(`shm allocator: ${c.name}`, () => c.steps(new ShmAllocator(1024, 1000)));
}
