/**
 * Block ownership in the tensor arena: every allocated block's header names
 * its owner (B_OWNER: a thread's owner id, or SWEPT) and its generation
 * (B_GEN). Blocks change hands with one compareExchange of the owner word,
 * without the lock (adopt, give); the sweep of a dead thread claims each of
 * its blocks with the same compareExchange (owner → SWEPT) under the lock
 * and frees what it won. The word decides who gets a block that an adopter
 * and a sweep race for, so it is freed exactly once. The rules per thread
 * message are in protocol.ts.
 *
 * Lock-free reads of a header may race with the block being freed and its
 * memory reused. adopt reads the owner word first and then the state and
 * generation, and swaps only from the owner it read: a dead thread's id
 * never comes back (threadIds are not reused), and a reallocation rewrites
 * the generation, so a block reclaimed in between fails one of the checks.
 */
import { B_GEN, B_OWNER, B_SIZE, B_STATE, FREE, GRANULE, HEADER_GRANULES, SWEPT, USED, W_TOP, WORDS_PER_GRANULE } from './arena-layout';
import { release } from './arena-heap';

export interface BlockRef {
  offset: number;
  gen: number;
}

const G = WORDS_PER_GRANULE;

/** Undefined when header h (owner word o, read before) is the allocated block the handle names; else why not. */
export function mismatch(u32: Uint32Array, ref: BlockRef, h: number, o: number): string | undefined {
  const state = Atomics.load(u32, h + B_STATE);
  const gen = Atomics.load(u32, h + B_GEN);
  if (state === USED && gen === ref.gen && o !== SWEPT) return undefined;
  const at = `offset ${ref.offset} (generation ${ref.gen})`;
  if (state === USED && gen === ref.gen) return `tensor arena: ${at} was reclaimed from a dead thread`;
  if (state === USED) return `tensor arena: stale handle: ${at}, but the block there is generation ${gen} (freed and allocated again since)`;
  if (state === FREE && gen === ref.gen) return `tensor arena: double free of offset ${ref.offset} (generation ${ref.gen}): the block is free`;
  return `tensor arena: ${at} is not an allocated block (it was freed)`;
}

/** Makes `me` the owner of the block at header h; undefined on success, else why not. */
export function adoptBlock(u32: Uint32Array, i32: Int32Array, h: number, ref: BlockRef, me: number): string | undefined {
  const o = Atomics.load(i32, h + B_OWNER);
  const why = mismatch(u32, ref, h, o);
  if (why !== undefined) return why;
  if (o === me || Atomics.compareExchange(i32, h + B_OWNER, o, me) === o) return undefined;
  return `tensor arena: offset ${ref.offset} (generation ${ref.gen}) was reclaimed from a dead thread while being adopted`;
}

/** Makes `to` the owner of the block at header h; why not, if the handle is stale. */
export function giveBlock(u32: Uint32Array, i32: Int32Array, h: number, ref: BlockRef, to: number): string | undefined {
  for (;;) {
    const o = Atomics.load(i32, h + B_OWNER);
    const why = mismatch(u32, ref, h, o);
    if (why !== undefined) return why;
    if (Atomics.compareExchange(i32, h + B_OWNER, o, to) === o) return undefined;
  }
}

/** With the lock held: frees every allocated block owned by `dead`, claiming each from would-be adopters first. */
export function sweepOwner(u32: Uint32Array, i32: Int32Array, dead: number): { blocks: number; bytes: number } {
  const top = u32[W_TOP];
  const victims: number[] = [];
  for (let b = HEADER_GRANULES; b < top; b += u32[b * G + B_SIZE]) {
    if (u32[b * G + B_STATE] === USED && Atomics.compareExchange(i32, b * G + B_OWNER, dead, SWEPT) === dead) victims.push(b);
  }
  let granules = 0;
  for (const b of victims) {
    granules += u32[b * G + B_SIZE];
    release(u32, b);
  }
  return { blocks: victims.length, bytes: granules * GRANULE };
}
