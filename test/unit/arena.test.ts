import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { Arena, ARENA_MAX_BYTES_LIMIT, type BlockRef } from '../../src/dataplane/arena';
import { ServerError } from '../../src/core/errors';

function isServerError(code: string, text: RegExp): (err: unknown) => boolean {
  return (err) => err instanceof ServerError && err.code === code && text.test(err.message);
}

test('alloc returns 64-byte aligned, non-overlapping blocks for a table of sizes', () => {
  const arena = Arena.create({ initialBytes: 1 << 20 });
  const sizes = [0, 1, 63, 64, 65, 100, 4096, 4097, 65536, 65537, 300_000, 602_112];
  const blocks = sizes.map((size) => ({ size, ...arena.alloc(size) }));
  for (const b of blocks) {
    assert.equal(b.offset % 64, 0, `offset ${b.offset} for ${b.size} B`);
    arena.bytes(b.offset, b.size).fill(0xab);
  }
  const sorted = [...blocks].sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < sorted.length; i++) {
    assert.ok(sorted[i - 1].offset + sorted[i - 1].size <= sorted[i].offset, 'blocks overlap');
  }
  for (const b of blocks) arena.free(b);
  assert.equal(arena.usedBytes(), 0);
});

test('a freed block is reused for the same size', () => {
  const arena = Arena.create({ initialBytes: 1 << 20 });
  const keep = arena.alloc(100);
  const a = arena.alloc(1000);
  const guard = arena.alloc(100); // keeps `a` away from the top of the heap
  arena.free(a);
  assert.equal(arena.alloc(1000).offset, a.offset);
  arena.free(keep);
  arena.free(guard);
});

test('freed neighbours coalesce so a larger block fits in their place', () => {
  const arena = Arena.create({ initialBytes: 1 << 20 });
  const a = arena.alloc(100_000);
  const b = arena.alloc(100_000);
  const c = arena.alloc(100_000);
  const guard = arena.alloc(64);
  arena.free(a);
  arena.free(c);
  arena.free(b); // joins a, b and c
  const big = arena.alloc(290_000);
  assert.equal(big.offset, a.offset);
  arena.free(big);
  arena.free(guard);
  assert.equal(arena.usedBytes(), 0);
});

test('usedBytes tracks allocations and returns to zero', () => {
  const arena = Arena.create({ initialBytes: 1 << 20 });
  assert.equal(arena.usedBytes(), 0);
  const a = arena.alloc(1000);
  assert.ok(arena.usedBytes() >= 1000);
  const b = arena.alloc(5000);
  assert.ok(arena.usedBytes() >= 6000);
  arena.free(a);
  arena.free(b);
  assert.equal(arena.usedBytes(), 0);
});

test('bytes and buffer are views on the same memory, not copies', () => {
  const arena = Arena.create({ initialBytes: 1 << 20 });
  const block = arena.alloc(16);
  const off = block.offset;
  arena.buffer(off, 16).write('hello', 'latin1');
  assert.equal(Buffer.from(arena.bytes(off, 5)).toString('latin1'), 'hello');
  assert.ok(arena.buffer(off, 16).buffer === arena.handle.sab);
  arena.free(block);
});

test('the arena grows past its initial size and keeps earlier data', () => {
  const arena = Arena.create({ initialBytes: 64 * 1024, maxBytes: 64 << 20 });
  const first = arena.alloc(1000);
  arena.bytes(first.offset, 1000).fill(7);
  const big = arena.alloc(10 << 20);
  arena.bytes(big.offset, 10 << 20).fill(9);
  assert.ok(arena.handle.sab.byteLength >= 10 << 20);
  assert.ok(arena.bytes(first.offset, 1000).every((v) => v === 7));
  arena.free(big);
  arena.free(first);
});

test('allocating past maxBytes throws UNAVAILABLE naming the size', () => {
  const arena = Arena.create({ initialBytes: 64 * 1024, maxBytes: 1 << 20 });
  assert.throws(() => arena.alloc(2 << 20), isServerError('UNAVAILABLE', /^tensor arena exhausted: cannot allocate 2097152 bytes \(/));
  assert.throws(() => arena.alloc(2 ** 40), isServerError('UNAVAILABLE', /^tensor arena exhausted: cannot allocate 1099511627776 bytes/));
  const held: BlockRef[] = [];
  assert.throws(
    () => {
      for (;;) held.push(arena.alloc(100_000));
    },
    isServerError('UNAVAILABLE', /^tensor arena exhausted: cannot allocate 100000 bytes/),
  );
  // Still usable after the failure.
  for (const off of held) arena.free(off);
  arena.free(arena.alloc(100_000));
  assert.equal(arena.usedBytes(), 0);
});

test('free of a bad offset or a double free throws INTERNAL naming the offset', () => {
  const arena = Arena.create({ initialBytes: 1 << 20 });
  const a = arena.alloc(100);
  const keep = arena.alloc(100);
  assert.throws(() => arena.free({ offset: a.offset + 1, gen: a.gen }), isServerError('INTERNAL', new RegExp(`offset ${a.offset + 1}\\b`)));
  assert.throws(() => arena.free({ offset: 0, gen: 1 }), isServerError('INTERNAL', /offset 0\b/));
  assert.throws(() => arena.free({ offset: 1 << 30, gen: 1 }), isServerError('INTERNAL', /offset 1073741824\b/));
  arena.free(a);
  assert.throws(() => arena.free(a), isServerError('INTERNAL', new RegExp(`double free of offset ${a.offset}\\b`)));
  arena.free(keep);
  assert.throws(() => arena.free(keep), isServerError('INTERNAL', new RegExp(`offset ${keep.offset}\\b`)));
});

test('invalid sizes and options are rejected', () => {
  const arena = Arena.create({ initialBytes: 1 << 20 });
  for (const bad of [-1, 1.5, Number.NaN]) {
    assert.throws(() => arena.alloc(bad), isServerError('INTERNAL', /invalid allocation size/));
  }
  assert.throws(() => Arena.create({ maxBytes: 10 }), isServerError('INVALID_ARG', /maxBytes/));
  assert.equal(Arena.create({ maxBytes: 2 ** 40, initialBytes: 4096 }).maxBytes, ARENA_MAX_BYTES_LIMIT);
  assert.throws(() => Arena.attach({ sab: new SharedArrayBuffer(4096) }), isServerError('INTERNAL', /not a tensor arena/));
});

test('attach in the same thread shares the heap', () => {
  const arena = Arena.create({ initialBytes: 1 << 20 });
  const other = Arena.attach(arena.handle);
  const a = arena.alloc(500);
  other.buffer(a.offset, 3).write('abc', 'latin1');
  assert.equal(arena.buffer(a.offset, 3).toString('latin1'), 'abc');
  other.free(a);
  assert.equal(arena.usedBytes(), 0);
});

test('random single-thread alloc/free keeps blocks disjoint and frees everything', () => {
  const arena = Arena.create({ initialBytes: 256 * 1024 });
  let seed = 12345;
  const rand = (n: number): number => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed % n;
  };
  const live = new Map<number, { size: number; tag: number; gen: number }>();
  for (let i = 0; i < 5000; i++) {
    if (live.size > 0 && rand(2) === 0) {
      const keys = [...live.keys()];
      const off = keys[rand(keys.length)];
      const b = live.get(off)!;
      assert.ok(
        arena.bytes(off, b.size).every((v) => v === b.tag),
        `block ${off} overwritten`,
      );
      arena.free({ offset: off, gen: b.gen });
      live.delete(off);
    } else {
      const size = rand(4) === 0 ? rand(200_000) : rand(2000);
      const { offset: off, gen } = arena.alloc(size);
      const tag = i % 251;
      arena.bytes(off, size).fill(tag);
      live.set(off, { size, tag, gen });
    }
  }
  assert.deepEqual(arena.checkHeap(), []);
  for (const [offset, b] of live) arena.free({ offset, gen: b.gen });
  assert.equal(arena.usedBytes(), 0);
  assert.deepEqual(arena.checkHeap(), []);
});

test('four worker threads hammering alloc/free never get overlapping blocks', { timeout: 60_000 }, async () => {
  // Small initial size so the SAB also grows while the threads run.
  const arena = Arena.create({ initialBytes: 256 * 1024, maxBytes: 1 << 30 });
  const script = path.join(__dirname, 'fixtures', 'arena-stress-worker.js');
  const threads = [1, 2, 3, 4];
  const results = await Promise.all(
    threads.map(
      (threadId) =>
        new Promise<{ errors: string[]; allocs: number }>((resolve, reject) => {
          const w = new Worker(script, { workerData: { arena: arena.handle, threadId, iterations: 20_000, seed: threadId * 7919 } });
          w.once('message', resolve);
          w.once('error', reject);
          w.once('exit', (code) => {
            if (code !== 0) reject(new Error(`worker ${threadId} exited with ${code}`));
          });
        }),
    ),
  );
  for (const r of results) {
    assert.deepEqual(r.errors, []);
    assert.ok(r.allocs > 1000);
  }
  assert.equal(arena.usedBytes(), 0);
  assert.deepEqual(arena.checkHeap(), []);
  assert.ok(arena.handle.sab.byteLength > 256 * 1024);
});

test("a stale handle (freed, the block allocated again) is refused with INTERNAL naming offset and both generations; the new owner's block is intact", () => {
  const arena = Arena.create({ initialBytes: 1 << 20 });
  const old = arena.alloc(1000);
  const guard = arena.alloc(100); // keeps `old` off the top, so its block is reused in place
  arena.free(old);
  const now = arena.alloc(1000);
  assert.equal(now.offset, old.offset, 'same block, allocated again');
  assert.notEqual(now.gen, old.gen);
  arena.bytes(now.offset, 1000).fill(0x5a);
  const stale = new RegExp(
    `^tensor arena: stale handle: offset ${old.offset} \\(generation ${old.gen}\\), but the block there is generation ${now.gen} .*; not freed$`,
  );
  assert.throws(() => arena.free(old), isServerError('INTERNAL', stale));
  assert.match(arena.adopt(old) ?? '', new RegExp(`offset ${old.offset} \\(generation ${old.gen}\\), but the block there is generation ${now.gen}`));
  assert.throws(() => arena.give(old, 0), isServerError('INTERNAL', new RegExp(`generation ${old.gen}\\), but the block there is generation ${now.gen}`)));
  assert.ok(
    arena.bytes(now.offset, 1000).every((v) => v === 0x5a),
    "the new owner's bytes are intact",
  );
  assert.equal(arena.ownerOf(now), 0);
  assert.equal(arena.ownerOf(old), undefined);
  assert.deepEqual(arena.checkHeap(), []);
  arena.free(now);
  arena.free(guard);
  assert.equal(arena.usedBytes(), 0);
  // A handle to a block that was merged away and is free now: refused too.
  assert.throws(() => arena.free(now), isServerError('INTERNAL', new RegExp(`offset ${now.offset}\\b`)));
});

test('each allocation gets a new generation; an offset that is no block position is refused by adopt and give', () => {
  const arena = Arena.create({ initialBytes: 1 << 20 });
  const gens = new Set<number>();
  for (let i = 0; i < 100; i++) {
    const b = arena.alloc(64);
    gens.add(b.gen);
    arena.free(b);
  }
  assert.equal(gens.size, 100);
  assert.throws(() => arena.adopt({ offset: 100, gen: 1 }), isServerError('INTERNAL', /adopt of offset 100 \(generation 1\), which is not a block/));
  assert.throws(() => arena.give({ offset: 2 ** 31, gen: 1 }, 0), isServerError('INTERNAL', /give of offset 2147483648/));
});

test('a reader sees the bytes in place but may not alloc, free, adopt or give', () => {
  const arena = Arena.create({ initialBytes: 1 << 16 });
  const block = arena.alloc(64);
  arena.bytes(block.offset, 64).fill(9);
  const reader = Arena.reader(arena.handle);
  assert.ok(reader.bytes(block.offset, 64).every((v) => v === 9));
  for (const [what, call] of [
    ['alloc', () => reader.alloc(8)],
    ['free', () => reader.free(block)],
    ['adopt', () => reader.adopt(block)],
    ['give', () => reader.give(block, 0)],
  ] as const) {
    assert.throws(
      call,
      (e: unknown) => e instanceof ServerError && e.code === 'INTERNAL' && e.message === `tensor arena: ${what} on a read-only view (Arena.reader)`,
    );
  }
  arena.free(block);
  assert.equal(arena.usedBytes(), 0);
});
