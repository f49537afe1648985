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
 * reused exactly. Layout of the header words: arena-layout.ts; the heap
 * operations: arena-heap.ts; growth and the checked free: arena-sizing.ts.
 *
 * Threads that die. Any thread may alloc and free, under one lock in the SAB
 * that names its holder (arena-lock.ts); a thread can be terminated anywhere,
 * inside a critical section too. Two things make that survivable:
 * - The tiling invariant: at every instant, walking the blocks from the first
 *   one by their sizes reaches `top` exactly, through headers marked USED or
 *   FREE. Each heap operation writes a new header completely where the walk
 *   cannot see it yet and then publishes it with one store (a block's size or
 *   `top`); a block turns allocated or free with one store of its state. So a
 *   waiter that takes the lock over from a dead holder can walk the heap and
 *   rebuild the rest (free lists, bitmap, used count, boundary tags; merge
 *   neighbouring free blocks) from it: arena-repair.ts.
 * - Ownership: every allocated block's header names its owning thread and a
 *   generation (a counter bumped per allocation, returned with the offset and
 *   carried by TensorRef.gen). When a thread ends, the main thread calls
 *   threadDied(threadId), which frees every block that thread still owned.
 *   Blocks change owner when they cross threads (adopt, give; the rules per
 *   message are in protocol.ts), by one compareExchange of the owner word, so
 *   a block is freed exactly once: by its owner, or by the sweep of its dead
 *   owner, never both. free, adopt and give refuse a handle whose generation
 *   is not the block's (INTERNAL, naming the offset and both generations).
 *
 * Growth: the SAB grows in place (a growable SAB never moves). Each Arena
 * object uses fixed-length views of the SAB (element access on
 * length-tracking views of a growable SAB is several times slower in Node
 * 20) and remakes them when the heap reaches past them. V8 in Node 20 caps a
 * growable SAB at 4 GiB, so maxBytes is clamped to ARENA_MAX_BYTES_LIMIT.
 */
import { threadId as thisThreadId } from 'node:worker_threads';
import { ServerError } from '../core/errors';
import {
  ARENA_MAGIC,
  B_OWNER,
  GRANULE,
  HEADER_GRANULES,
  HEADER_WORDS,
  W_GEN,
  W_MAGIC,
  W_REPAIRS,
  W_TOP,
  W_USED,
  WORDS_PER_GRANULE,
  ownerIdOf,
} from './arena-layout';
import { ACQUIRED, ArenaLock, GAVE_UP, TOOK_OVER, type Acquire } from './arena-lock';
import { takeFree, takeTop } from './arena-heap';
import { adoptBlock, giveBlock, mismatch, sweepOwner, type BlockRef } from './arena-ownership';
import { checkHeap, repairHeap } from './arena-repair';
import { exhausted, floorTo, growSab, pow2Ceil, releaseChecked, roundUp, type GrowableSab } from './arena-sizing';
import { isRegistered, registerThread, unregisterThread } from './arena-threads';

/** An allocated block: its data's byte offset and the generation of the allocation. */
export type { BlockRef } from './arena-ownership';

export interface ArenaHandle {
  sab: SharedArrayBuffer;
}

/** What threadDied reclaimed. */
export interface ThreadDiedResult {
  /** Blocks the dead thread owned, now free, and their bytes (headers and rounding included). */
  blocks: number;
  bytes: number;
  /** The dead thread held the lock: this call took it over and repaired the heap. */
  tookOver: boolean;
  /** The lock could not be had in time (another holder looks alive): the sweep runs at this Arena's next lock. */
  deferred: boolean;
}

/** The largest maxByteLength Node 20's V8 accepts for a growable SharedArrayBuffer. */
export const ARENA_MAX_BYTES_LIMIT = 2 ** 32;

const G = WORDS_PER_GRANULE;
const DEFAULT_INITIAL_BYTES = 64 * 1024 * 1024;
/** Requests up to this many granules (64 KiB) round up to a power of two. */
const ROUND_POW2_MAX_GRANULES = 1024;

const GrowableSab = SharedArrayBuffer as unknown as new (length: number, options: { maxByteLength: number }) => GrowableSab;

export class Arena {
  readonly handle: ArenaHandle;
  /** worker_threads threadId of the thread this Arena object belongs to (main: 0). */
  readonly threadId: number;
  private readonly sab: GrowableSab;
  private readonly me: number;
  private readonly lock: ArenaLock;
  /** The arena header (fixed size). */
  private readonly hdr: Int32Array;
  /** Fixed-length views of the SAB as far as this object has seen it grow. */
  private u32!: Uint32Array;
  private i32!: Int32Array;
  private granules = 0;
  /** Frees and sweeps that could not get the lock in time (see ArenaLock); done at the next lock. */
  private deferredFrees: BlockRef[] | null = null;
  private deferredSweeps: number[] | null = null;
  /** Arena.reader: reads only. */
  private readOnly = false;

  private constructor(sab: SharedArrayBuffer) {
    this.sab = sab as GrowableSab;
    this.handle = { sab };
    this.threadId = thisThreadId;
    this.me = ownerIdOf(thisThreadId);
    this.hdr = new Int32Array(sab, 0, HEADER_WORDS);
    this.lock = new ArenaLock(this.hdr, this.me);
    this.refresh();
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
    const header = new Int32Array(sab, 0, HEADER_WORDS);
    header[W_TOP] = HEADER_GRANULES;
    Atomics.store(header, W_MAGIC, ARENA_MAGIC);
    return Arena.attach({ sab });
  }

  /**
   * A view for a thread that only reads tensors in place (the HTTP codec
   * pool's threads, which come and go): it does not register in the thread
   * table, so its exit needs no threadDied, and it may not alloc or free.
   */
  static reader(handle: ArenaHandle): Arena {
    const arena = Arena.attach(handle, false);
    arena.readOnly = true;
    return arena;
  }

  /** This thread's view of an arena; registers the thread as alive (see threadDied). */
  static attach(handle: ArenaHandle, register = true): Arena {
    const sab = handle?.sab;
    if (
      !(sab instanceof SharedArrayBuffer) ||
      sab.byteLength < HEADER_GRANULES * GRANULE ||
      Atomics.load(new Int32Array(sab, 0, HEADER_WORDS), W_MAGIC) !== ARENA_MAGIC
    ) {
      throw new ServerError('INTERNAL', 'Arena.attach: the handle is not a tensor arena created by Arena.create');
    }
    const arena = new Arena(sab);
    if (register) registerThread(arena.hdr, arena.me);
    return arena;
  }

  /** The most bytes the SAB may grow to. */
  get maxBytes(): number {
    return this.sab.maxByteLength;
  }

  /** Bytes held by allocated blocks, headers and rounding included. */
  usedBytes(): number {
    return Atomics.load(this.hdr, W_USED) * GRANULE;
  }

  /** How many times a dead thread's lock was taken over and the heap repaired (diagnostics, tests). */
  repairs(): number {
    return Atomics.load(this.hdr, W_REPAIRS);
  }

  /** Allocates byteSize bytes (64-byte aligned), owned by this thread. */
  alloc(byteSize: number): BlockRef {
    if (this.readOnly) throw new ServerError('INTERNAL', 'tensor arena: alloc on a read-only view (Arena.reader)');
    if (!Number.isInteger(byteSize) || byteSize < 0) {
      throw new ServerError('INTERNAL', `tensor arena: invalid allocation size ${byteSize}`);
    }
    if (byteSize > this.sab.maxByteLength) throw exhausted(byteSize, this.usedBytes(), this.sab.maxByteLength);
    let n = 1 + Math.ceil(byteSize / GRANULE);
    if (n <= ROUND_POW2_MAX_GRANULES) n = pow2Ceil(n);
    if (this.acquire(0) === GAVE_UP) {
      throw new ServerError(
        'UNAVAILABLE',
        `tensor arena: cannot allocate ${byteSize} bytes, its lock has been held by thread ${this.lock.lastHolder - 1} ` +
          `for ${Math.round(this.lock.lastWaitedMs)} ms`,
      );
    }
    try {
      let u = this.u32;
      const gen = (u[W_GEN] + 1) >>> 0 || 1;
      u[W_GEN] = gen;
      let b = takeFree(u, n, this.me, gen);
      if (b === 0) {
        this.ensure(u[W_TOP] + n, byteSize);
        u = this.u32;
        b = takeTop(u, n, this.me, gen);
      }
      return { offset: (b + 1) * GRANULE, gen };
    } finally {
      this.lock.release();
    }
  }

  /**
   * Frees a block. Refuses (INTERNAL, frees nothing) an offset that is not
   * an allocated block or whose generation is not the handle's. If the lock
   * cannot be had in time (its holder died and is not yet reported), the free
   * is done at this Arena's next lock, unchecked until then.
   */
  free(ref: BlockRef): void {
    if (this.readOnly) throw new ServerError('INTERNAL', 'tensor arena: free on a read-only view (Arena.reader)');
    if (this.acquire(0) === GAVE_UP) {
      (this.deferredFrees ??= []).push({ offset: ref.offset, gen: ref.gen });
      return;
    }
    try {
      releaseChecked(this.u32, ref);
    } finally {
      this.lock.release();
    }
  }

  /**
   * Makes this thread the block's owner (lock-free: one compareExchange),
   * for a block another thread handed over. Returns undefined on success,
   * otherwise why not (naming offset and generations): the block is no
   * longer the one the handle names, typically because its owner died and
   * threadDied reclaimed it. Throws INTERNAL for an offset that is no block.
   */
  adopt(ref: BlockRef): string | undefined {
    if (this.readOnly) throw new ServerError('INTERNAL', 'tensor arena: adopt on a read-only view (Arena.reader)');
    // headerOf first: it remakes the views when another thread grew the SAB.
    const h = this.headerOf(ref, 'adopt');
    return adoptBlock(this.u32, this.i32, h, ref, this.me);
  }

  /**
   * Hands a block this thread will send away to the thread that will free
   * it, before sending. False when that thread is not alive (reported dead):
   * then the block stays the caller's, to free. Throws INTERNAL on a stale handle.
   */
  give(ref: BlockRef, toThreadId: number): boolean {
    if (this.readOnly) throw new ServerError('INTERNAL', 'tensor arena: give on a read-only view (Arena.reader)');
    const to = ownerIdOf(toThreadId);
    if (!isRegistered(this.hdr, to)) return false;
    const h = this.headerOf(ref, 'give');
    const why = giveBlock(this.u32, this.i32, h, ref, to);
    if (why !== undefined) throw new ServerError('INTERNAL', `${why}; not given to thread ${toThreadId}`);
    // A worker thread gives while main may be reporting the receiver dead:
    // if the receiver was unregistered before the block became its own, its
    // sweep may have run already and missed it. Take it back then; if the
    // sweep got it after all (owner SWEPT), it is freed and counts as given.
    if (!isRegistered(this.hdr, to) && Atomics.compareExchange(this.i32, h + B_OWNER, to, this.me) === to) return false;
    return true;
  }

  /** worker_threads threadId of the block's owner, or undefined when the handle is stale (tests, diagnostics). */
  ownerOf(ref: BlockRef): number | undefined {
    const h = this.headerOf(ref, 'ownerOf');
    const o = Atomics.load(this.i32, h + B_OWNER);
    return mismatch(this.u32, ref, h, o) === undefined ? o - 1 : undefined;
  }

  /**
   * Reports that a thread has ended (its Worker emitted 'exit'); called by
   * the main thread, once per thread, for every thread that attached this
   * arena (instance threads: worker-instance.ts). Marks the thread dead, takes
   * the lock over if the thread died holding it (repairing the heap), and
   * frees every block the thread still owned. Idempotent.
   */
  threadDied(threadId: number): ThreadDiedResult {
    const dead = ownerIdOf(threadId);
    if (dead === this.me) throw new ServerError('INTERNAL', `tensor arena: thread ${threadId} reported its own death`);
    unregisterThread(this.hdr, dead);
    const got = this.acquire(dead);
    if (got === GAVE_UP) {
      (this.deferredSweeps ??= []).push(dead);
      return { blocks: 0, bytes: 0, tookOver: false, deferred: true };
    }
    try {
      return { ...sweepOwner(this.u32, this.i32, dead), tookOver: got === TOOK_OVER, deferred: false };
    } finally {
      this.lock.release();
    }
  }

  /** Violations of the heap's invariants (arena-repair.ts checkHeap); empty when sound. For tests and diagnostics. */
  checkHeap(): string[] {
    if (this.acquire(0) === GAVE_UP) return [`the lock is held by thread ${this.lock.lastHolder - 1}`];
    try {
      return checkHeap(this.u32);
    } finally {
      this.lock.release();
    }
  }

  bytes(offset: number, byteSize: number): Uint8Array {
    return new Uint8Array(this.sab, offset, byteSize);
  }

  buffer(offset: number, byteSize: number): Buffer {
    return Buffer.from(this.sab, offset, byteSize);
  }

  // ---- internals ----

  /** Takes the lock, repairs after a takeover, catches up the views and deferred work. */
  private acquire(deadOwner: number): Acquire {
    const got = this.lock.acquire(deadOwner);
    if (got === GAVE_UP) return got;
    if (Atomics.load(this.hdr, W_TOP) > this.granules) this.refresh();
    if (got === TOOK_OVER) {
      try {
        repairHeap(this.u32);
      } catch (err) {
        this.lock.release(); // a heap beyond repair fails every call; it must not also hang them
        throw err;
      }
      Atomics.add(this.hdr, W_REPAIRS, 1);
    }
    if (this.deferredFrees !== null || this.deferredSweeps !== null) this.catchUp();
    return got === TOOK_OVER ? TOOK_OVER : ACQUIRED;
  }

  /** With the lock held: the frees and sweeps that had to wait. A deferred free that is stale by now is dropped. */
  private catchUp(): void {
    const frees = this.deferredFrees ?? [];
    const sweeps = this.deferredSweeps ?? [];
    this.deferredFrees = null;
    this.deferredSweeps = null;
    for (const dead of sweeps) sweepOwner(this.u32, this.i32, dead);
    for (const ref of frees) {
      try {
        releaseChecked(this.u32, ref);
      } catch {
        // refused: the caller has long returned; nothing was freed.
      }
    }
  }

  /** The header word index of a handle's block, for the lock-free calls; INTERNAL if the offset is no block position. */
  private headerOf(ref: BlockRef, what: string): number {
    const b = ref.offset / GRANULE - 1;
    if (Number.isInteger(b) && b >= HEADER_GRANULES && b >= this.granules && b * GRANULE < this.sab.byteLength) this.refresh();
    if (!Number.isInteger(b) || b < HEADER_GRANULES || b >= this.granules) {
      throw new ServerError('INTERNAL', `tensor arena: ${what} of offset ${ref.offset} (generation ${ref.gen}), which is not a block`);
    }
    return b * G;
  }

  /** Makes sure the SAB and this object's views reach `need` granules (for an allocation at top). */
  private ensure(need: number, byteSize: number): void {
    if (need <= this.granules) return;
    if (need * GRANULE > this.sab.byteLength) growSab(this.sab, need * GRANULE, byteSize, this.usedBytes());
    this.refresh();
  }

  private refresh(): void {
    const bytes = this.sab.byteLength;
    this.u32 = new Uint32Array(this.sab, 0, bytes / 4);
    this.i32 = new Int32Array(this.sab, 0, bytes / 4);
    this.granules = bytes / GRANULE;
  }
}
