/**
 * Offset allocator for a shared-memory region that grows: first fit over a
 * free list sorted by offset, coalescing on free, 64-byte aligned blocks (so
 * numpy views over them are aligned for every dtype). When nothing fits, the
 * caller grows the region by Triton's rule, `growth * (floor(need / growth) + 1)`
 * bytes, and the new space joins the free list. Pure bookkeeping: it never
 * touches the memory itself. The stub's allocator (stub/_nt_shm.py) is the
 * same algorithm.
 */
import { ServerError } from '../core/errors';

export const SHM_ALIGN = 64;

interface Span {
  offset: number;
  size: number;
}

export class ShmAllocator {
  private readonly free: Span[];
  private readonly used = new Map<number, number>();
  private total: number;

  constructor(
    initialBytes: number,
    private readonly growthBytes: number,
    private readonly maxBytes = Number.MAX_SAFE_INTEGER,
  ) {
    if (!(growthBytes > 0)) throw new ServerError('INVALID_ARG', `shm growth byte size must be > 0, got ${growthBytes}`);
    this.total = initialBytes;
    this.free = initialBytes > 0 ? [{ offset: 0, size: initialBytes }] : [];
  }

  /** Current region size in bytes. */
  size(): number {
    return this.total;
  }

  usedBytes(): number {
    let n = 0;
    for (const s of this.used.values()) n += s;
    return n;
  }

  /**
   * Allocates `bytes` (rounded up to SHM_ALIGN; 0 still takes one granule so
   * offsets stay unique). Returns the offset and whether the region had to
   * grow (the caller then extends the file to `size()`).
   */
  alloc(bytes: number): { offset: number; grew: boolean } {
    const need = Math.max(SHM_ALIGN, Math.ceil(bytes / SHM_ALIGN) * SHM_ALIGN);
    let at = this.firstFit(need);
    let grew = false;
    if (at < 0) {
      const add = this.growthBytes * (Math.floor(need / this.growthBytes) + 1);
      const newTotal = this.total + add;
      if (newTotal > this.maxBytes) {
        throw new ServerError('UNAVAILABLE', `Failed to increase the shared memory pool size to ${newTotal} bytes (limit ${this.maxBytes} bytes)`);
      }
      this.insertFree({ offset: this.total, size: add });
      this.total = newTotal;
      grew = true;
      at = this.firstFit(need);
    }
    const span = this.free[at]!;
    const offset = span.offset;
    if (span.size === need) this.free.splice(at, 1);
    else {
      span.offset += need;
      span.size -= need;
    }
    this.used.set(offset, need);
    return { offset, grew };
  }

  release(offset: number): void {
    const size = this.used.get(offset);
    if (size === undefined) throw new ServerError('INTERNAL', `shm allocator: offset ${offset} is not an allocated block`);
    this.used.delete(offset);
    this.insertFree({ offset, size });
  }

  private firstFit(need: number): number {
    for (let i = 0; i < this.free.length; i++) if (this.free[i]!.size >= need) return i;
    return -1;
  }

  /** Insert keeping offset order, merging with the neighbours it touches. */
  private insertFree(span: Span): void {
    let i = 0;
    while (i < this.free.length && this.free[i]!.offset < span.offset) i++;
    const prev = i > 0 ? this.free[i - 1]! : undefined;
    const next = i < this.free.length ? this.free[i]! : undefined;
    if (prev && prev.offset + prev.size === span.offset) {
      prev.size += span.size;
      if (next && prev.offset + prev.size === next.offset) {
        prev.size += next.size;
        this.free.splice(i, 1);
      }
      return;
    }
    if (next && span.offset + span.size === next.offset) {
      next.offset = span.offset;
      next.size += span.size;
      return;
    }
    this.free.splice(i, 0, span);
  }
}
