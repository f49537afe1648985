/**
 * The producer side of a ring: binary descriptors (the per-request
 * messages, descriptor-codec.ts) or JSON into the ring bytes, an in-order JS
 * overflow queue when the ring is full, chunks for messages bigger than half
 * the ring, and the doorbell rung only when the consumer sleeps.
 */
import { ServerError } from '../core/errors';
import { encodeDescriptor } from './descriptor-codec';
import { D_ARMED, D_SEQ, D_SLEEPING, MORE, R_CAPACITY, R_HEAD, R_HEADER_BYTES, R_TAIL, WRAP, align4, checkRing, type RingHandle } from './ring-format';

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

export interface RingWriterOptions {
  /**
   * For a producer on an event loop that sends in bursts (the HTTP and gRPC
   * threads, many requests in one loop turn): ring at most once per turn, in
   * its check phase, after every message of the turn is in the ring, so the
   * consumer wakes once for the burst instead of once per message. A
   * consumer that sleeps meanwhile re-checks the rings before it sleeps, so
   * nothing waits past the turn.
   */
  deferBell?: boolean;
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
  private retryTimer: NodeJS.Timeout | null = null;
  private retryImmediate: NodeJS.Immediate | null = null;
  private retries = 0;
  private closed = false;
  /** This writer rang (SEQ += 1 and notify, both done) while the consumer slept armed with `rungArmed`. */
  private rang = false;
  private rungArmed = 0;
  /** RingWriterOptions.deferBell: a ring is due at this event-loop turn's check phase. */
  private bellDue: NodeJS.Immediate | null = null;
  /** sendLazy: a ring is due when this timer fires, unless another ring comes first. */
  private lazyDue: NodeJS.Timeout | null = null;
  private lazyNext = false;
  private lazyMs = 0;
  private readonly deferBell: boolean;

  private constructor(h: RingHandle, options: RingWriterOptions) {
    this.deferBell = options.deferBell === true;
    this.hdr = new Int32Array(h.sab, 0, R_HEADER_BYTES / 4);
    this.cap = Atomics.load(this.hdr, R_CAPACITY);
    this.data = Buffer.from(h.sab, R_HEADER_BYTES, this.cap);
    this.bell = new Int32Array(h.bell.sab);
    this.maxRecord = this.cap >>> 1;
    this.tail = Atomics.load(this.hdr, R_TAIL);
    this.head = Atomics.load(this.hdr, R_HEAD);
  }

  static attach(h: RingHandle, options: RingWriterOptions = {}): RingWriter {
    checkRing(h);
    return new RingWriter(h, options);
  }

  /** Messages waiting in the JS overflow queue. */
  get pending(): number {
    return this.queue.length - this.queueStart;
  }

  /**
   * Never blocks: when the ring is full the message waits in order in a JS
   * queue. The per-request messages go as binary descriptors
   * (descriptor-codec.ts), the rest as JSON.
   */
  send(msg: unknown): void {
    if (this.closed) throw new ServerError('INTERNAL', 'RingWriter.send: the ring was closed (its consumer is gone)');
    const descriptor = typeof msg === 'object' && msg !== null ? encodeDescriptor(msg as { t: string }) : undefined;
    if (descriptor !== undefined) {
      if (this.pending > 0) this.flush();
      if (this.pending === 0 && descriptor.length + 4 <= this.maxRecord && this.tryWriteBytes(descriptor, false)) {
        this.ringBell();
        return;
      }
      this.enqueue(Buffer.from(descriptor)); // a copy: the scratch buffer is reused by the next send
      this.flush();
      return;
    }
    let json: string | undefined;
    try {
      json = JSON.stringify(msg);
    } catch (err) {
      throw new ServerError('INTERNAL', `RingWriter.send: message is not JSON-serialisable: ${(err as Error).message}`);
    }
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

  /**
   * As send, but the consumer is rung within `ms` rather than now (or at
   * the turn's end): for messages it needs only before it next reads what
   * they feed, when it drains its rings first (the statistics of inline
   * runs, hosted-instances.ts). A ring for any other message takes them
   * along. `ms` stays well under the consumer's safety poll, which would
   * otherwise count them as a missed wake-up.
   */
  sendLazy(msg: unknown, ms: number): void {
    this.lazyNext = true;
    this.lazyMs = ms;
    try {
      this.send(msg);
    } finally {
      this.lazyNext = false;
    }
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

  /**
   * For a consumer that is gone: write nothing more, drop what is queued
   * here, stop retrying. What the messages referenced is the caller's to
   * release (for the arena, Arena.threadDied sweeps the dead consumer's blocks).
   */
  close(): void {
    this.closed = true;
    this.queue = [];
    this.queueStart = 0;
    backlogged.delete(this);
    this.cancelRetry();
    if (this.bellDue !== null) clearImmediate(this.bellDue);
    this.bellDue = null;
    if (this.lazyDue !== null) clearTimeout(this.lazyDue);
    this.lazyDue = null;
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

  /**
   * Called after the tail store (seq-cst). A producer that sees the consumer
   * asleep rings for itself, unless this writer already rang (SEQ += 1 and
   * notify, both done) since the consumer armed its sleep (ARMED unchanged):
   * then its wake-up is on its way, the consumer drains every ring when it
   * comes, and another notify would only take V8's process-wide futex lock
   * again (ring.ts says why no message is left behind). Only its own ring
   * counts: another producer's may be stuck between its SEQ += 1 and its
   * notify. None clears SLEEPING (the consumer owns it), so no producer's
   * delay can hold back another producer's wake-up.
   */
  private ringBell(): void {
    if (this.lazyNext) {
      if (this.bellDue === null)
        this.lazyDue ??= setTimeout(() => {
          this.lazyDue = null;
          this.ringNow();
        }, this.lazyMs);
      return;
    }
    if (!this.deferBell) {
      this.ringNow();
      return;
    }
    this.bellDue ??= setImmediate(() => {
      this.bellDue = null;
      this.ringNow();
    });
  }

  private ringNow(): void {
    if (this.lazyDue !== null) {
      clearTimeout(this.lazyDue);
      this.lazyDue = null;
    }
    if (Atomics.load(this.bell, D_SLEEPING) === 0) return;
    const armed = Atomics.load(this.bell, D_ARMED);
    if (this.rang && armed === this.rungArmed) return;
    Atomics.add(this.bell, D_SEQ, 1);
    Atomics.notify(this.bell, D_SEQ);
    this.rang = true;
    this.rungArmed = armed;
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
    if (this.retryTimer !== null || this.retryImmediate !== null) return;
    const run = (): void => {
      this.retryTimer = null;
      this.retryImmediate = null;
      this.retries++;
      this.flush();
    };
    if (this.retries === 0) this.retryImmediate = setImmediate(run);
    else this.retryTimer = setTimeout(run, 1);
  }

  private cancelRetry(): void {
    if (this.retryImmediate !== null) clearImmediate(this.retryImmediate);
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryImmediate = null;
    this.retryTimer = null;
  }
}
