/**
 * The execution pool's side of instances that a frontend thread hosts
 * (instances/hosted-instance.ts): one gate per such instance, open while the
 * version serves and no admitted request waits in the pool's queue
 * (`inflight` ≤ `inBatches`), so a request the frontend runs inline never
 * passes one that queued first; and the statistics of each inline run,
 * counted as a request that ran at once on an instance.
 */
import type { InferRequest, Respond } from '../core/request';
import type { InlineMessage } from '../dataplane/protocol';
import type { InlineRuns, ModelInstance } from '../instances/instance';
import { RequestAccounting, schedulerWarning as warn } from './request-accounting';
import { QueuedRequest } from './queued-request';
import type { SchedulerHooks } from './scheduler-hooks';

const noRespond: Respond = () => undefined;

export class InlineGates {
  private readonly runs: InlineRuns[];
  private serving = false;
  private open = false;

  constructor(
    instances: readonly ModelInstance[],
    private readonly hooks: SchedulerHooks | undefined,
    private readonly accounting: RequestAccounting,
  ) {
    this.runs = instances.flatMap((i) => (i.inline === undefined ? [] : [i.inline]));
    for (const r of this.runs) r.onRun((request, run) => this.ran(request, run));
  }

  /** The version serves (its lifecycle says READY and this build takes its requests), or no longer does. */
  serve(on: boolean, inflight: number, inBatches: number): void {
    this.serving = on;
    this.update(inflight, inBatches);
  }

  /** After the pool's counts changed. */
  update(inflight: number, inBatches: number): void {
    if (this.runs.length === 0) return;
    const open = this.serving && inflight <= inBatches;
    if (open === this.open) return;
    this.open = open;
    for (const r of this.runs) r.setOpen(open);
  }

  /** A request a frontend thread ran on a hosted instance: one execution, one request, queue time ~0. */
  private ran(request: InferRequest, run: InlineMessage): void {
    if (this.hooks === undefined) return;
    if (this.hooks.executionDone !== undefined) {
      try {
        this.hooks.executionDone(run.batchSize, 1, run.timings, 0);
      } catch (err) {
        warn('executionDone hook', err);
      }
    }
    const q = new QueuedRequest(request, noRespond, run.queueStartNs, '');
    q.timings = run.timings;
    this.accounting.requestDone(q, run.ok, run.endNs);
  }
}
