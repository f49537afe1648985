/**
 * Single-producer single-consumer message rings over SharedArrayBuffers, and a
 * doorbell that several rings share so one consumer thread sleeps on one word.
 *
 * Messages are JSON (small descriptors; tensor bytes live in the arena). A
 * record is a u32 header (payload length | MORE flag) and the UTF-8 payload,
 * padded to 4 bytes. A record that would cross the end of the ring is preceded
 * by a WRAP marker and written at 0. Messages larger than half the ring are cut
 * into MORE-flagged chunks that the reader joins, so any size gets through.
 *
 * Wake-ups (the expensive part, ~30 µs on this VM): the consumer sets the
 * bell's SLEEPING flag, reads SEQ, re-checks every ring, then waits on SEQ.
 * A producer stores its tail, then rings (SEQ += 1, notify) only if it
 * swaps SLEEPING from 1 to 0. Both sides use seq-cst Atomics, so either the
 * producer sees the flag or the consumer sees the tail: no lost wake-up.
 */
import { ServerError } from '../errors';

export interface DoorbellHandle {
  sab: SharedArrayBuffer;
}

export interface RingHandle {
  sab: SharedArrayBuffer;
  bell: DoorbellHandle;
}

// Doorbell words (one cache line apart: producers write SEQ, the consumer SLEEPING).
const D_SEQ = 0;
const D_SLEEPING = 16;
const D_ID = 32; // random id, so Inbox.add can check a ring belongs to its bell
const D_NEXT_RING = 33; // ring id counter
const D_BYTES = 192;

// Ring header words; head and tail on separate cache lines.
const R_HEAD = 0; // consumer's read position
const R_TAIL = 16; // producer's write position
const R_BELL_ID = 24;
const R_RING_ID = 25;
const R_CAPACITY = 26;
const R_HEADER_BYTES = 128;

/** Atomics.waitAsync is ES2024 in TypeScript's libs; Node 20 has it. */
const waitAsync = (Atomics as unknown as {
  waitAsync(ta: Int32Array, index: number, value: number): { async: boolean; value: Promise<string> | string };
}).waitAsync;

const WRAP = 0xffffffff;
const MORE = 0x80000000;
const LEN_MASK = 0x7fffffff;
const MIN_CAPACITY = 256;
const DEFAULT_CAPACITY = 1024 * 1024;

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

function align4(n: number): number {
  return (n + 3) & ~3;
}

interface Pending {
  bytes: Buffer;
  more: boolean;
}

/** Writers of this thread that hold queued messages; Inbox.drainOrWait retries them. */
const backlogged = new Set<RingWriter>();

/** Retries every backlogged writer of this thread; true when none is left backlogged. */
export function flushBackloggedWriters(): boolean {
  for (const w of backlogged) w.flush();
  return backlogged.size === 0;
}

export class RingWriter {
  private readonly hdr: Int32Array;
  private readonly data: Buffer;
  private readonly bell: Int32Array;
  private readonly cap: number;
  /** Largest record (header included) written in one piece; bigger messages are chunked. */
  private readonly maxRecord: number;
  private tail: number;
  /** Last head seen; reloaded only when it says there is not enough room. */
  private head: number;
  private queue: Pending[] = [];
  private queueStart = 0;
  private retryTimer: NodeJS.Timeout | NodeJS.Immediate | null = null;
  private retries = 0;

  private constructor(h: RingHandle) {
    this.hdr = new Int32Array(h.sab, 0, R_HEADER_BYTES / 4);
    this.cap = Atomics.load(this.hdr, R_CAPACITY);
    this.data = Buffer.from(h.sab, R_HEADER_BYTES, this.cap);
    this.bell = new Int32Array(h.bell.sab);
    this.maxRecord = this.cap >>> 1;
    this.tail = Atomics.load(this.hdr, R_TAIL);
    this.head = Atomics.load(this.hdr, R_HEAD);
  }

  static attach(h: RingHandle): RingWriter {
    checkRing(h);
    return new RingWriter(h);
  }

  /** Messages waiting in the JS overflow queue. */
  get pending(): number {
    return this.queue.length - this.queueStart;
  }

  /** Never blocks: when the ring is full the message waits in order in a JS queue. */
  send(msg: unknown): void {
    const json = JSON.stringify(msg);
    if (typeof json !== 'string') {
      throw new ServerError('INTERNAL', `RingWriter.send: message is not JSON-serialisable (${typeof msg})`);
    }
    if (this.pending > 0) this.flush();
    if (this.pending === 0 && this.tryWriteString(json)) {
      this.ringBell();
      return;
    }
    this.enqueue(Buffer.from(json, 'utf8'));
    this.flush();
  }

  /** Writes what the queue holds while there is room; true when the queue is empty. */
  flush(): boolean {
    let wrote = false;
    while (this.queueStart < this.queue.length) {
      const p = this.queue[this.queueStart];
      if (!this.tryWriteBytes(p.bytes, p.more)) break;
      wrote = true;
      this.queue[this.queueStart++] = undefined as unknown as Pending;
    }
    if (wrote) this.ringBell();
    if (this.queueStart === this.queue.length) {
      this.queue = [];
      this.queueStart = 0;
      backlogged.delete(this);
      this.cancelRetry();
      this.retries = 0;
      return true;
    }
    backlogged.add(this);
    this.scheduleRetry();
    return false;
  }

  /** Fast path: UTF-8 straight into the ring when the worst case fits. */
  private tryWriteString(json: string): boolean {
    const worst = json.length * 3;
    if (4 + worst > this.maxRecord) {
      const n = Buffer.byteLength(json, 'utf8');
      if (4 + n > this.maxRecord) return false; // chunked through the queue
      return this.tryWriteBytes(Buffer.from(json, 'utf8'), false);
    }
    const at = this.reserve(align4(4 + worst));
    if (at < 0) {
      const n = Buffer.byteLength(json, 'utf8');
      const exact = this.reserve(align4(4 + n));
      if (exact < 0) return false;
      this.data.write(json, exact + 4, n, 'utf8');
      this.commit(exact, n, 0);
      return true;
    }
    const n = this.data.write(json, at + 4, worst, 'utf8');
    this.commit(at, n, 0);
    return true;
  }

  private tryWriteBytes(bytes: Buffer, more: boolean): boolean {
    const at = this.reserve(align4(4 + bytes.length));
    if (at < 0) return false;
    bytes.copy(this.data, at + 4);
    this.commit(at, bytes.length, more ? MORE : 0);
    return true;
  }

  /**
   * Finds room for a record of `size` bytes; returns its start or -1. Writes
   * the WRAP marker when the record goes to the start of the ring.
   */
  private reserve(size: number): number {
    const cap = this.cap;
    const tail = this.tail;
    const toEnd = cap - tail;
    const need = size <= toEnd ? size : toEnd + size;
    if (this.room() < need) {
      this.head = Atomics.load(this.hdr, R_HEAD);
      if (this.room() < need) return -1;
    }
    if (size <= toEnd) return tail;
    this.data.writeUInt32LE(WRAP, tail);
    return 0;
  }

  /** Free bytes, keeping 4 bytes between tail and head so full != empty. */
  private room(): number {
    const used = this.tail >= this.head ? this.tail - this.head : this.cap - this.head + this.tail;
    return this.cap - 4 - used;
  }

  private commit(at: number, len: number, flags: number): void {
    this.data.writeUInt32LE((len | flags) >>> 0, at);
    const end = at + align4(4 + len);
    this.tail = end === this.cap ? 0 : end;
    Atomics.store(this.hdr, R_TAIL, this.tail);
  }

  private ringBell(): void {
    if (Atomics.compareExchange(this.bell, D_SLEEPING, 1, 0) === 1) {
      Atomics.add(this.bell, D_SEQ, 1);
      Atomics.notify(this.bell, D_SEQ);
    }
  }

  private enqueue(bytes: Buffer): void {
    const chunk = this.maxRecord - 4;
    if (bytes.length <= chunk) {
      this.queue.push({ bytes, more: false });
      return;
    }
    for (let off = 0; off < bytes.length; off += chunk) {
      const end = Math.min(off + chunk, bytes.length);
      this.queue.push({ bytes: bytes.subarray(off, end), more: end < bytes.length });
    }
  }

  /** setImmediate first, then 1 ms timers: the consumer is behind, do not spin on it. */
  private scheduleRetry(): void {
    if (this.retryTimer !== null) return;
    const run = (): void => {
      this.retryTimer = null;
      this.retries++;
      this.flush();
    };
    this.retryTimer = this.retries === 0 ? setImmediate(run) : setTimeout(run, 1);
  }

  private cancelRetry(): void {
    if (this.retryTimer === null) return;
    if (this.retries === 0) clearImmediate(this.retryTimer as NodeJS.Immediate);
    else clearTimeout(this.retryTimer as NodeJS.Timeout);
    this.retryTimer = null;
  }
}

function checkRing(h: RingHandle): void {
  if (!(h?.sab instanceof SharedArrayBuffer) || h.sab.byteLength < R_HEADER_BYTES + MIN_CAPACITY ||
      !(h.bell?.sab instanceof SharedArrayBuffer)) {
    throw new ServerError('INTERNAL', 'ring: the handle is not a ring created by createRing');
  }
}

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
  private loopActive = false;

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
    if (!this.loopActive) void this.loop();
  }

  /**
   * Stops the wait loop. A pending Atomics.waitAsync does not keep Node's
   * event loop alive, and the bell is rung so the loop ends promptly anyway.
   */
  stop(): void {
    if (!this.running) return;
    this.running = false;
    Atomics.store(this.bell, D_SLEEPING, 0);
    Atomics.add(this.bell, D_SEQ, 1);
    Atomics.notify(this.bell, D_SEQ);
  }

  private anyData(): boolean {
    for (const r of this.list) if (r.hasData()) return true;
    return false;
  }

  private async loop(): Promise<void> {
    this.loopActive = true;
    try {
      while (this.running) {
        this.drain();
        if (!this.running) break;
        Atomics.store(this.bell, D_SLEEPING, 1);
        const seq = Atomics.load(this.bell, D_SEQ);
        if (this.anyData()) {
          // More arrived while draining: let I/O run before the next round.
          Atomics.store(this.bell, D_SLEEPING, 0);
          await new Promise<void>((resolve) => setImmediate(resolve));
          continue;
        }
        const w = waitAsync(this.bell, D_SEQ, seq);
        if (w.async) await w.value;
        Atomics.store(this.bell, D_SLEEPING, 0);
      }
    } finally {
      this.loopActive = false;
    }
  }
}
