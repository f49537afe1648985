/**
 * The main thread's receiving end of the data plane: one doorbell and one
 * Inbox drain every ring that flows into the main thread (HTTP threads and
 * instance threads), so the main thread waits on a single word. `bells`
 * creates every doorbell of the server (this one, and each HTTP and instance
 * thread's), so their wake-up counters can be summed for /metrics.
 * `replies` makes the rings that take responses from instance threads
 * straight to frontend threads (reply-rings.ts).
 */
import { DoorbellTally } from './doorbell-tally';
import { ReplyRings } from './reply-rings';
import { Inbox } from './ring';
import type { DoorbellHandle } from './ring';

export class MainPort {
  readonly bells = new DoorbellTally();
  readonly replies = new ReplyRings();
  readonly bell: DoorbellHandle;
  readonly inbox: Inbox;
  constructor() {
    this.bell = this.bells.create();
    this.inbox = new Inbox(this.bell);
  }
  start(): void {
    this.inbox.start();
  }
  stop(): void {
    this.inbox.stop();
  }
}
