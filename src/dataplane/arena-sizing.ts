/**
 * The arena's arithmetic that needs no lock and no Arena object: growing the
 * SharedArrayBuffer (and the error when it cannot), the checked free of one
 * block under the lock, and the rounding helpers. Split out of arena.ts.
 */
import { ServerError } from '../core/errors';
import { B_GEN, B_OWNER, B_PREV, B_SIZE, B_STATE, GRANULE, HEADER_GRANULES, USED, W_TOP, WORDS_PER_GRANULE } from './arena-layout';
import { release } from './arena-heap';
import { mismatch, type BlockRef } from './arena-ownership';

const G = WORDS_PER_GRANULE;
/** Growth step floor, so many small allocations do not grow the SAB one by one. */
const MIN_GROWTH_BYTES = 4 * 1024 * 1024;

/** Growable SharedArrayBuffer (ES2024; the project's lib is ES2022, Node 20 has it). */
export interface GrowableSab extends SharedArrayBuffer {
  readonly maxByteLength: number;
  grow(newLength: number): void;
}

/** Grows `sab` to hold at least `needBytes` (at least doubling, at least MIN_GROWTH_BYTES more). */
export function growSab(sab: GrowableSab, needBytes: number, byteSize: number, usedBytes: number): void {
  const max = sab.maxByteLength;
  if (needBytes > max) throw exhausted(byteSize, usedBytes, max);
  const cur = sab.byteLength;
  const target = Math.min(max, Math.max(needBytes, cur * 2, cur + MIN_GROWTH_BYTES));
  try {
    sab.grow(floorTo(target, GRANULE));
  } catch (err) {
    throw new ServerError(
      'UNAVAILABLE',
      `tensor arena exhausted: cannot allocate ${byteSize} bytes (growing to ${target} bytes failed: ` + `${(err as Error).message})`,
    );
  }
}

export function exhausted(byteSize: number, usedBytes: number, maxBytes: number): ServerError {
  return new ServerError('UNAVAILABLE', `tensor arena exhausted: cannot allocate ${byteSize} bytes (${usedBytes} bytes ` + `in use, ${maxBytes} bytes max)`);
}

/** With the lock held: frees the block `ref` names, or throws INTERNAL saying why it is not one to free. */
export function releaseChecked(u: Uint32Array, ref: BlockRef): void {
  const top = u[W_TOP]!;
  const b = ref.offset / GRANULE - 1;
  if (!Number.isInteger(b) || b < HEADER_GRANULES || b >= top) {
    throw new ServerError('INTERNAL', `tensor arena: free of offset ${ref.offset} (generation ${ref.gen}), which is not an allocated block`);
  }
  const h = b * G;
  if (u[h + B_STATE] !== USED || u[h + B_GEN] !== ref.gen) {
    const why = mismatch(u, ref, h, u[h + B_OWNER]! | 0)!;
    throw new ServerError('INTERNAL', `${why}; not freed`);
  }
  const size = u[h + B_SIZE]!;
  const next = b + size;
  if (next > top || (next < top && u[next * G + B_PREV] !== size)) {
    throw new ServerError('INTERNAL', `tensor arena: corrupt block header at offset ${ref.offset}`);
  }
  release(u, b);
}

export function roundUp(x: number, m: number): number {
  return Math.ceil(x / m) * m;
}

export function floorTo(x: number, m: number): number {
  return Math.floor(x / m) * m;
}

export function pow2Ceil(n: number): number {
  return n <= 1 ? 1 : 2 ** (32 - Math.clz32(n - 1));
}
