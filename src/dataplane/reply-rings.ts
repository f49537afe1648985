/**
 * Main-thread side of the direct response path (DESIGN.md "Hand-offs"): a
 * response goes from the instance thread that computed it straight to the
 * frontend thread that owns the client's connection, not through main.
 *
 * Each (instance thread, frontend thread) pair has its own ring, so each ring
 * keeps one producer (the instance) and one consumer (the frontend); it lives
 * on the frontend thread's doorbell, so the frontend's one Inbox drains it
 * with its ring from main. Rings are made here, on the main thread, when
 * either side starts:
 *  - a frontend thread registers (addFrontend) and gets a reply port number;
 *    every running instance gets a ring to it;
 *  - an instance thread registers (addInstance) and gets a ring to every
 *    registered frontend.
 * The frontend hears of a ring by postMessage (ReplyRingNotice; it adds the
 * ring to its Inbox and drains it at once, since the instance may have
 * written before the notice arrived). An instance thread sleeps in
 * Atomics.wait and runs no event loop, so its updates (PeersUpdate) wait on a
 * MessagePort that it reads with receiveMessageOnPort when a `peers` ring
 * message tells it to (instance-thread.ts); main posts the update before it
 * sends the `peers` message, and both before any `execute` that names the
 * new port, so the instance always knows a port before a request names it.
 *
 * When a side goes: a dead frontend's port is taken out of every instance
 * (its rings are forgotten; Arena.threadDied already swept what was given
 * to it); a gone instance's rings are drained one last time by each
 * frontend and removed from its Inbox.
 */
import { createRing, type DoorbellHandle, type Inbox, type RingHandle } from './ring';

/** What an instance thread needs to answer one frontend thread. */
export interface ReplyPeer {
  port: number;
  /** The frontend's worker threadId: outputs are given to it (Arena.give) before sending. */
  threadId: number;
  ring: RingHandle;
}

/** Main → instance thread, through its MessagePort, announced by a `peers` ring message. */
export interface PeersUpdate {
  add: ReplyPeer[];
  remove: number[];
}

/** Main → frontend thread (postMessage). */
export type ReplyRingNotice = { t: 'reply_ring_add'; ring: RingHandle } | { t: 'reply_ring_remove'; ring: RingHandle };

/**
 * Responses are small descriptors; a ring per pair adds up (50 models × the
 * HTTP threads), so these are smaller than the default. A burst that does not
 * fit waits in the writer's queue (ring-writer.ts).
 */
export const REPLY_RING_BYTES = 64 * 1024;

interface Frontend {
  port: number;
  threadId: number;
  bell: DoorbellHandle;
  post: (notice: ReplyRingNotice) => void;
}

interface Instance {
  update: (u: PeersUpdate) => void;
  /** Its ring to each frontend, by reply port. */
  rings: Map<number, RingHandle>;
}

export class ReplyRings {
  /**
   * Responses instance threads sent straight to a frontend thread, counted by
   * the frontends' main-side links as their `delivered` notes arrive
   * (nodetron_dataplane_direct_responses_total).
   */
  delivered = 0;
  private nextPort = 1;
  private nextInstance = 1;
  private readonly frontends = new Map<number, Frontend>();
  private readonly instances = new Map<number, Instance>();

  /** A frontend thread that will drain rings on `bell`; returns its reply port. */
  addFrontend(threadId: number, bell: DoorbellHandle, post: (notice: ReplyRingNotice) => void): number {
    const port = this.nextPort++;
    const f: Frontend = { port, threadId, bell, post };
    this.frontends.set(port, f);
    for (const inst of this.instances.values()) {
      const ring = this.ringTo(f, inst);
      inst.update({ add: [{ port, threadId, ring }], remove: [] });
    }
    return port;
  }

  /** The frontend thread is gone: no instance writes to it any more. Idempotent. */
  removeFrontend(port: number): void {
    if (!this.frontends.delete(port)) return;
    for (const inst of this.instances.values()) {
      if (inst.rings.delete(port)) inst.update({ add: [], remove: [port] });
    }
  }

  /** An instance thread about to start; `peers` go in its workerData, later changes to `update`. */
  addInstance(update: (u: PeersUpdate) => void): { id: number; peers: ReplyPeer[] } {
    const id = this.nextInstance++;
    const inst: Instance = { update, rings: new Map() };
    const peers: ReplyPeer[] = [];
    for (const f of this.frontends.values()) peers.push({ port: f.port, threadId: f.threadId, ring: this.ringTo(f, inst) });
    this.instances.set(id, inst);
    return { id, peers };
  }

  /** The instance thread has ended (it writes nothing more): each frontend drains and drops its ring. Idempotent. */
  removeInstance(id: number): void {
    const inst = this.instances.get(id);
    if (inst === undefined) return;
    this.instances.delete(id);
    for (const [port, ring] of inst.rings) this.frontends.get(port)?.post({ t: 'reply_ring_remove', ring });
  }

  /** Rings in use (tests, diagnostics). */
  ringCount(): number {
    let n = 0;
    for (const inst of this.instances.values()) n += inst.rings.size;
    return n;
  }

  private ringTo(f: Frontend, inst: Instance): RingHandle {
    const ring = createRing(f.bell, REPLY_RING_BYTES);
    inst.rings.set(f.port, ring);
    f.post({ t: 'reply_ring_add', ring });
    return ring;
  }
}

/**
 * Frontend-thread side of a notice: a new ring joins the thread's inbox and
 * is read at once (its instance may have written before the notice came); a
 * ring whose instance has ended is drained one last time, then dropped.
 */
export function applyReplyRingNotice(inbox: Inbox, notice: ReplyRingNotice, onMessage: (msg: any) => void): void {
  if (notice.t === 'reply_ring_add') {
    inbox.add(notice.ring, onMessage);
    inbox.drain();
  } else {
    inbox.drain();
    inbox.remove(notice.ring);
  }
}
