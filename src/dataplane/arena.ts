/**
 * The shared tensor arena: one growable SharedArrayBuffer that every thread
 * attaches to, so tensor bytes cross threads as offsets, never as clones.
 *
 * Allocator: the heap is a sequence of blocks, each a 64-byte header followed
 * by its data (so data is 64-byte aligned). Sizes are counted in 64-byte
 * granules. Free blocks sit on segregated free lists, one per power-of-two
 * size class (class k holds blocks of 2^k .. 2^(k+1)-1 granules), with a
 * bitmap of non-empty classes. Free blocks coalesce with their physical
 * neighbours (boundary tag: each header stores the previous block's size), and
 * a free block at the end of the heap goes back to the untouched "wilderness"
 * above `top`. Small requests round up to a power of two so freed blocks are
 * reused exactly. All of it runs under one futex lock in the SAB, so any
 * thread may alloc and free.
 *
 * Growth: the SAB grows in place (a growable SAB never moves), so views made
 * earlier stay valid; length-tracking views in other threads see the new
 * length. V8 in Node 20 caps a growable SAB at 4 GiB, so maxBytes is clamped
 * to ARENA_MAX_BYTES_LIMIT.
 */
import { ServerError } from '../core/errors';

export interface ArenaHandle {
  sab: SharedArrayBuffer;
}

/** The largest maxByteLength Node 20's V8 accepts for a growable SharedArrayBuffer. */
export const ARENA_MAX_BYTES_LIMIT = 2 ** 32;

const GRANULE = 64;
const WORDS_PER_GRANULE = GRANULE / 4;
const DEFAULT_INITIAL_BYTES = 64 * 1024 * 1024;
/** Growth step floor, so many small allocations do not grow the SAB one by one. */
const MIN_GROWTH_BYTES = 4 * 1024 * 1024;
/** Requests up to this many granules (64 KiB) round up to a power of two. */
const ROUND_POW2_MAX_GRANULES = 1024;

// Arena header (granules 0..HEADER_GRANULES-1), as 32-bit word indices.
const W_LOCK = 0; // futex: 0 free, 1 held, 2 held with waiters
const W_MAGIC = 1;
const W_TOP = 2; // first granule of the wilderness
const W_LAST = 3; // size of the block just below top (0: none)
const W_USED = 4; // granules held by allocated blocks
const W_BITMAP = 5; // bit k set: class k has free blocks
const W_HEADS = 16; // CLASSES words: head granule of each free list (0: empty)
const HEADER_GRANULES = 4;
const ARENA_MAGIC = 0x4e544152; // "NTAR"

// Block header, word offsets from the block's first word.
const B_STATE = 0;
const B_SIZE = 1; // granules, header included
const B_PREV = 2; // size of the physically previous block (0: first block)
const B_NEXT_FREE = 3;
const B_PREV_FREE = 4;
const USED = 0x55534544;
const FREE = 0x46524545;

/** Spins before sleeping on the lock; the critical section is a few hundred ns. */
const LOCK_SPINS = 64;

/** Growable SharedArrayBuffer (ES2024; the project's lib is ES2022, Node 20 has it). */
interface GrowableSab extends SharedArrayBuffer {
  readonly maxByteLength: number;
  grow(newByteLength: number): void;
}
const GrowableSab = SharedArrayBuffer as unknown as new (length: number, options: { maxByteLength: number }) => GrowableSab;

export class Arena {
  readonly handle: ArenaHandle;
  private readonly sab: GrowableSab;
  /** Length-tracking views: they follow the SAB as it grows. */
  private readonly i32: Int32Array;
  private readonly u32: Uint32Array;

  private constructor(sab: SharedArrayBuffer) {
    this.sab = sab as GrowableSab;
    this.handle = { sab };
    this.i32 = new Int32Array(sab);
    this.u32 = new Uint32Array(sab);
  }

  static create(options: { initialBytes?: number; maxBytes?: number } = {}): Arena {
    const maxBytes = Math.min(options.maxBytes ?? ARENA_MAX_BYTES_LIMIT, ARENA_MAX_BYTES_LIMIT);
    const minBytes = (HEADER_GRANULES + 1) * GRANULE;
    if (!(maxBytes >= minBytes)) {
      throw new ServerError('INVALID_ARG', `tensor arena maxBytes must be at least ${minBytes}, got ${options.maxBytes}`);
    }
    let initial = options.initialBytes ?? DEFAULT_INITIAL_BYTES;
    if (!(initial >= 0)) {
      throw new ServerError('INVALID_ARG', `tensor arena initialBytes must be >= 0, got ${options.initialBytes}`);
    }
    initial = Math.min(Math.max(roundUp(initial, GRANULE), minBytes), floorTo(maxBytes, GRANULE));
    const sab = new GrowableSab(initial, { maxByteLength: floorTo(maxBytes, GRANULE) });
    const arena = new Arena(sab);
    arena.u32[W_TOP] = HEADER_GRANULES;
    Atomics.store(arena.u32, W_MAGIC, ARENA_MAGIC);
    return arena;
  }

  static attach(handle: ArenaHandle): Arena {
    const sab = handle?.sab;
    if (!(sab instanceof SharedArrayBuffer) || sab.byteLength < HEADER_GRANULES * GRANULE ||
        Atomics.load(new Uint32Array(sab, 0, HEADER_GRANULES * WORDS_PER_GRANULE), W_MAGIC) !== ARENA_MAGIC) {
      throw new ServerError('INTERNAL', 'Arena.attach: the handle is not a tensor arena created by Arena.create');
    }
    return new Arena(sab);
  }

  /** The most bytes the SAB may grow to. */
  get maxBytes(): number {
    return this.sab.maxByteLength;
  }

  /** Bytes held by allocated blocks, headers and rounding included. */
  usedBytes(): number {
    return Atomics.load(this.u32, W_USED) * GRANULE;
  }

  /** Allocates byteSize bytes (64-byte aligned); returns the data's byte offset. */
  alloc(byteSize: number): number {
    if (!Number.isInteger(byteSize) || byteSize < 0) {
      throw new ServerError('INTERNAL', `tensor arena: invalid allocation size ${byteSize}`);
    }
    if (byteSize > this.sab.maxByteLength) throw this.exhausted(byteSize);
    let n = 1 + Math.ceil(byteSize / GRANULE);
    if (n <= ROUND_POW2_MAX_GRANULES) n = pow2Ceil(n);
    this.lock();
    try {
      const b = this.takeFree(n) || this.takeTop(n, byteSize);
      this.u32[W_USED] += this.u32[b * WORDS_PER_GRANULE + B_SIZE];
      return (b + 1) * GRANULE;
    } finally {
      this.unlock();
    }
  }

  free(offset: number): void {
    this.lock();
    try {
      this.release(offset);
    } finally {
      this.unlock();
    }
  }

  bytes(offset: number, byteSize: number): Uint8Array {
    return new Uint8Array(this.sab, offset, byteSize);
  }

  buffer(offset: number, byteSize: number): Buffer {
    return Buffer.from(this.sab, offset, byteSize);
  }

  // ---- allocator internals (all called with the lock held) ----

  /** First fit in n's own class, else the head of the smallest larger non-empty class. 0: none. */
  private takeFree(n: number): number {
    const u = this.u32;
    const k = 31 - Math.clz32(n);
    for (let b = u[W_HEADS + k]; b !== 0; b = u[b * WORDS_PER_GRANULE + B_NEXT_FREE]) {
      if (u[b * WORDS_PER_GRANULE + B_SIZE] >= n) return this.useFree(b, n);
    }
    const larger = k >= 31 ? 0 : (u[W_BITMAP] & ~((2 << k) - 1));
    if (larger === 0) return 0;
    const j = 31 - Math.clz32(larger & -larger);
    return this.useFree(u[W_HEADS + j], n);
  }

  /** Takes free block b for n granules, splitting off the rest as a free block. */
  private useFree(b: number, n: number): number {
    const u = this.u32;
    const h = b * WORDS_PER_GRANULE;
    const size = u[h + B_SIZE];
    this.unlink(b);
    u[h + B_STATE] = USED;
    if (size > n) {
      const r = b + n;
      const rh = r * WORDS_PER_GRANULE;
      u[h + B_SIZE] = n;
      u[rh + B_SIZE] = size - n;
      u[rh + B_PREV] = n;
      u[rh + B_STATE] = FREE;
      // A free block is never the last one below top, so b + size is a block.
      u[(b + size) * WORDS_PER_GRANULE + B_PREV] = size - n;
      this.link(r);
    }
    return b;
  }

  /** Carves n granules from the wilderness, growing the SAB if needed. */
  private takeTop(n: number, byteSize: number): number {
    const u = this.u32;
    const b = u[W_TOP];
    const needBytes = (b + n) * GRANULE;
    if (needBytes > this.sab.byteLength) this.grow(needBytes, byteSize);
    const h = b * WORDS_PER_GRANULE;
    u[h + B_STATE] = USED;
    u[h + B_SIZE] = n;
    u[h + B_PREV] = u[W_LAST];
    u[W_TOP] = b + n;
    u[W_LAST] = n;
    return b;
  }

  private grow(needBytes: number, byteSize: number): void {
    const max = this.sab.maxByteLength;
    if (needBytes > max) throw this.exhausted(byteSize);
    const cur = this.sab.byteLength;
    const target = Math.min(max, Math.max(needBytes, cur * 2, cur + MIN_GROWTH_BYTES));
    try {
      this.sab.grow(floorTo(target, GRANULE));
    } catch (err) {
      throw new ServerError('UNAVAILABLE',
        `tensor arena exhausted: cannot allocate ${byteSize} bytes (growing to ${target} bytes failed: ` +
        `${(err as Error).message})`);
    }
  }

  private exhausted(byteSize: number): ServerError {
    return new ServerError('UNAVAILABLE',
      `tensor arena exhausted: cannot allocate ${byteSize} bytes (${Atomics.load(this.u32, W_USED) * GRANULE} bytes ` +
      `in use, ${this.sab.maxByteLength} bytes max)`);
  }

  private release(offset: number): void {
    const u = this.u32;
    const top = u[W_TOP];
    let b = offset / GRANULE - 1;
    if (!Number.isInteger(b) || b < HEADER_GRANULES || b >= top || u[b * WORDS_PER_GRANULE + B_STATE] !== USED) {
      const state = Number.isInteger(b) && b >= HEADER_GRANULES && b < top ? u[b * WORDS_PER_GRANULE + B_STATE] : 0;
      throw new ServerError('INTERNAL', state === FREE
        ? `tensor arena: double free of offset ${offset}`
        : `tensor arena: free of offset ${offset}, which is not an allocated block`);
    }
    let size = u[b * WORDS_PER_GRANULE + B_SIZE];
    const next = b + size;
    if (next < top && u[next * WORDS_PER_GRANULE + B_PREV] !== size) {
      throw new ServerError('INTERNAL', `tensor arena: corrupt block header at offset ${offset}`);
    }
    u[W_USED] -= size;
    u[b * WORDS_PER_GRANULE + B_STATE] = FREE;

    if (next < top && u[next * WORDS_PER_GRANULE + B_STATE] === FREE) {
      this.unlink(next);
      size += u[next * WORDS_PER_GRANULE + B_SIZE];
      u[next * WORDS_PER_GRANULE + B_STATE] = 0; // an absorbed header must not look like a block
    }
    const prevSize = u[b * WORDS_PER_GRANULE + B_PREV];
    if (prevSize !== 0 && u[(b - prevSize) * WORDS_PER_GRANULE + B_STATE] === FREE) {
      const p = b - prevSize;
      this.unlink(p);
      size += prevSize;
      u[b * WORDS_PER_GRANULE + B_STATE] = 0;
      b = p;
    }
    const h = b * WORDS_PER_GRANULE;
    if (b + size === top) {
      // Back to the wilderness; the block below b (if any) is in use.
      u[h + B_STATE] = 0;
      u[W_TOP] = b;
      u[W_LAST] = u[h + B_PREV];
      return;
    }
    u[h + B_SIZE] = size;
    u[(b + size) * WORDS_PER_GRANULE + B_PREV] = size;
    this.link(b);
  }

  private link(b: number): void {
    const u = this.u32;
    const h = b * WORDS_PER_GRANULE;
    const k = 31 - Math.clz32(u[h + B_SIZE]);
    const head = u[W_HEADS + k];
    u[h + B_STATE] = FREE;
    u[h + B_NEXT_FREE] = head;
    u[h + B_PREV_FREE] = 0;
    if (head !== 0) u[head * WORDS_PER_GRANULE + B_PREV_FREE] = b;
    u[W_HEADS + k] = b;
    u[W_BITMAP] |= 1 << k;
  }

  private unlink(b: number): void {
    const u = this.u32;
    const h = b * WORDS_PER_GRANULE;
    const k = 31 - Math.clz32(u[h + B_SIZE]);
    const next = u[h + B_NEXT_FREE];
    const prev = u[h + B_PREV_FREE];
    if (prev !== 0) u[prev * WORDS_PER_GRANULE + B_NEXT_FREE] = next;
    else u[W_HEADS + k] = next;
    if (next !== 0) u[next * WORDS_PER_GRANULE + B_PREV_FREE] = prev;
    if (u[W_HEADS + k] === 0) u[W_BITMAP] &= ~(1 << k);
  }

  // ---- futex lock (Drepper's "mutex2"); Atomics give the happens-before for the plain header writes ----

  private lock(): void {
    const i32 = this.i32;
    let c = Atomics.compareExchange(i32, W_LOCK, 0, 1);
    if (c === 0) return;
    for (let i = 0; i < LOCK_SPINS; i++) {
      if (Atomics.load(i32, W_LOCK) === 0) {
        c = Atomics.compareExchange(i32, W_LOCK, 0, 1);
        if (c === 0) return;
      }
    }
    if (c !== 2) c = Atomics.exchange(i32, W_LOCK, 2);
    while (c !== 0) {
      Atomics.wait(i32, W_LOCK, 2);
      c = Atomics.exchange(i32, W_LOCK, 2);
    }
  }

  private unlock(): void {
    if (Atomics.sub(this.i32, W_LOCK, 1) !== 1) {
      Atomics.store(this.i32, W_LOCK, 0);
      Atomics.notify(this.i32, W_LOCK, 1);
    }
  }
}

function roundUp(x: number, m: number): number {
  return Math.ceil(x / m) * m;
}

function floorTo(x: number, m: number): number {
  return Math.floor(x / m) * m;
}

function pow2Ceil(n: number): number {
  return n <= 1 ? 1 : 2 ** (32 - Math.clz32(n - 1));
}
