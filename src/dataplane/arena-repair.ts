/**
 * Rebuilding the heap after a thread died inside a critical section, and
 * checking it. Both trust only what the tiling invariant (arena.ts,
 * arena-heap.ts) guarantees at every instant: the walk from the first block
 * by B_SIZE reaches top through USED or FREE headers. Everything else (free
 * lists, bitmap, W_USED, W_LAST, B_PREV tags) is recomputed from the walk,
 * adjacent free blocks are merged and a free block at the end goes back to
 * the wilderness, so afterwards the heap is as if the dead thread's
 * operation had either not started or finished up to its last commit store.
 *
 * repairHeap keeps the invariant itself (a merge is one B_SIZE store, the
 * return to the wilderness one W_TOP store), so a thread that dies while
 * repairing leaves a heap the next repair can still walk.
 */
import { ServerError } from '../core/errors';
import {
  B_NEXT_FREE,
  B_PREV,
  B_PREV_FREE,
  B_SIZE,
  B_STATE,
  CLASSES,
  FREE,
  HEADER_GRANULES,
  USED,
  W_BITMAP,
  W_HEADS,
  W_LAST,
  W_TOP,
  W_USED,
  WORDS_PER_GRANULE,
} from './arena-layout';
import { link, sizeClass } from './arena-heap';

const G = WORDS_PER_GRANULE;

/** Called with the lock held (taken over from a dead thread). Throws INTERNAL if the tiling itself is broken. */
export function repairHeap(u: Uint32Array): void {
  const top = u[W_TOP];
  const free: number[] = [];
  let used = 0;
  let last = 0; // the block before b in the rebuilt tiling (0: none)
  for (let b = HEADER_GRANULES; b < top;) {
    const h = b * G;
    const size = u[h + B_SIZE];
    const state = u[h + B_STATE];
    if (size === 0 || b + size > top || (state !== USED && state !== FREE)) {
      throw new ServerError('INTERNAL', `tensor arena: heap corrupt at granule ${b} (size ${size}, state 0x${state.toString(16)}, top ${top}); cannot repair`);
    }
    if (state === FREE && last !== 0 && u[last * G + B_STATE] === FREE) {
      u[last * G + B_SIZE] += size; // merge into the free block before: one store
      u[h + B_STATE] = 0;
    } else {
      u[h + B_PREV] = last === 0 ? 0 : u[last * G + B_SIZE];
      if (state === FREE) free.push(b);
      else used += size;
      last = b;
    }
    b += size;
  }
  if (last !== 0 && u[last * G + B_STATE] === FREE) {
    u[W_TOP] = last; // back to the wilderness: one store
    u[last * G + B_STATE] = 0;
    free.pop();
    u[W_LAST] = u[last * G + B_PREV];
  } else {
    u[W_LAST] = last === 0 ? 0 : u[last * G + B_SIZE];
  }
  for (let k = 0; k < CLASSES; k++) u[W_HEADS + k] = 0;
  u[W_BITMAP] = 0;
  for (const b of free) link(u, b);
  u[W_USED] = used;
}

/**
 * Everything that should hold between critical sections, as a list of
 * violations (empty: the heap is sound). For tests and diagnostics; call it
 * with the lock held or no other thread running.
 */
export function checkHeap(u: Uint32Array): string[] {
  const out: string[] = [];
  const top = u[W_TOP];
  const blocks = new Map<number, number>(); // free block → size
  let used = 0;
  let prevSize = 0;
  let prevFree = false;
  let b = HEADER_GRANULES;
  while (b < top) {
    const h = b * G;
    const size = u[h + B_SIZE];
    const state = u[h + B_STATE];
    if (state !== USED && state !== FREE) out.push(`granule ${b}: state 0x${state.toString(16)} is neither USED nor FREE`);
    if (size === 0 || b + size > top) {
      out.push(`granule ${b}: size ${size} does not fit below top ${top}`);
      return out;
    }
    if (u[h + B_PREV] !== prevSize) out.push(`granule ${b}: prev tag ${u[h + B_PREV]}, previous block has ${prevSize}`);
    if (state === FREE) {
      if (prevFree) out.push(`granule ${b}: two free blocks side by side`);
      blocks.set(b, size);
    } else {
      used += size;
    }
    prevFree = state === FREE;
    prevSize = size;
    b += size;
  }
  if (b !== top) out.push(`the walk ends at ${b}, top is ${top}`);
  if (prevFree) out.push('the last block below top is free');
  if (u[W_LAST] !== prevSize) out.push(`W_LAST is ${u[W_LAST]}, the last block has ${prevSize}`);
  if (u[W_USED] !== used) out.push(`W_USED is ${u[W_USED]}, the allocated blocks have ${used}`);
  const listed = new Set<number>();
  for (let k = 0; k < CLASSES; k++) {
    const head = u[W_HEADS + k];
    if (((u[W_BITMAP] >>> k) & 1) !== (head === 0 ? 0 : 1)) out.push(`bitmap bit ${k} disagrees with its list`);
    let before = 0;
    for (let f = head, steps = 0; f !== 0; f = u[f * G + B_NEXT_FREE], steps++) {
      const size = blocks.get(f);
      if (size === undefined || listed.has(f) || steps > blocks.size) {
        out.push(`free list ${k}: granule ${f} is not a free block of the walk, or is listed twice`);
        break;
      }
      if (sizeClass(size) !== k) out.push(`free list ${k}: granule ${f} has ${size} granules`);
      if (u[f * G + B_PREV_FREE] !== before) out.push(`free list ${k}: granule ${f} has a wrong back link`);
      listed.add(f);
      before = f;
    }
  }
  for (const f of blocks.keys()) if (!listed.has(f)) out.push(`granule ${f}: free but on no list`);
  return out;
}
