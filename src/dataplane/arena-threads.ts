/**
 * The arena's table of live threads, in the arena header (arena-layout.ts
 * W_THREADS): one word per attached thread holding its owner id (threadId +
 * 1). A thread registers when it creates or attaches an Arena, before it can
 * take the lock or own a block; the main thread unregisters it in
 * Arena.threadDied once its Worker emitted 'exit'. worker_threads never
 * reuses a threadId in a process, so "not in the table" is final: a lock
 * holder or block owner that is not in the table is dead (or was never a
 * thread of this arena), and whoever finds that may take over its lock.
 */
import { ServerError } from '../core/errors';
import { THREAD_SLOTS, W_THREADS, W_THREADS_USED } from './arena-layout';

/** Adds ownerId to the table unless it is there already. i32 views the arena header. */
export function registerThread(i32: Int32Array, ownerId: number): void {
  if (isRegistered(i32, ownerId)) return;
  for (let i = 0; i < THREAD_SLOTS; i++) {
    if (Atomics.compareExchange(i32, W_THREADS + i, 0, ownerId) === 0) {
      // Scans stop at the high-water mark; raise it to cover slot i.
      for (let used = Atomics.load(i32, W_THREADS_USED); used < i + 1;) {
        const seen = Atomics.compareExchange(i32, W_THREADS_USED, used, i + 1);
        if (seen === used) break;
        used = seen;
      }
      return;
    }
  }
  throw new ServerError(
    'INTERNAL',
    `tensor arena: its thread table is full (${THREAD_SLOTS} live threads attached); ` + 'a thread that ended was not reported with Arena.threadDied',
  );
}

/** Removes ownerId from the table; false when it was not there. */
export function unregisterThread(i32: Int32Array, ownerId: number): boolean {
  const used = Atomics.load(i32, W_THREADS_USED);
  for (let i = 0; i < used; i++) {
    if (Atomics.compareExchange(i32, W_THREADS + i, ownerId, 0) === ownerId) return true;
  }
  return false;
}

export function isRegistered(i32: Int32Array, ownerId: number): boolean {
  const used = Atomics.load(i32, W_THREADS_USED);
  for (let i = 0; i < used; i++) {
    if (Atomics.load(i32, W_THREADS + i) === ownerId) return true;
  }
  return false;
}
