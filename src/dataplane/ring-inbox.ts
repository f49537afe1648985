/**
 * The consumer side: an Inbox per consumer thread drains every ring that
 * shares its doorbell, waiting with Atomics.waitAsync (event-loop threads) or
 * Atomics.wait (threads with nothing else to do). The consumer alone writes
 * the bell's SLEEPING word and its wake-up counters (see ring.ts).
 */
import { ServerError } from '../core/errors';
import {
  D_ARMED,
  D_ID,
  D_MISSED,
  D_RECOVERIES,
  D_SEQ,
  D_SLEEPING,
  Doorbell,
  LEN_MASK,
  MORE,
  R_BELL_ID,
  R_CAPACITY,
  R_HEAD,
  R_HEADER_BYTES,
  R_RING_ID,
  R_TAIL,
  WRAP,
  align4,
  checkRing,
  type DoorbellHandle,
  type RingHandle,
} from './ring-format';
import { decodeDescriptor, isDescriptor } from './descriptor-codec';
import { flushBackloggedWriters } from './ring-writer';

/** Atomics.waitAsync is ES2024 in TypeScript's libs; Node 20 has it. */
const waitAsync = (
  Atomics as unknown as {
    waitAsync(ta: Int32Array, index: number, value: number): { async: boolean; value: Promise<string> | string };
  }
).waitAsync;

/** Default period of the safety poll of both modes (see Inbox.start and Inbox.drainOrWait). */
const GUARD_MS = 50;

/** Consumer state of one ring. */
class RingReader {
  readonly id: number;
  private readonly hdr: Int32Array;
  private readonly data: Buffer;
  private readonly cap: number;
  private head: number;
  private parts: Buffer[] = [];

  constructor(
    h: RingHandle,
    readonly onMessage: (msg: any) => void,
  ) {
    this.hdr = new Int32Array(h.sab, 0, R_HEADER_BYTES / 4);
    this.id = this.hdr[R_RING_ID];
    this.cap = Atomics.load(this.hdr, R_CAPACITY);
    this.data = Buffer.from(h.sab, R_HEADER_BYTES, this.cap);
    this.head = Atomics.load(this.hdr, R_HEAD);
  }

  hasData(): boolean {
    return Atomics.load(this.hdr, R_TAIL) !== this.head;
  }

  /** Delivers every complete message present now; returns how many. */
  drain(onError: (err: unknown) => void): number {
    const tail = Atomics.load(this.hdr, R_TAIL);
    let n = 0;
    while (this.head !== tail) {
      const word = this.data.readUInt32LE(this.head);
      if (word === WRAP) {
        this.head = 0;
        continue;
      }
      const len = word & LEN_MASK;
      const start = this.head + 4;
      let complete = false;
      let msg: unknown;
      let failed: unknown;
      if (word & MORE) {
        this.parts.push(Buffer.from(this.data.subarray(start, start + len)));
      } else {
        complete = true;
        let buf = this.data;
        let a = start;
        let b = start + len;
        if (this.parts.length > 0) {
          this.parts.push(this.data.subarray(start, start + len));
          buf = Buffer.concat(this.parts);
          this.parts = [];
          a = 0;
          b = buf.length;
        }
        try {
          msg = isDescriptor(buf, a, b) ? decodeDescriptor(buf, a, b) : JSON.parse(buf.toString('utf8', a, b));
        } catch (err) {
          failed = err;
        }
      }
      const end = start + align4(len);
      this.head = end === this.cap ? 0 : end;
      // The message is decoded (copied out): hand its space back before running the handler.
      Atomics.store(this.hdr, R_HEAD, this.head);
      if (complete) {
        n++;
        if (failed !== undefined) {
          onError(failed);
          continue;
        }
        try {
          this.onMessage(msg);
        } catch (err) {
          onError(err);
        }
      }
    }
    return n;
  }
}

export interface InboxOptions {
  /**
   * drainOrWait polls the rings this many times before sleeping. Default 0:
   * the machine has 2 cores and spinning takes them from the other threads.
   */
  spin?: number;
  /**
   * Period of the safety poll, ms (default 50). Data must sit through a whole
   * period with the consumer asleep before the poll delivers it and counts it.
   */
  safetyPollMs?: number;
  /** A throwing onMessage handler; default: rethrown as an uncaught exception. */
  onError?: (err: unknown) => void;
}

/** The consumer side: one per consumer thread, drains every ring that shares its doorbell. */
export class Inbox {
  private readonly bell: Int32Array;
  private readonly bellId: number;
  private readonly readers = new Map<number, RingReader>();
  private list: RingReader[] = [];
  private readonly spin: number;
  private readonly pollMs: number;
  private readonly onError: (err: unknown) => void;
  private running = false;
  /** Bumped by start, stop and a stall: a loop of an older generation exits when it resumes. */
  private generation = 0;
  /** Loop rounds, and whether the loop is parked in waitAsync on which SEQ: what the safety poll looks at. */
  private rounds = 0;
  private parked = false;
  private parkedSeq = 0;
  private guard: NodeJS.Timeout | null = null;
  private guardRounds = -1;
  private warned = false;

  constructor(bell: DoorbellHandle, options: InboxOptions = {}) {
    Doorbell.attach(bell);
    this.bell = new Int32Array(bell.sab);
    this.bellId = Atomics.load(this.bell, D_ID);
    this.spin = options.spin ?? 0;
    this.pollMs = options.safetyPollMs ?? GUARD_MS;
    this.onError =
      options.onError ??
      ((err) =>
        queueMicrotask(() => {
          throw err;
        }));
  }

  add(h: RingHandle, onMessage: (msg: any) => void): void {
    checkRing(h);
    const reader = new RingReader(h, onMessage);
    if (new Int32Array(h.sab, 0, R_HEADER_BYTES / 4)[R_BELL_ID] !== this.bellId) {
      throw new ServerError('INTERNAL', `Inbox.add: ring ${reader.id} was created for another doorbell`);
    }
    if (this.readers.has(reader.id)) {
      throw new ServerError('INTERNAL', `Inbox.add: ring ${reader.id} is already in this inbox`);
    }
    this.readers.set(reader.id, reader);
    this.list = [...this.readers.values()];
  }

  remove(h: RingHandle): void {
    checkRing(h);
    const id = new Int32Array(h.sab, 0, R_HEADER_BYTES / 4)[R_RING_ID];
    if (this.readers.delete(id)) this.list = [...this.readers.values()];
  }

  /** Wake-ups the doorbell missed (never rung) that the safety poll made up for; in the bell's memory. */
  get missedWakeups(): number {
    return Atomics.load(this.bell, D_MISSED) >>> 0;
  }

  /** Times the safety poll had to deliver, whatever the cause; in the bell's memory. */
  get safetyPollRecoveries(): number {
    return Atomics.load(this.bell, D_RECOVERIES) >>> 0;
  }

  /** Deliver what is there now, without waiting; returns the count. */
  drain(): number {
    let n = 0;
    for (const r of this.list) n += r.drain(this.onError);
    return n;
  }

  /**
   * For threads with nothing else to do: blocks (Atomics.wait) until a
   * delivery or the timeout. The wait runs in safety-poll periods: data that
   * sits in the rings for a whole period with no wake-up is delivered anyway
   * and counted, as in the event-loop mode.
   */
  drainOrWait(timeoutMs: number): number {
    let n = this.drain();
    if (n > 0) return n;
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      // Queued replies of this thread need retries while it is blocked here.
      const flushed = flushBackloggedWriters();
      for (let i = 0; i < this.spin; i++) {
        if (this.anyData()) break;
      }
      Atomics.store(this.bell, D_SLEEPING, 1);
      const seq = Atomics.load(this.bell, D_SEQ);
      Atomics.store(this.bell, D_ARMED, seq);
      if (!this.anyData()) this.park(seq, deadline, flushed);
      Atomics.store(this.bell, D_SLEEPING, 0);
      n = this.drain();
      if (n > 0 || performance.now() >= deadline) return n;
    }
  }

  /** Atomics.wait on SEQ (SLEEPING is 1) until rung, the deadline, or the safety poll takes over. */
  private park(seq: number, deadline: number, flushed: boolean): void {
    let sighted = false;
    for (;;) {
      const left = deadline - performance.now();
      if (left <= 0) return;
      if (!flushed) {
        // Backlogged writers of this thread: come back in 1 ms to retry them.
        Atomics.wait(this.bell, D_SEQ, seq, Math.min(left, 1));
        return;
      }
      if (Atomics.wait(this.bell, D_SEQ, seq, Math.min(left, this.pollMs)) !== 'timed-out') return;
      if (!this.anyData()) {
        sighted = false;
      } else if (!sighted) {
        sighted = true; // first sighting: the wake-up may just be in flight
      } else {
        this.tookOver(seq);
        return;
      }
    }
  }

  /** For event-loop threads: waits with Atomics.waitAsync and drains all rings on each wake-up. */
  start(): void {
    if (this.running) return;
    this.running = true;
    void this.loop(++this.generation);
    // Safety net: should a wake-up ever be lost (a bug here or in the platform),
    // messages still arrive, late, and the bell's counters say so. Unref'd.
    this.guard = setInterval(() => this.checkStall(), this.pollMs);
    this.guard.unref();
  }

  /**
   * Stops the wait loop. A pending Atomics.waitAsync does not keep Node's
   * event loop alive, and the bell is rung so the loop ends promptly anyway.
   */
  stop(): void {
    if (!this.running) return;
    this.running = false;
    this.generation++;
    if (this.guard !== null) clearInterval(this.guard);
    this.guard = null;
    Atomics.store(this.bell, D_SLEEPING, 0);
    Atomics.add(this.bell, D_SEQ, 1);
    Atomics.notify(this.bell, D_SEQ);
  }

  private anyData(): boolean {
    for (const r of this.list) if (r.hasData()) return true;
    return false;
  }

  /** Data that sat in the rings for a whole poll period while the loop slept means a lost wake-up. */
  private checkStall(): void {
    if (!this.parked || !this.anyData()) {
      this.guardRounds = -1;
      return;
    }
    if (this.guardRounds !== this.rounds) {
      this.guardRounds = this.rounds; // first sighting: the wake-up may just be in flight
      return;
    }
    this.tookOver(this.parkedSeq);
    // Abandon the stuck wait: a fresh loop takes over; the old one exits if it ever resumes.
    this.parked = false;
    Atomics.store(this.bell, D_SLEEPING, 0);
    void this.loop(++this.generation);
  }

  /**
   * The safety poll delivers instead of a wake-up: counted in the bell. SEQ
   * unchanged since the consumer parked means no producer rang (a missed
   * wake-up); moved means the wait itself did not return (or a producer
   * stopped between SEQ += 1 and notify).
   */
  private tookOver(parkedSeq: number): void {
    Atomics.add(this.bell, D_RECOVERIES, 1);
    const rung = Atomics.load(this.bell, D_SEQ) !== parkedSeq;
    if (!rung) Atomics.add(this.bell, D_MISSED, 1);
    if (this.warned) return;
    this.warned = true;
    process.emitWarning(
      `Inbox: a doorbell wake-up was lost (bell ${rung ? 'rung, the wait did not return' : 'not rung'}); the safety poll took over`,
      'NodetronWarning',
    );
  }

  private async loop(gen: number): Promise<void> {
    while (gen === this.generation) {
      this.rounds++;
      this.drain();
      if (gen !== this.generation) return;
      Atomics.store(this.bell, D_SLEEPING, 1);
      const seq = Atomics.load(this.bell, D_SEQ);
      Atomics.store(this.bell, D_ARMED, seq);
      if (this.anyData()) {
        // More arrived while draining: let I/O run before the next round.
        Atomics.store(this.bell, D_SLEEPING, 0);
        await new Promise<void>((resolve) => setImmediate(resolve));
        continue;
      }
      const w = waitAsync(this.bell, D_SEQ, seq);
      if (w.async) {
        this.parked = true;
        this.parkedSeq = seq;
        await w.value;
        if (gen !== this.generation) return;
        this.parked = false;
      }
      Atomics.store(this.bell, D_SLEEPING, 0);
    }
  }
}
