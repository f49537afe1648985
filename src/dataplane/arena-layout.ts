/**
 * Where the tensor arena keeps things in its SharedArrayBuffer: the arena
 * header's words, a block header's words, and the values they hold. Shared
 * by arena.ts (the API), arena-heap.ts (the allocator's writes),
 * arena-repair.ts (the walk that rebuilds the heap), arena-lock.ts and
 * arena-threads.ts. Sizes are in 64-byte granules; indices are 32-bit word
 * indices into the SAB.
 */

export const GRANULE = 64;
export const WORDS_PER_GRANULE = GRANULE / 4;

// ---- arena header: granules 0 .. HEADER_GRANULES-1 ----

/** Lock word: 0 free, else (owner id << 1) | waiters bit (arena-lock.ts). */
export const W_LOCK = 0;
export const W_MAGIC = 1;
/** First granule of the wilderness: blocks tile [HEADER_GRANULES, top). */
export const W_TOP = 2;
/** Size of the block just below top (0: none). */
export const W_LAST = 3;
/** Granules held by allocated blocks. */
export const W_USED = 4;
/** Bit k set: free list k is not empty. */
export const W_BITMAP = 5;
/** The generation handed to the last allocation (0 is never handed out). */
export const W_GEN = 6;
/** How many times a lock held by a dead thread was taken over and the heap repaired. */
export const W_REPAIRS = 7;
/** Slots of the thread table in use so far (scans stop there). */
export const W_THREADS_USED = 8;
/** CLASSES words: head granule of each free list (0: empty). Class k: 2^k .. 2^(k+1)-1 granules. */
export const W_HEADS = 16;
export const CLASSES = 32;
/** Thread table: THREAD_SLOTS words, each a live attached thread's owner id, 0 = empty slot. */
export const W_THREADS = 64;
export const HEADER_GRANULES = 64;
export const HEADER_WORDS = HEADER_GRANULES * WORDS_PER_GRANULE;
export const THREAD_SLOTS = HEADER_WORDS - W_THREADS;
export const ARENA_MAGIC = 0x4e544152; // "NTAR"

// ---- block header: word offsets from the block's first word ----

/** USED, FREE, or 0 for a header that was absorbed into a neighbour. */
export const B_STATE = 0;
/** Granules, header included. */
export const B_SIZE = 1;
/** Size of the physically previous block (0: first block). A hint: repair rebuilds it. */
export const B_PREV = 2;
/** Free blocks: free-list links (granule indices, 0 = none). */
export const B_NEXT_FREE = 3;
export const B_PREV_FREE = 4;
/** Allocated blocks: owner id of the thread that owns the block, or SWEPT. */
export const B_OWNER = 5;
/** Allocated blocks: the generation of this allocation (TensorRef.gen). */
export const B_GEN = 6;

export const USED = 0x55534544;
export const FREE = 0x46524545;
/** B_OWNER (as an Int32) of a block a dead thread's sweep claimed: nobody may adopt it. */
export const SWEPT = -1;

/** Owner id of a thread: worker_threads' threadId + 1 (so 0 means none; the main thread is 1). */
export function ownerIdOf(threadId: number): number {
  return threadId + 1;
}
