/**
 * The consumer side: an Inbox per consumer thread drains every ring that
 * shares its doorbell, waiting with Atomics.waitAsync (event-loop threads) or
 * Atomics.wait (threads with nothing else to do).
 */
import { ServerError } from '../core/errors';
import {
  D_ID, D_SEQ, D_SLEEPING, Doorbell, LEN_MASK, MORE, R_BELL_ID, R_CAPACITY, R_HEAD, R_HEADER_BYTES, R_RING_ID, R_TAIL,
  WRAP, align4, checkRing, type DoorbellHandle, type RingHandle,
} from './ring-format';
import { flushBackloggedWriters } from './ring-writer';

/** Atomics.waitAsync is ES2024 in TypeScript's libs; Node 20 has it. */
const waitAsync = (Atomics as unknown as {
  waitAsync(ta: Int32Array, index: number, value: number): { async: boolean; value: Promise<string> | string };
}).waitAsync;

/** Period of the event-loop mode's safety poll (see Inbox.start). */
const GUARD_MS = 50;

/** Consumer state of one ring. */
class RingReader {
  readonly id: number;
  private readonly hdr: Int32Array;
  private readonly data: Buffer;
  private readonly cap: number;
  private head: number;
  private parts: Buffer[] = [];

  constructor(h: RingHandle, readonly onMessage: (msg: any) => void) {
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
      let text: string | null = null;
      if (word & MORE) {
        this.parts.push(Buffer.from(this.data.subarray(start, start + len)));
      } else if (this.parts.length > 0) {
        this.parts.push(this.data.subarray(start, start + len));
        text = Buffer.concat(this.parts).toString('utf8');
        this.parts = [];
      } else {
        text = this.data.toString('utf8', start, start + len);
      }
      const end = start + align4(len);
      this.head = end === this.cap ? 0 : end;
      // The message is copied out: hand its space back before running the handler.
      Atomics.store(this.hdr, R_HEAD, this.head);
      if (text !== null) {
        n++;
        try {
          this.onMessage(JSON.parse(text));
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
  /** Wake-ups the doorbell missed and the safety poll made up for; stays 0 unless something is wrong. */
  missedWakeups = 0;

  constructor(bell: DoorbellHandle, options: InboxOptions = {}) {
    Doorbell.attach(bell);
    this.bell = new Int32Array(bell.sab);
    this.bellId = Atomics.load(this.bell, D_ID);
    this.spin = options.spin ?? 0;
    this.onError = options.onError ?? ((err) => queueMicrotask(() => { throw err; }));
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

  /** Deliver what is there now, without waiting; returns the count. */
  drain(): number {
    let n = 0;
    for (const r of this.list) n += r.drain(this.onError);
    return n;
  }

  /** For threads with nothing else to do: blocks (Atomics.wait) until a delivery or the timeout. */
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
      if (!this.anyData()) {
        const left = deadline - performance.now();
        if (left > 0) Atomics.wait(this.bell, D_SEQ, seq, flushed ? left : Math.min(left, 1));
      }
      Atomics.store(this.bell, D_SLEEPING, 0);
      n = this.drain();
      if (n > 0 || performance.now() >= deadline) return n;
    }
  }

  /** For event-loop threads: waits with Atomics.waitAsync and drains all rings on each wake-up. */
  start(): void {
    if (this.running) return;
    this.running = true;
    void this.loop(++this.generation);
    // Safety net: should a wake-up ever be lost (a bug here or in the platform),
    // messages still arrive, late, and missedWakeups says so. Unref'd.
    this.guard = setInterval(() => this.checkStall(), GUARD_MS);
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
    this.missedWakeups++;
    if (this.missedWakeups === 1) {
      // Whether SEQ moved tells a bell that was never rung from a waitAsync that never resolved.
      const rung = Atomics.load(this.bell, D_SEQ) !== this.parkedSeq;
      process.emitWarning(`Inbox: a doorbell wake-up was lost (bell ${rung ? 'rung, waitAsync did not resolve' :
        'not rung'}); the safety poll took over`, 'NodetronWarning');
    }
    // Abandon the stuck wait: a fresh loop takes over; the old one exits if it ever resumes.
    this.parked = false;
    Atomics.store(this.bell, D_SLEEPING, 0);
    void this.loop(++this.generation);
  }

  private async loop(gen: number): Promise<void> {
    while (gen === this.generation) {
      this.rounds++;
      this.drain();
      if (gen !== this.generation) return;
      Atomics.store(this.bell, D_SLEEPING, 1);
      const seq = Atomics.load(this.bell, D_SEQ);
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

