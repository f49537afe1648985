/**
 * The arena's lock: a futex word in the arena header that names its owner,
 * so a thread that died holding it can be found out and the lock taken over.
 *
 * Word layout (W_LOCK): 0 when free, else (owner id << 1) | WAITERS, where the
 * owner id is the holder's worker_threads threadId + 1 and WAITERS says a
 * thread may be sleeping on the word. It is Drepper's "mutex2" (Futexes Are
 * Tricky) with the owner in the word: uncontended lock and unlock are one
 * compareExchange each; a waiter sets WAITERS and sleeps; unlock of a word
 * with WAITERS stores 0 and wakes one; a thread that acquires after sleeping
 * keeps WAITERS set (it cannot know whether others still sleep).
 *
 * Dead owners: waiters sleep with a timeout (WAIT_MIN_MS doubling to
 * WAIT_MAX_MS). On each timeout they look the owner up in the thread table
 * (arena-threads.ts); an owner that is not there is dead, and the waiter
 * takes the lock over with one compareExchange of the exact word it saw (two
 * waiters cannot both win). The caller of acquire() gets TOOK_OVER and must
 * repair the heap before using it (arena-repair.ts): the dead thread may
 * have stopped anywhere in a critical section.
 *
 * Bounded waits: only the main thread can declare a thread dead (it sees the
 * Worker's 'exit' event), and it cannot see that event while it sleeps here.
 * So on the main thread acquire() gives up (GAVE_UP) after MAIN_GIVE_UP_MS of
 * a live-looking owner, and returns to the event loop; other threads give up
 * after WORKER_GIVE_UP_MS. A critical section is well under a microsecond, so
 * either bound is only ever reached when the holder is dead or the machine
 * stalled.
 */
import { isMainThread } from 'node:worker_threads';
import { W_LOCK } from './arena-layout';
import { isRegistered } from './arena-threads';

export const ACQUIRED = 0;
/** Acquired from a dead owner: repair the heap before anything else. */
export const TOOK_OVER = 1;
/** Not acquired: the owner looked alive for the whole bound. */
export const GAVE_UP = 2;
export type Acquire = typeof ACQUIRED | typeof TOOK_OVER | typeof GAVE_UP;

const WAITERS = 1;
/** Spins before sleeping; the critical section is a few hundred ns. */
const SPINS = 64;
const WAIT_MIN_MS = 2;
const WAIT_MAX_MS = 50;
export const MAIN_GIVE_UP_MS = 500;
export const WORKER_GIVE_UP_MS = 10_000;

export class ArenaLock {
  /** This thread's lock word: owner id << 1. */
  private readonly mine: number;
  private readonly giveUpMs: number;
  /** Who held the lock when acquire() last gave up, and for how long it waited. */
  lastHolder = 0;
  lastWaitedMs = 0;

  /** i32 views the arena header (it never moves or grows). */
  constructor(
    private readonly i32: Int32Array,
    ownerId: number,
    giveUpMs = isMainThread ? MAIN_GIVE_UP_MS : WORKER_GIVE_UP_MS,
  ) {
    this.mine = ownerId << 1;
    this.giveUpMs = giveUpMs;
  }

  /** The owner id of the holder, 0 when free. */
  holder(): number {
    return Atomics.load(this.i32, W_LOCK) >>> 1;
  }

  /**
   * Takes the lock. `deadOwner` (optional) is an owner id the caller knows
   * is dead: if it holds the lock, take it over at once instead of after a
   * timeout.
   */
  acquire(deadOwner = 0): Acquire {
    const i32 = this.i32;
    if (Atomics.compareExchange(i32, W_LOCK, 0, this.mine) === 0) return ACQUIRED;
    for (let i = 0; i < SPINS; i++) {
      if (Atomics.load(i32, W_LOCK) === 0 && Atomics.compareExchange(i32, W_LOCK, 0, this.mine) === 0) return ACQUIRED;
    }
    return this.sleep(deadOwner);
  }

  release(): void {
    const i32 = this.i32;
    if (Atomics.compareExchange(i32, W_LOCK, this.mine, 0) === this.mine) return;
    Atomics.store(i32, W_LOCK, 0);
    Atomics.notify(i32, W_LOCK, 1);
  }

  private sleep(deadOwner: number): Acquire {
    const i32 = this.i32;
    const start = performance.now();
    let waitMs = WAIT_MIN_MS;
    for (;;) {
      let c = Atomics.load(i32, W_LOCK);
      if (c === 0) {
        if (Atomics.compareExchange(i32, W_LOCK, 0, this.mine | WAITERS) === 0) return ACQUIRED;
        continue;
      }
      if ((c & WAITERS) === 0) {
        if (Atomics.compareExchange(i32, W_LOCK, c, c | WAITERS) !== c) continue;
        c |= WAITERS;
      }
      const owner = c >>> 1;
      if (owner === deadOwner && deadOwner !== 0) {
        if (Atomics.compareExchange(i32, W_LOCK, c, this.mine | WAITERS) === c) return TOOK_OVER;
        continue;
      }
      if (Atomics.wait(i32, W_LOCK, c, waitMs) !== 'timed-out') continue;
      if (!isRegistered(i32, owner)) {
        if (Atomics.compareExchange(i32, W_LOCK, c, this.mine | WAITERS) === c) return TOOK_OVER;
        continue;
      }
      const waited = performance.now() - start;
      if (waited >= this.giveUpMs) {
        this.lastHolder = owner;
        this.lastWaitedMs = waited;
        return GAVE_UP;
      }
      waitMs = Math.min(waitMs * 2, WAIT_MAX_MS);
    }
  }
}
