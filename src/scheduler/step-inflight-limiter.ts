/**
 * `ensemble_scheduling.max_inflight_requests` (Triton 2.63+): the most
 * requests one step of an ensemble may have in flight at once, across every
 * request of that ensemble. A step over it waits (backpressure: the ensemble
 * holds its tensors, nothing is refused) until an earlier request of the same
 * step has had its final response; then the longest-waiting one starts. So a
 * fast upstream step cannot pile up requests, and the arena blocks they hold,
 * in front of a slow downstream one. 0 = no limit.
 *
 * Triton blocks the calling thread in its StepInflightRequestLimiter and
 * proceeds anyway after 300 s to avoid a deadlock; here the waiting step is a
 * queued callback, no thread waits, and a slot is always given back when its
 * step's request ends (no step waits on another request's later step), so
 * nothing can deadlock and there is no such timeout.
 */
export class StepInflightLimiter {
  private inflight = 0;
  private readonly waiting: (() => void)[] = [];
  private head = 0;
  private releasing = false;
  private releases = 0;

  constructor(readonly max: number) {}

  /** Runs `start` now when the step has room, else once a slot is released (first come, first served). */
  acquire(start: () => void): void {
    if (this.max > 0 && this.inflight >= this.max) {
      this.waiting.push(start);
      return;
    }
    this.inflight++;
    start();
  }

  /**
   * A request of the step had its final response: its slot goes to the next
   * one waiting. A start that ends at once (a step refused synchronously)
   * releases again from inside; that release is taken by the loop here, so
   * a long line of them does not grow the stack.
   */
  release(): void {
    this.releases++;
    if (this.releasing) return;
    this.releasing = true;
    try {
      while (this.releases > 0) {
        this.releases--;
        if (this.head < this.waiting.length) {
          const next = this.waiting[this.head]!;
          this.waiting[this.head++] = noop;
          if (this.head === this.waiting.length) {
            this.waiting.length = 0;
            this.head = 0;
          }
          next(); // the slot passes straight on: the in-flight count stays
        } else if (this.inflight > 0) {
          this.inflight--;
        }
      }
    } finally {
      this.releasing = false;
    }
  }

  /** Requests of the step running now. */
  inflightCount(): number {
    return this.inflight;
  }

  /** Requests of the step waiting for a slot. */
  waitingCount(): number {
    return this.waiting.length - this.head;
  }
}

function noop(): void {}
