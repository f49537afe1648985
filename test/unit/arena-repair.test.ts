/**
 * The repair walk (src/dataplane/arena-repair.ts) against heaps interrupted
 * at every step of every heap operation (src/dataplane/arena-heap.ts): each
 * operation runs once on a copy of a prepared heap through a Proxy that
 * records its stores; then for every prefix of those stores, a fresh copy
 * gets just that prefix (a thread that died after store k), is repaired, and
 * must be sound (checkHeap), hold either the old or the new set of allocated
 * blocks, never have had a live block's data written, and keep working.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Arena, type BlockRef } from '../../src/dataplane/arena';
import { link, release, takeFree, takeTop, unlink } from '../../src/dataplane/arena-heap';
import {
  B_GEN,
  B_OWNER,
  B_PREV,
  B_SIZE,
  B_STATE,
  FREE,
  GRANULE,
  HEADER_GRANULES,
  USED,
  W_TOP,
  W_USED,
  WORDS_PER_GRANULE as G,
} from '../../src/dataplane/arena-layout';
import { checkHeap, repairHeap } from '../../src/dataplane/arena-repair';
import { ServerError } from '../../src/core/errors';

const DEAD = 77; // owner id of the thread that "dies" mid-operation
const GEN = 0xabc;

type Op = (u: Uint32Array) => void;
interface Scenario {
  name: string;
  /** Lays out blocks with a real Arena; returns the operation to interrupt. */
  setup(arena: Arena): Op;
}

const gran = (b: BlockRef): number => b.offset / GRANULE - 1;

const SCENARIOS: Scenario[] = [
  {
    name: 'alloc: split a free block',
    setup: (a) => {
      const x = a.alloc(10 * 64);
      a.alloc(64);
      a.free(x); // a 16-granule hole
      return (u) => {
        takeFree(u, 2, DEAD, GEN);
      };
    },
  },
  {
    name: 'alloc: exact fit',
    setup: (a) => {
      const x = a.alloc(10 * 64);
      a.alloc(64);
      a.free(x);
      return (u) => {
        takeFree(u, 16, DEAD, GEN);
      };
    },
  },
  {
    name: 'alloc: split from a larger class',
    setup: (a) => {
      const x = a.alloc(60 * 64);
      a.alloc(64);
      a.free(x); // 64 granules
      const y = a.alloc(3 * 64);
      a.alloc(64);
      a.free(y); // a 4-granule hole elsewhere, too small for 8
      return (u) => {
        takeFree(u, 8, DEAD, GEN);
      };
    },
  },
  {
    name: 'alloc: at top',
    setup: (a) => {
      a.alloc(100);
      return (u) => {
        takeTop(u, 8, DEAD, GEN);
      };
    },
  },
  {
    name: 'free: no free neighbour',
    setup: (a) => {
      a.alloc(100);
      const b = a.alloc(1000);
      a.alloc(100);
      return (u) => release(u, gran(b));
    },
  },
  {
    name: 'free: merge with the next block',
    setup: (a) => {
      a.alloc(100);
      const b = a.alloc(1000);
      const c = a.alloc(2000);
      a.alloc(100);
      a.free(c);
      return (u) => release(u, gran(b));
    },
  },
  {
    name: 'free: merge with the previous block',
    setup: (a) => {
      a.alloc(100);
      const p = a.alloc(3000);
      const b = a.alloc(1000);
      a.alloc(100);
      a.free(p);
      return (u) => release(u, gran(b));
    },
  },
  {
    name: 'free: merge with both neighbours',
    setup: (a) => {
      a.alloc(100);
      const p = a.alloc(3000);
      const b = a.alloc(1000);
      const n = a.alloc(5000);
      a.alloc(100);
      a.free(p);
      a.free(n);
      return (u) => release(u, gran(b));
    },
  },
  {
    name: 'free: the last block goes back to the wilderness',
    setup: (a) => {
      a.alloc(100);
      const b = a.alloc(1000);
      return (u) => release(u, gran(b));
    },
  },
  {
    name: 'free: the last block and the free one before it go back to the wilderness',
    setup: (a) => {
      a.alloc(100);
      const p = a.alloc(3000);
      const b = a.alloc(1000);
      a.free(p);
      return (u) => release(u, gran(b));
    },
  },
  {
    name: 'free: the only block',
    setup: (a) => {
      const b = a.alloc(1000);
      return (u) => release(u, gran(b));
    },
  },
];

/** A copy of the arena's whole SAB as a plain Uint32Array. */
function snapshot(arena: Arena): Uint32Array {
  return new Uint32Array(arena.handle.sab.slice(0));
}

/** Runs op on a copy of `heap`, returning the (word index, value) of each store, in order. */
function record(heap: Uint32Array, op: Op): [number, number][] {
  const writes: [number, number][] = [];
  const copy = heap.slice();
  const proxy = new Proxy(copy, {
    get: (t, k) => Reflect.get(t, k),
    set: (t, k, v: number) => {
      const i = Number(k);
      t[i] = v;
      writes.push([i, t[i]!]);
      return true;
    },
  });
  op(proxy);
  return writes;
}

/** Allocated blocks of a sound heap: granule → `owner:gen`. */
function usedBlocks(u: Uint32Array): Map<number, string> {
  const out = new Map<number, string>();
  for (let b = HEADER_GRANULES; b < u[W_TOP]!; b += u[b * G + B_SIZE]!) {
    if (u[b * G + B_STATE] === USED) out.set(b, `${u[b * G + B_OWNER]}:${u[b * G + B_GEN]}`);
  }
  return out;
}

function sizes(u: Uint32Array): Map<number, number> {
  const out = new Map<number, number>();
  for (const b of usedBlocks(u).keys()) out.set(b, u[b * G + B_SIZE]!);
  return out;
}

/** The heap still works: an allocation (from the lists or at top) and its free leave it sound. */
function stillWorks(u: Uint32Array): void {
  const b = takeFree(u, 2, 1, 1) || takeTop(u, 2, 1, 1);
  assert.deepEqual(checkHeap(u), []);
  release(u, b);
  assert.deepEqual(checkHeap(u), []);
}

function prefix(heap: Uint32Array, writes: [number, number][], k: number): Uint32Array {
  const u = heap.slice();
  for (let i = 0; i < k; i++) u[writes[i]![0]] = writes[i]![1];
  return u;
}

/** Every prefix of op's stores, repaired, is sound and is the heap before or after op. Returns how many prefixes. */
function interruptEverywhere(heap: Uint32Array, op: Op, label: string): number {
  assert.deepEqual(checkHeap(heap), [], `${label}: the prepared heap`);
  const writes = record(heap, op);
  assert.ok(writes.length > 0);
  const after = prefix(heap, writes, writes.length);
  assert.deepEqual(checkHeap(after), [], `${label}: the completed operation`);
  const liveData = sizes(heap);
  for (const [i] of writes) {
    const g = Math.floor(i / G);
    for (const [b, n] of liveData) {
      assert.ok(!(g > b && g < b + n), `${label}: store to word ${i} is inside the data of live block ${b}`);
    }
  }
  const before = [...usedBlocks(heap)].sort().join();
  const done = [...usedBlocks(after)].sort().join();
  for (let k = 0; k <= writes.length; k++) {
    const u = prefix(heap, writes, k);
    repairHeap(u);
    assert.deepEqual(checkHeap(u), [], `${label}: died after store ${k} of ${writes.length}`);
    const now = [...usedBlocks(u)].sort().join();
    assert.ok(now === before || now === done, `${label}, store ${k}: allocated blocks ${now}, expected ${before} or ${done}`);
    let used = 0;
    for (const n of sizes(u).values()) used += n;
    assert.equal(u[W_USED], used);
    stillWorks(u);
  }
  return writes.length;
}

for (const s of SCENARIOS) {
  test(`repair after a death at each store of "${s.name}": sound, old or new blocks, still works`, () => {
    const arena = Arena.create({ initialBytes: 1 << 20 });
    const op = s.setup(arena);
    const heap = snapshot(arena);
    const n = interruptEverywhere(heap, op, s.name);
    assert.ok(n >= 3, `${s.name}: only ${n} stores recorded`);
  });
}

test('repair itself, interrupted at each of its stores, leaves a heap the next repair fixes', () => {
  for (const s of SCENARIOS) {
    const arena = Arena.create({ initialBytes: 1 << 20 });
    const op = s.setup(arena);
    const heap = snapshot(arena);
    const writes = record(heap, op);
    for (let k = 0; k <= writes.length; k++) {
      const damaged = prefix(heap, writes, k);
      const repairWrites = record(damaged, repairHeap);
      for (let j = 0; j <= repairWrites.length; j++) {
        const u = prefix(damaged, repairWrites, j);
        repairHeap(u);
        assert.deepEqual(checkHeap(u), [], `${s.name}: died after store ${k}, repair died after its store ${j}`);
      }
    }
  }
});

test('the harness fails a write order that breaks the tiling (the old release: absorbed header cleared before the merged size was stored)', () => {
  const arena = Arena.create({ initialBytes: 1 << 20 });
  arena.alloc(100);
  const b = arena.alloc(1000);
  const c = arena.alloc(2000);
  arena.alloc(100);
  arena.free(c);
  const heap = snapshot(arena);
  const oldRelease: Op = (u) => {
    const x = gran(b);
    let size = u[x * G + B_SIZE]!;
    const next = x + size;
    u[W_USED] -= size;
    u[x * G + B_STATE] = FREE;
    unlink(u, next);
    size += u[next * G + B_SIZE]!;
    u[next * G + B_STATE] = 0;
    u[x * G + B_SIZE] = size;
    u[(x + size) * G + B_PREV] = size;
    link(u, x);
  };
  assert.throws(
    () => interruptEverywhere(heap, oldRelease, 'old release'),
    (err: unknown) => err instanceof ServerError && /heap corrupt at granule \d+ \(size \d+, state 0x0/.test(err.message),
  );
});

test('checkHeap reports, and repair refuses, a heap whose tiling itself is broken', () => {
  const arena = Arena.create({ initialBytes: 1 << 20 });
  arena.alloc(100);
  const b = arena.alloc(1000);
  arena.alloc(100);
  const u = snapshot(arena);
  u[gran(b) * G + B_SIZE] = 3; // now points into the middle of b's data
  assert.ok(checkHeap(u).length > 0);
  assert.throws(
    () => repairHeap(u),
    (err: unknown) => err instanceof ServerError && err.code === 'INTERNAL' && /heap corrupt/.test(err.message),
  );
});
