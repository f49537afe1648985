/**
 * Every doorbell of the server is created on the main thread, through one
 * DoorbellTally (MainPort.bells), so the main thread can sum the wake-up
 * counters each consumer thread keeps in its bell's memory (see ring.ts).
 * When a bell's thread is gone (an instance restarted or unloaded, an HTTP
 * thread stopped) the bell is retired: its counts move into a running total,
 * so the sum never goes down, and the bell itself is let go.
 */
import { Doorbell, doorbellCounters, type DoorbellHandle, type WakeupCounters } from './ring';

export class DoorbellTally {
  private readonly live = new Set<DoorbellHandle>();
  private readonly retired: WakeupCounters = { missedWakeups: 0, safetyPollRecoveries: 0 };

  /** A new doorbell, counted from now on. */
  create(): DoorbellHandle {
    const bell = Doorbell.create().handle;
    this.live.add(bell);
    return bell;
  }

  /** The bell's consumer thread has exited: keep its counts, drop the bell. Idempotent. */
  retire(bell: DoorbellHandle): void {
    if (!this.live.delete(bell)) return;
    const c = doorbellCounters(bell);
    this.retired.missedWakeups += c.missedWakeups;
    this.retired.safetyPollRecoveries += c.safetyPollRecoveries;
  }

  /** Bells created and not retired. */
  get size(): number {
    return this.live.size;
  }

  /** The counters of every bell ever created here, summed. */
  totals(): WakeupCounters {
    const sum = { ...this.retired };
    for (const bell of this.live) {
      const c = doorbellCounters(bell);
      sum.missedWakeups += c.missedWakeups;
      sum.safetyPollRecoveries += c.safetyPollRecoveries;
    }
    return sum;
  }
}
