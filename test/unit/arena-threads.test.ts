/**
 * The tensor arena with real threads that die: the lock taken over from a
 * dead holder, blocks of a dead thread swept, ownership moving between
 * threads (adopt, give). Every thread here is a real worker thread on the
 * same arena; a watchdog thread kills the process should the main thread
 * block for good (a timer on the main thread could not fire then).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { Arena, type BlockRef } from '../../src/dataplane/arena';
import { W_LOCK, ownerIdOf } from '../../src/dataplane/arena-layout';
import { MAIN_GIVE_UP_MS } from '../../src/dataplane/arena-lock';
import { ServerError } from '../../src/core/errors';
import { adoptOutputs } from '../../src/dataplane/adopt-outputs';

const THREAD = path.join(__dirname, 'fixtures', 'arena-thread-worker.js');

/** Each worker's exit, listened for from its start: a short-lived one may exit before a test awaits it. */
const exits = new WeakMap<Worker, Promise<number>>();

function spawn(arena: Arena, mode: string, extra: Record<string, unknown> = {}): Worker {
  const w = new Worker(THREAD, { workerData: { arena: arena.handle, mode, ...extra } });
  exits.set(w, new Promise((resolve) => w.once('exit', resolve)));
  return w;
}

function message<T>(w: Worker): Promise<T> {
  return new Promise((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });
}

function exited(w: Worker): Promise<number> {
  return exits.get(w) ?? new Promise((resolve) => w.once('exit', resolve));
}

/** Kills the process if the main thread is not petted within limitMs; stop() ends it. */
function watchdog(limitMs: number): { pet(): void; stop(): void } {
  const flag = new Int32Array(new SharedArrayBuffer(8));
  const w = new Worker(path.join(__dirname, 'fixtures', 'watchdog-worker.js'), { workerData: { flag, limitMs } });
  w.unref();
  return {
    pet: () => {
      Atomics.add(flag, 0, 1);
      Atomics.notify(flag, 0);
    },
    stop: () => {
      Atomics.store(flag, 1, 1);
      Atomics.add(flag, 0, 1);
      Atomics.notify(flag, 0);
    },
  };
}

function isServerError(code: string, text: RegExp): (err: unknown) => boolean {
  return (err) => err instanceof ServerError && err.code === code && text.test(err.message);
}

test(
  'a thread terminated at random moments inside alloc/free: the main thread never hangs, threadDied takes the lock over, repairs the heap and reclaims its blocks',
  { timeout: 120_000 },
  async (t) => {
    const arena = Arena.create({ initialBytes: 1 << 20, maxBytes: 512 << 20 });
    const keep = arena.alloc(1000);
    const baseline = arena.usedBytes();
    const dog = watchdog(15_000);
    let seed = 99;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed % n;
    };
    let tookOver = 0;
    let gaveUp = 0;
    try {
      for (let round = 0; round < 30; round++) {
        const w = spawn(arena, 'churn', { seed: round + 1 });
        const tid = w.threadId;
        await message(w); // running: past its first 1000 alloc/free
        await new Promise((r) => setTimeout(r, rand(8)));
        await w.terminate();
        dog.pet();
        if (round % 5 === 4) {
          // Before the death is reported: a bounded wait (UNAVAILABLE) if the dead thread holds the lock, never a hang.
          const t0 = performance.now();
          try {
            arena.free(arena.alloc(64));
          } catch (err) {
            assert.ok(isServerError('UNAVAILABLE', new RegExp(`lock has been held by thread ${tid} for \\d+ ms`))(err), String(err));
            gaveUp++;
          }
          assert.ok(performance.now() - t0 < MAIN_GIVE_UP_MS + 2000, `waited ${performance.now() - t0} ms`);
          dog.pet();
        }
        const died = arena.threadDied(tid);
        dog.pet();
        assert.equal(died.deferred, false);
        if (died.tookOver) tookOver++;
        const after = arena.alloc(5000);
        arena.bytes(after.offset, 5000).fill(1);
        arena.free(after);
        dog.pet();
        assert.deepEqual(arena.checkHeap(), [], `round ${round}`);
        assert.equal(arena.usedBytes(), baseline, `round ${round}: the dead thread's blocks are reclaimed`);
        assert.equal(arena.ownerOf(keep), 0, "the main thread's block is untouched");
      }
    } finally {
      dog.stop();
    }
    t.diagnostic(`30 rounds: ${tookOver} died holding the lock, ${gaveUp} of 6 early allocs gave up`);
    // The point of the test: some terminations did land inside a critical section.
    assert.ok(tookOver >= 1, `no round took the lock over (gave up ${gaveUp} times)`);
    assert.equal(arena.repairs(), tookOver);
    arena.free(keep);
    assert.equal(arena.usedBytes(), 0);
  },
);

test(
  'the main thread gives up on a lock held by a dead, unreported thread within its bound; a free waits; threadDied takes over and does it',
  { timeout: 30_000 },
  async () => {
    const arena = Arena.create({ initialBytes: 1 << 20 });
    const mine = arena.alloc(100);
    const w = spawn(arena, 'hold');
    const tid = w.threadId;
    const { block } = await message<{ block: BlockRef }>(w);
    await w.terminate();
    assert.equal(arena.ownerOf(block), tid);
    const before = arena.usedBytes();
    const dog = watchdog(10_000);
    try {
      const t0 = performance.now();
      assert.throws(() => arena.alloc(10), isServerError('UNAVAILABLE', new RegExp(`cannot allocate 10 bytes, its lock has been held by thread ${tid}`)));
      const waited = performance.now() - t0;
      assert.ok(waited >= MAIN_GIVE_UP_MS - 20 && waited < MAIN_GIVE_UP_MS + 2000, `waited ${waited} ms`);
      dog.pet();
      arena.free(mine); // deferred: returns after the bound
      assert.equal(arena.usedBytes(), before, 'nothing freed yet');
      dog.pet();
      const died = arena.threadDied(tid);
      assert.deepEqual(died, { blocks: 1, bytes: 32 * 64, tookOver: true, deferred: false });
    } finally {
      dog.stop();
    }
    assert.equal(arena.usedBytes(), 0, 'the deferred free and the sweep both done');
    assert.deepEqual(arena.checkHeap(), []);
    assert.equal(arena.repairs(), 1);
    assert.equal(arena.ownerOf(block), undefined);
  },
);

test('a waiter on another thread takes over a lock whose holder is not a live thread, without waiting for threadDied', { timeout: 30_000 }, async () => {
  const arena = Arena.create({ initialBytes: 1 << 20 });
  // A holder id no thread has: as if it had been reported dead already.
  Atomics.store(new Int32Array(arena.handle.sab, 0, 16), W_LOCK, ownerIdOf(1_000_000) << 1);
  const w = spawn(arena, 'alloc-once');
  const tid = w.threadId;
  const { block, ms } = await message<{ block: BlockRef; ms: number }>(w);
  await exited(w);
  assert.ok(ms < MAIN_GIVE_UP_MS, `the worker waited ${ms} ms`);
  assert.equal(arena.repairs(), 1);
  assert.equal(arena.ownerOf(block), tid);
  assert.deepEqual(arena.threadDied(tid), { blocks: 1, bytes: 4 * 64, tookOver: false, deferred: false });
  assert.equal(arena.usedBytes(), 0);
  assert.deepEqual(arena.checkHeap(), []);
});

test(
  "adopt: blocks sent by a live thread become main's and outlive it; after the sender's sweep, adopt refuses with the offset and generation",
  { timeout: 30_000 },
  async () => {
    const arena = Arena.create({ initialBytes: 1 << 20 });
    // Adopted before the sender is reported dead: main's, and its sweep leaves them alone.
    const a = spawn(arena, 'post', { count: 3 });
    const aTid = a.threadId;
    const { blocks: sent } = await message<{ blocks: BlockRef[] }>(a);
    for (const b of sent) assert.equal(arena.adopt(b), undefined);
    await exited(a);
    assert.equal(arena.threadDied(aTid).blocks, 0);
    for (const [i, b] of sent.entries()) {
      assert.equal(arena.ownerOf(b), 0);
      assert.ok(
        arena.bytes(b.offset, 4096).every((v) => v === i + 1),
        'adopted bytes intact',
      );
      arena.free(b);
    }
    assert.equal(arena.usedBytes(), 0);

    // The sender died and was swept before its blocks were adopted: refused, reclaimed, never freed twice.
    const d = spawn(arena, 'post', { count: 2 });
    const dTid = d.threadId;
    const { blocks: lost } = await message<{ blocks: BlockRef[] }>(d);
    await exited(d);
    assert.deepEqual(arena.threadDied(dTid), { blocks: 2, bytes: 2 * 128 * 64, tookOver: false, deferred: false });
    assert.equal(arena.usedBytes(), 0);
    const mineNow = arena.alloc(4096); // may reuse a reclaimed block: a new generation
    for (const b of lost) {
      const why = arena.adopt(b);
      assert.match(why ?? '', new RegExp(`offset ${b.offset} \\(generation ${b.gen}\\)`));
    }
    assert.equal(arena.ownerOf(mineNow), 0, "a failed adopt takes nothing from the block's new owner");

    // What worker-instance.ts makes of it: that response fails with a reason; its other, adoptable output is freed.
    const fine = arena.alloc(100);
    const responses = adoptOutputs(
      arena,
      [
        {
          outputs: [
            { name: 'A', datatype: 'UINT8', shape: [100], offset: fine.offset, gen: fine.gen, byteSize: 100 },
            { name: 'B', datatype: 'UINT8', shape: [4096], ...lost[0]!, byteSize: 4096 },
          ],
          final: true,
        },
      ],
      'm_0',
    );
    assert.equal(responses[0]!.error?.code, 'INTERNAL');
    assert.match(
      responses[0]!.error!.message,
      new RegExp(`^instance m_0 died while its outputs were in flight \\(output 'B': .*offset ${lost[0]!.offset} \\(generation ${lost[0]!.gen}\\)`),
    );
    assert.deepEqual(responses[0]!.outputs, []);
    arena.free(mineNow);
    assert.equal(arena.usedBytes(), 0, 'the adopted output of the failed response was freed');
    assert.deepEqual(arena.checkHeap(), []);
  },
);

test("adopt and give of a block that lies where another thread grew the arena, beyond this thread's views", { timeout: 30_000 }, async () => {
  const arena = Arena.create({ initialBytes: 1 << 20 });
  const holder = spawn(arena, 'hold-still');
  await message(holder);
  // The second block's header lies beyond the first megabyte, where main's views end.
  const a = spawn(arena, 'post', { count: 2, size: 2 << 20 });
  const aTid = a.threadId;
  const hTid = holder.threadId;
  const {
    blocks: [first, big],
  } = await message<{ blocks: BlockRef[] }>(a);
  assert.equal(arena.adopt(big!), undefined);
  assert.equal(arena.adopt(first!), undefined);
  arena.free(first!);
  assert.equal(arena.give(big!, hTid), true);
  assert.equal(arena.ownerOf(big!), hTid);
  await exited(a);
  arena.threadDied(aTid);
  await holder.terminate();
  assert.equal(arena.threadDied(hTid).blocks, 1);
  assert.equal(arena.usedBytes(), 0);
});

test(
  "give: a block handed to a live thread is its own, and that thread's sweep reclaims it; a thread reported dead is refused",
  { timeout: 30_000 },
  async () => {
    const arena = Arena.create({ initialBytes: 1 << 20 });
    const w = spawn(arena, 'hold-still');
    const tid = w.threadId;
    await message(w); // attached
    const b = arena.alloc(3000);
    assert.equal(arena.give(b, tid), true);
    assert.equal(arena.ownerOf(b), tid);
    await w.terminate();
    assert.equal(arena.threadDied(tid).blocks, 1);
    assert.equal(arena.usedBytes(), 0);
    const c = arena.alloc(3000);
    assert.equal(arena.give(c, tid), false, "the receiver is dead: the block stays main's");
    assert.equal(arena.ownerOf(c), 0);
    assert.throws(() => arena.give(b, 0), isServerError('INTERNAL', new RegExp(`offset ${b.offset} \\(generation ${b.gen}\\)`)));
    arena.free(c);
    assert.equal(arena.usedBytes(), 0);
  },
);
