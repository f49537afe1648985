/**
 * The main thread's receiving end of the data plane: one doorbell and one
 * Inbox drain every ring that flows into the main thread (HTTP threads and
 * instance threads), so the main thread waits on a single word. `bells`
 * creates every doorbell of the server (this one, and each HTTP and instance
 * thread's), so their wake-up counters can be summed for /metrics.
 * `replies` makes the rings that take responses from instance threads
 * straight to frontend threads (reply-rings.ts). `hosts` lists the frontend
 * threads that can run instances inline (instance-hosts.ts); a request they
 * run that way never reaches this thread's route, so `lastInlineMs` notes
 * when the last one was (a stop waits for the traffic to go quiet).
 */
import { DoorbellTally } from './doorbell-tally';
import { InstanceHosts } from './instance-hosts';
import { ReplyRings } from './reply-rings';
import { Inbox } from './ring';
import type { DoorbellHandle } from './ring';

export class MainPort {
  readonly bells = new DoorbellTally();
  readonly replies = new ReplyRings();
  readonly hosts = new InstanceHosts();
  lastInlineMs = 0;
  private readonly settlers: (() => void)[] = [];
  readonly bell: DoorbellHandle;
  readonly inbox: Inbox;
  constructor() {
    this.bell = this.bells.create();
    this.inbox = new Inbox(this.bell);
  }
  /**
   * Before anything reads the statistics: deliver what the rings into main
   * hold now (inline runs' statistics come on lazily rung rings) and let
   * each settler apply what was delivered (hosted-instance.ts: in the order
   * the requests ended, over every HTTP thread).
   */
  settle(): void {
    this.inbox.drain();
    for (const f of this.settlers) f();
  }

  onSettle(f: () => void): void {
    this.settlers.push(f);
  }

  start(): void {
    this.inbox.start();
  }
  stop(): void {
    this.inbox.stop();
  }
}
