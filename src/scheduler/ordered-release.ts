/**
 * `preserve_ordering`: responses leave in the order requests were dispatched,
 * even when a later batch finishes first on another instance. A request's
 * responses are released as soon as every earlier request has had its final
 * response; until then they wait here.
 */
import type { InferResponse } from '../core/request';

/** What the release queue needs of a request record. */
export interface OrderSlot {
  /** Responses waiting for earlier requests; null when none. */
  held: InferResponse[] | null;
  /** Its final response has arrived (released or held). */
  finalSeen: boolean;
  /** Registered and not yet past (a rescheduled request runs again without a new place). */
  inOrder?: boolean;
}

export class OrderedRelease<S extends OrderSlot> {
  private readonly slots: S[] = [];

  constructor(private readonly release: (slot: S, response: InferResponse) => void) {}

  /** Call at dispatch, in dispatch order; a request already in line keeps its place. */
  register(slot: S): void {
    if (slot.inOrder === true) return;
    slot.inOrder = true;
    slot.held = null;
    slot.finalSeen = false;
    this.slots.push(slot);
  }

  deliver(slot: S, response: InferResponse): void {
    if (slot.finalSeen) return; // nothing may follow a final response
    if (response.final) slot.finalSeen = true;
    if (this.slots[0] !== slot) {
      (slot.held ??= []).push(response);
      return;
    }
    this.release(slot, response);
    if (response.final) {
      this.slots.shift();
      slot.inOrder = false;
      this.flush();
    }
  }

  /**
   * `slot` gives up its place before its final response (a rescheduled
   * request that runs on in another pool's line): what it holds goes out
   * now, and the requests behind it move up.
   */
  leave(slot: S): void {
    const at = this.slots.indexOf(slot);
    if (at < 0) return;
    this.slots.splice(at, 1);
    slot.inOrder = false;
    const held = slot.held;
    slot.held = null;
    if (held !== null) for (const r of held) this.release(slot, r);
    if (at === 0) this.flush();
  }

  /** Release what the new head requests hold, up to the first one still running. */
  private flush(): void {
    while (this.slots.length > 0) {
      const head = this.slots[0]!;
      const held = head.held;
      head.held = null;
      if (held !== null) for (const r of held) this.release(head, r);
      if (!head.finalSeen) return;
      this.slots.shift();
      head.inOrder = false;
    }
  }
}
