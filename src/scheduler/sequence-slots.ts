/**
 * The state of the sequence batcher's direct strategy, pure and synchronous
 * (sequence-batch-scheduler.ts drives it): each instance has a number of
 * batch slots; a sequence (correlation id) is bound to one slot of one
 * instance for its whole life, its requests queue on that slot in arrival
 * order, and one execution takes at most one request per slot. Sequences
 * that find every slot taken wait in a backlog, oldest first, and take the
 * next slot that frees. A slot frees when its sequence's END request has been
 * taken, or when the sequence stays idle past max_sequence_idle_microseconds.
 * A new sequence takes the free slot of lowest position on any instance (on
 * the instance with the fewest taken among equals), as Triton's ready-slot
 * queue does, so executions stay as small as they can (direct pads the idle
 * slots below the highest busy one: heads, takeSlots). The oldest strategy
 * uses the same structure with max_candidate_sequences slots per instance
 * and takes only the oldest ready heads (readyHeads, take with a limit).
 * The iterative sequence batcher ends a sequence itself once its request is
 * answered (finish) and puts a rescheduled request back first (requeue).
 */
import type { CorrelationId } from '../core/request';

/** A correlation id made a map key: numbers and strings never collide. */
export type SequenceKey = string;

export function sequenceKey(id: CorrelationId): SequenceKey {
  return typeof id === 'string' ? `s:${id}` : `n:${id}`; // a bigint id is never a safe number: no clash
}

export interface SequenceFlags {
  start: boolean;
  end: boolean;
}

export type AdmitResult = 'queued' | 'backlog' | 'no-start';

/** A queued request with when it was admitted (µs) and its admission number. */
interface Entry<T> {
  item: T;
  us: number;
  n: number;
}

/** The head request of a slot, as the batch policy sees it. */
export interface ReadyHead {
  /** Global slot index. */
  slot: number;
  enqueuedUs: number;
  /** Admission number: smaller is older. */
  n: number;
  /** Its batch key (keyOf of the constructor; '' without one): only equal keys share an execution. */
  shapeKey: string;
}

interface Sequence<T> {
  key: SequenceKey;
  /** Index into slots, or -1 while in the backlog. */
  slot: number;
  /** Requests waiting while in the backlog. */
  waiting: Entry<T>[];
  /** Its END request has arrived: no more requests belong to it. */
  ended: boolean;
  lastUs: number;
  /** The last of its requests taken to run (what cancelAfter finds it by). */
  lastTaken?: T;
}

interface Slot<T> {
  instance: number;
  owner: Sequence<T> | null;
  queue: Entry<T>[];
}

export class SequenceSlots<T> {
  private readonly slots: Slot<T>[] = [];
  /** Sequences that may still get requests (not ended), by key. */
  private readonly active = new Map<SequenceKey, Sequence<T>>();
  private readonly backlog: Sequence<T>[] = [];
  private readonly occupied: number[];
  private admitted = 0;

  constructor(
    readonly instanceCount: number,
    readonly slotsPerInstance: number,
    private readonly keyOf?: (item: T) => string,
  ) {
    if (!(instanceCount >= 1 && slotsPerInstance >= 1)) {
      throw new RangeError(`sequence slots need at least one instance and one slot, got ${instanceCount} x ${slotsPerInstance}`);
    }
    for (let i = 0; i < instanceCount; i++) {
      for (let s = 0; s < slotsPerInstance; s++) this.slots.push({ instance: i, owner: null, queue: [] });
    }
    this.occupied = new Array<number>(instanceCount).fill(0);
  }

  /** Queue a request of sequence `key`; 'no-start' when it is not active and lacks START. */
  admit(key: SequenceKey, flags: SequenceFlags, item: T, nowUs: number): AdmitResult {
    let seq = this.active.get(key);
    if (seq === undefined) {
      if (!flags.start) return 'no-start';
      seq = { key, slot: -1, waiting: [], ended: false, lastUs: nowUs };
      this.active.set(key, seq);
      if (!this.bind(seq)) this.backlog.push(seq);
    }
    // A START for an active sequence restarts it in place: same slot, order kept.
    seq.lastUs = nowUs;
    if (flags.end) {
      seq.ended = true;
      this.active.delete(key);
    }
    const entry: Entry<T> = { item, us: nowUs, n: this.admitted++ };
    if (seq.slot < 0) {
      seq.waiting.push(entry);
      return 'backlog';
    }
    this.slots[seq.slot]!.queue.push(entry);
    return 'queued';
  }

  /**
   * Puts a request of sequence `key` back at the front of its queue, to be
   * its next step (a rescheduled request). A sequence that lost its slot
   * meanwhile (idle expiry) starts again, as if with START.
   */
  requeue(key: SequenceKey, item: T, nowUs: number): AdmitResult {
    const seq = this.active.get(key);
    if (seq === undefined) return this.admit(key, { start: true, end: false }, item, nowUs);
    seq.lastUs = nowUs;
    const entry: Entry<T> = { item, us: nowUs, n: this.admitted++ };
    if (seq.slot < 0) {
      seq.waiting.unshift(entry);
      return 'backlog';
    }
    this.slots[seq.slot]!.queue.unshift(entry);
    return 'queued';
  }

  /**
   * Ends sequence `key` now, as an END request would, unless more of its
   * requests wait (the last of them ends it then): its slot goes to the
   * backlog's oldest sequence. Unknown or already ended: nothing.
   */
  finish(key: SequenceKey): void {
    const seq = this.active.get(key);
    if (seq === undefined) return;
    if (seq.slot < 0 ? seq.waiting.length > 0 : this.slots[seq.slot]!.queue.length > 0) return;
    seq.ended = true;
    this.active.delete(key);
    if (seq.slot >= 0) {
      this.free(seq.slot);
      return;
    }
    const at = this.backlog.indexOf(seq);
    if (at >= 0) this.backlog.splice(at, 1);
  }

  /** True when some slot of the instance has a request to run. */
  hasWork(instance: number): boolean {
    const base = instance * this.slotsPerInstance;
    for (let s = base; s < base + this.slotsPerInstance; s++) if (this.slots[s]!.queue.length > 0) return true;
    return false;
  }

  /** The head request of each slot of the instance that has one, oldest request first. */
  readyHeads(instance: number): ReadyHead[] {
    const heads: ReadyHead[] = [];
    const base = instance * this.slotsPerInstance;
    for (let s = base; s < base + this.slotsPerInstance; s++) {
      const head = this.slots[s]!.queue[0];
      if (head !== undefined) heads.push({ slot: s, enqueuedUs: head.us, n: head.n, shapeKey: this.keyOf?.(head.item) ?? '' });
    }
    return heads.sort((a, b) => a.n - b.n);
  }

  /** The head request of each slot of the instance by position (undefined: nothing queued there). */
  heads(instance: number): (T | undefined)[] {
    const base = instance * this.slotsPerInstance;
    const out: (T | undefined)[] = new Array(this.slotsPerInstance);
    for (let k = 0; k < this.slotsPerInstance; k++) out[k] = this.slots[base + k]!.queue[0]?.item;
    return out;
  }

  /**
   * The next execution of an instance: the head request of each of its
   * slots, in slot order; with a limit, only the `limit` oldest heads,
   * oldest first.
   */
  take(instance: number, nowUs: number, limit?: number): T[] {
    const base = instance * this.slotsPerInstance;
    const positions =
      limit === undefined
        ? Array.from({ length: this.slotsPerInstance }, (_, k) => k)
        : this.readyHeads(instance)
            .slice(0, limit)
            .map((h) => h.slot - base);
    return this.takeSlots(instance, positions, nowUs);
  }

  /** Takes the head request of each given slot position of the instance, in that order (empty slots give nothing). */
  takeSlots(instance: number, positions: readonly number[], nowUs: number): T[] {
    const batch: T[] = [];
    const base = instance * this.slotsPerInstance;
    for (const k of positions) {
      const s = base + k;
      const slot = this.slots[s]!;
      const head = slot.queue.shift();
      if (head === undefined) continue;
      batch.push(head.item);
      const owner = slot.owner!;
      owner.lastUs = nowUs;
      owner.lastTaken = head.item;
      if (owner.ended && slot.queue.length === 0) this.free(s);
    }
    return batch;
  }

  /**
   * Releases sequences idle for at least idleUs (no queued request and none
   * admitted or taken since), except those `held` names (an iterative
   * sequence whose request runs: it ends with its final response); returns
   * their keys. Their slots go to the backlog.
   */
  expireIdle(nowUs: number, idleUs: number, held?: (key: SequenceKey) => boolean): SequenceKey[] {
    const released: SequenceKey[] = [];
    for (let s = 0; s < this.slots.length; s++) {
      const slot = this.slots[s]!;
      const owner = slot.owner;
      if (owner === null || slot.queue.length > 0 || nowUs - owner.lastUs < idleUs) continue;
      if (held?.(owner.key) === true) continue;
      released.push(owner.key);
      if (this.active.get(owner.key) === owner) this.active.delete(owner.key);
      this.free(s);
    }
    return released;
  }

  /** The first queued item (in a slot's queue or the backlog) that `match` accepts. */
  find(match: (item: T) => boolean): T | undefined {
    for (const slot of this.slots) for (const e of slot.queue) if (match(e.item)) return e.item;
    for (const seq of this.backlog) for (const e of seq.waiting) if (match(e.item)) return e.item;
    return undefined;
  }

  /**
   * `item` was cancelled while queued. As Triton's sequence batcher does, a
   * cancelled request ends its sequence: it and every later queued request
   * of that sequence leave the queue; the earlier ones still run, then the
   * slot frees (at once when nothing of the sequence is left queued). A
   * sequence still in the backlog has run nothing: all of it leaves (Triton
   * cancels a backlog with any cancelled request in it). Later requests of
   * that id need a new START. Returns what left, in queue order (`item`
   * among it), or [] when `item` is not queued.
   */
  cancel(item: T): T[] {
    for (let s = 0; s < this.slots.length; s++) {
      const slot = this.slots[s]!;
      const at = slot.queue.findIndex((e) => e.item === item);
      if (at < 0) continue;
      const gone = slot.queue.splice(at).map((e) => e.item);
      const owner = slot.owner!;
      this.end(owner);
      if (slot.queue.length === 0) this.free(s);
      return gone;
    }
    for (let b = 0; b < this.backlog.length; b++) {
      const seq = this.backlog[b]!;
      if (!seq.waiting.some((e) => e.item === item)) continue;
      this.backlog.splice(b, 1);
      this.end(seq);
      const gone = seq.waiting.map((e) => e.item);
      seq.waiting = [];
      return gone;
    }
    return [];
  }

  /**
   * `item`, the request of a sequence that was taken to run last, was
   * cancelled while it ran: the sequence ends as with a queued request's
   * cancel. Every request of it still queued leaves (returned in queue
   * order), its slot frees, and later requests of that id need a new START.
   * [] when nothing of that sequence is queued any more and its slot is free
   * (the running request was its END).
   */
  cancelAfter(item: T): T[] {
    for (let s = 0; s < this.slots.length; s++) {
      const slot = this.slots[s]!;
      const owner = slot.owner;
      if (owner === null || owner.lastTaken !== item) continue;
      const gone = slot.queue.splice(0).map((e) => e.item);
      this.end(owner);
      this.free(s);
      return gone;
    }
    return [];
  }

  /** Sequences bound to a slot or waiting for one. */
  sequenceCount(): number {
    let n = this.backlog.length;
    for (const slot of this.slots) if (slot.owner !== null) n++;
    return n;
  }

  backlogCount(): number {
    return this.backlog.length;
  }

  /** Where a sequence is: [instance, slot within it], or null when not bound. */
  slotOf(key: SequenceKey): [number, number] | null {
    const seq = this.active.get(key);
    if (seq === undefined || seq.slot < 0) return null;
    return [this.slots[seq.slot]!.instance, seq.slot % this.slotsPerInstance];
  }

  /**
   * Binds seq to the free slot of lowest position, on the instance with the
   * fewest taken among those where it is free; false when no slot is free.
   */
  private bind(seq: Sequence<T>): boolean {
    for (let k = 0; k < this.slotsPerInstance; k++) {
      let best = -1;
      for (let i = 0; i < this.instanceCount; i++) {
        if (this.slots[i * this.slotsPerInstance + k]!.owner !== null) continue;
        if (best < 0 || this.occupied[i]! < this.occupied[best]!) best = i;
      }
      if (best < 0) continue;
      const s = best * this.slotsPerInstance + k;
      const slot = this.slots[s]!;
      slot.owner = seq;
      seq.slot = s;
      this.occupied[best]!++;
      for (const item of seq.waiting) slot.queue.push(item);
      seq.waiting = [];
      return true;
    }
    return false;
  }

  /** No more requests belong to `seq`: its id is free for a new START. */
  private end(seq: Sequence<T>): void {
    seq.ended = true;
    if (this.active.get(seq.key) === seq) this.active.delete(seq.key);
  }

  private free(s: number): void {
    const slot = this.slots[s]!;
    if (slot.owner !== null) slot.owner.slot = -1;
    slot.owner = null;
    this.occupied[slot.instance]!--;
    const next = this.backlog.shift();
    if (next !== undefined && !this.bind(next)) this.backlog.unshift(next);
  }
}
