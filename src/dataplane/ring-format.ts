/**
 * Shared-memory layout of the doorbell and the rings (see ring.ts for the
 * protocol), and the functions that create and check them.
 */
import { ServerError } from '../core/errors';

export interface DoorbellHandle {
  sab: SharedArrayBuffer;
}

export interface RingHandle {
  sab: SharedArrayBuffer;
  bell: DoorbellHandle;
}

// Doorbell words (one cache line apart: producers write SEQ, the consumer SLEEPING).
export const D_SEQ = 0;
export const D_SLEEPING = 16;
export const D_ARMED = 17; // the SEQ the consumer read when it last set SLEEPING (written with it)
// Third cache line: words written rarely (ring creation, the safety poll).
export const D_ID = 32; // random id, so Inbox.add can check a ring belongs to its bell
export const D_NEXT_RING = 33; // ring id counter
export const D_MISSED = 34; // wake-ups lost with the bell never rung (see WakeupCounters)
export const D_RECOVERIES = 35; // times the safety poll took over, any cause
export const D_BYTES = 192;

/** What the consumer of a doorbell counts in the bell's own memory; stays 0 unless something is wrong. */
export interface WakeupCounters {
  /** The safety poll found data waiting while the consumer slept and SEQ had not moved: a producer did not ring. */
  missedWakeups: number;
  /** The safety poll delivered what a wake-up should have (missed wake-ups, and waits that never returned). */
  safetyPollRecoveries: number;
}

/** The counters of a doorbell, read from any thread that holds its handle. */
export function doorbellCounters(h: DoorbellHandle): WakeupCounters {
  const i32 = new Int32Array(h.sab);
  return { missedWakeups: Atomics.load(i32, D_MISSED) >>> 0, safetyPollRecoveries: Atomics.load(i32, D_RECOVERIES) >>> 0 };
}

// Ring header words; head and tail on separate cache lines.
export const R_HEAD = 0; // consumer's read position
export const R_TAIL = 16; // producer's write position
export const R_BELL_ID = 24;
export const R_RING_ID = 25;
export const R_CAPACITY = 26;
export const R_HEADER_BYTES = 128;

export const WRAP = 0xffffffff;
export const MORE = 0x80000000;
export const LEN_MASK = 0x7fffffff;
export const MIN_CAPACITY = 256;
export const DEFAULT_CAPACITY = 1024 * 1024;

export class Doorbell {
  readonly handle: DoorbellHandle;
  private readonly i32: Int32Array;

  private constructor(sab: SharedArrayBuffer) {
    this.handle = { sab };
    this.i32 = new Int32Array(sab);
  }

  static create(): Doorbell {
    const bell = new Doorbell(new SharedArrayBuffer(D_BYTES));
    Atomics.store(bell.i32, D_ID, (Math.random() * 0x7fffffff) | 1);
    return bell;
  }

  static attach(h: DoorbellHandle): Doorbell {
    if (!(h?.sab instanceof SharedArrayBuffer) || h.sab.byteLength !== D_BYTES) {
      throw new ServerError('INTERNAL', 'Doorbell.attach: the handle is not a doorbell created by Doorbell.create');
    }
    return new Doorbell(h.sab);
  }

  /** Wakes the consumer unconditionally (e.g. to make it notice it was stopped). */
  ring(): void {
    Atomics.add(this.i32, D_SEQ, 1);
    Atomics.notify(this.i32, D_SEQ);
  }
}

export function createRing(bell: DoorbellHandle, capacityBytes: number = DEFAULT_CAPACITY): RingHandle {
  if (!(capacityBytes >= MIN_CAPACITY) || capacityBytes > LEN_MASK) {
    throw new ServerError('INTERNAL', `createRing: capacity must be ${MIN_CAPACITY}..${LEN_MASK} bytes, got ${capacityBytes}`);
  }
  const cap = Math.ceil(capacityBytes / 64) * 64;
  const sab = new SharedArrayBuffer(R_HEADER_BYTES + cap);
  const h = new Int32Array(sab, 0, R_HEADER_BYTES / 4);
  const b = new Int32Array(bell.sab);
  h[R_BELL_ID] = Atomics.load(b, D_ID);
  h[R_RING_ID] = Atomics.add(b, D_NEXT_RING, 1) + 1;
  Atomics.store(h, R_CAPACITY, cap);
  return { sab, bell };
}

export function align4(n: number): number {
  return (n + 3) & ~3;
}

export function checkRing(h: RingHandle): void {
  if (!(h?.sab instanceof SharedArrayBuffer) || h.sab.byteLength < R_HEADER_BYTES + MIN_CAPACITY || !(h.bell?.sab instanceof SharedArrayBuffer)) {
    throw new ServerError('INTERNAL', 'ring: the handle is not a ring created by createRing');
  }
}
