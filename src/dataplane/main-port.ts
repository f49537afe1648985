/**
 * The main thread's receiving end of the data plane: one doorbell and one
 * Inbox drain every ring that flows into the main thread (HTTP threads and
 * instance threads), so the main thread waits on a single word.
 */
import { Doorbell, Inbox } from './ring';
import type { DoorbellHandle } from './ring';

export class MainPort {
  readonly bell: DoorbellHandle;
  readonly inbox: Inbox;
  constructor() {
    this.bell = Doorbell.create().handle;
    this.inbox = new Inbox(this.bell);
  }
  start(): void {
    this.inbox.start();
  }
  stop(): void {
    this.inbox.stop();
  }
}
