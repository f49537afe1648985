/**
 * The allocator's heap operations, called with the arena lock held. They
 * take the heap as a plain Uint32Array over the whole SAB and use nothing
 * but reads and single-word stores on it, so a test can record their exact
 * write sequence and replay any prefix of it (test/unit/arena-repair.test.ts).
 *
 * Every operation keeps the tiling invariant of arena.ts at every store:
 * walking from the first block by B_SIZE reaches `top` exactly, through
 * headers marked USED or FREE. A new header is written completely where the
 * walk cannot see it yet (inside the block being split, or above top), and
 * then one store (a B_SIZE or W_TOP) makes the walk see it; a block changes
 * between allocated and free by one store of B_STATE. The free lists, the
 * bitmap, W_USED, W_LAST and the B_PREV tags are derived data that the
 * repair walk (arena-repair.ts) rebuilds, so their writes may be cut short.
 */
import {
  B_GEN,
  B_NEXT_FREE,
  B_OWNER,
  B_PREV,
  B_PREV_FREE,
  B_SIZE,
  B_STATE,
  FREE,
  USED,
  W_BITMAP,
  W_HEADS,
  W_LAST,
  W_TOP,
  W_USED,
  WORDS_PER_GRANULE,
} from './arena-layout';

const G = WORDS_PER_GRANULE;

/** Free list of a block of n granules: floor(log2 n). */
export function sizeClass(n: number): number {
  return 31 - Math.clz32(n);
}

/**
 * First fit in n's own class, else the head of the smallest larger
 * non-empty class; the block is split to n granules and marked USED for
 * owner. Returns its granule index, 0 when no free block fits.
 */
export function takeFree(u: Uint32Array, n: number, owner: number, gen: number): number {
  const k = sizeClass(n);
  for (let b = u[W_HEADS + k]; b !== 0; b = u[b * G + B_NEXT_FREE]) {
    if (u[b * G + B_SIZE] >= n) return useFree(u, b, n, owner, gen);
  }
  const larger = k >= 31 ? 0 : u[W_BITMAP] & ~((2 << k) - 1);
  if (larger === 0) return 0;
  return useFree(u, u[W_HEADS + sizeClass(larger & -larger)], n, owner, gen);
}

function useFree(u: Uint32Array, b: number, n: number, owner: number, gen: number): number {
  const h = b * G;
  const size = u[h + B_SIZE];
  // (1) Owner and generation first: meaningless while the block is FREE, and
  //     in place before the USED store makes the block someone's.
  u[h + B_OWNER] = owner;
  u[h + B_GEN] = gen;
  unlink(u, b);
  if (size > n) {
    // (2) The remainder's header, complete, inside b where the walk does not look.
    const r = b + n;
    const rh = r * G;
    u[rh + B_STATE] = FREE;
    u[rh + B_SIZE] = size - n;
    u[rh + B_PREV] = n;
    if (b + size < u[W_TOP]) u[(b + size) * G + B_PREV] = size - n;
    // (3) Commit the split: the walk now goes b → r → b + size.
    u[h + B_SIZE] = n;
    link(u, r);
  }
  // (4) Commit the allocation.
  u[h + B_STATE] = USED;
  u[W_USED] += n;
  return b;
}

/** Carves n granules at top for owner; the caller made sure the SAB (and u) reach top + n. */
export function takeTop(u: Uint32Array, n: number, owner: number, gen: number): number {
  const b = u[W_TOP];
  const h = b * G;
  // (1) The whole header, above top where the walk does not look.
  u[h + B_OWNER] = owner;
  u[h + B_GEN] = gen;
  u[h + B_SIZE] = n;
  u[h + B_PREV] = u[W_LAST];
  u[h + B_STATE] = USED;
  // (2) Commit: the walk now ends at b + n, b included.
  u[W_TOP] = b + n;
  u[W_LAST] = n;
  u[W_USED] += n;
  return b;
}

/**
 * Frees allocated block b (the caller checked it is USED and the handle's),
 * coalescing it with free neighbours and giving a block at the end of the
 * heap back to the wilderness.
 */
export function release(u: Uint32Array, b: number): void {
  const top = u[W_TOP];
  let h = b * G;
  let size = u[h + B_SIZE];
  // (1) Commit the free. From here on b is an unlinked free block, which repair links.
  u[h + B_STATE] = FREE;
  u[W_USED] -= size;
  const next = b + size;
  if (next < top && u[next * G + B_STATE] === FREE) {
    unlink(u, next);
    size += u[next * G + B_SIZE];
    // (2) Commit absorbing next: the walk now steps over its header.
    u[h + B_SIZE] = size;
    u[next * G + B_STATE] = 0; // an absorbed header must not look like a block
  }
  const prevSize = u[h + B_PREV];
  if (prevSize !== 0 && u[(b - prevSize) * G + B_STATE] === FREE) {
    const p = b - prevSize;
    unlink(u, p);
    size += prevSize;
    // (3) Commit being absorbed into p.
    u[p * G + B_SIZE] = size;
    u[h + B_STATE] = 0;
    b = p;
    h = p * G;
  }
  if (b + size === top) {
    // (4) Commit the return to the wilderness; the block below b (if any) is in use.
    u[W_TOP] = b;
    u[W_LAST] = u[h + B_PREV];
    u[h + B_STATE] = 0;
    return;
  }
  u[(b + size) * G + B_PREV] = size;
  link(u, b);
}

export function link(u: Uint32Array, b: number): void {
  const h = b * G;
  const k = sizeClass(u[h + B_SIZE]);
  const head = u[W_HEADS + k];
  u[h + B_STATE] = FREE;
  u[h + B_NEXT_FREE] = head;
  u[h + B_PREV_FREE] = 0;
  if (head !== 0) u[head * G + B_PREV_FREE] = b;
  u[W_HEADS + k] = b;
  u[W_BITMAP] |= 1 << k;
}

export function unlink(u: Uint32Array, b: number): void {
  const h = b * G;
  const k = sizeClass(u[h + B_SIZE]);
  const next = u[h + B_NEXT_FREE];
  const prev = u[h + B_PREV_FREE];
  if (prev !== 0) u[prev * G + B_NEXT_FREE] = next;
  else u[W_HEADS + k] = next;
  if (next !== 0) u[next * G + B_PREV_FREE] = prev;
  if (u[W_HEADS + k] === 0) u[W_BITMAP] &= ~(1 << k);
}
