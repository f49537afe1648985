/**
 * The scheduler of a model without a scheduling block: a FIFO queue, one
 * request per execution, each on the next free instance.
 */
import type { ModelInstance } from '../instances/instance';
import { nowNs } from '../core/clock';
import { ExecutionPool } from './execution-pool';
import { QueuedRequest } from './queued-request';
import { stoppingMessage } from './scheduler-answers';
import type { InferRequest, Respond } from '../core/request';
import type { Scheduler } from './scheduler';
import type { SchedulerHooks } from './scheduler-hooks';

export class DefaultScheduler implements Scheduler {
  private readonly queue: QueuedRequest[] = [];
  private readonly pool: ExecutionPool;
  private stopped: Promise<void> | null = null;

  constructor(model: string, instances: readonly ModelInstance[], hooks?: SchedulerHooks, decoupled = false) {
    this.pool = new ExecutionPool({ model, instances, hooks, pipeline: true, directReplies: true, decoupled, onIdle: () => this.dispatch() });
  }

  enqueue(request: InferRequest, respond: Respond): void {
    if (this.stopped !== null) {
      this.pool.reject(request, respond, { code: 'UNAVAILABLE', message: stoppingMessage(request) });
      return;
    }
    this.pool.admit();
    this.queue.push(new QueuedRequest(request, respond, nowNs(), ''));
    this.dispatch();
  }

  cancel(request: InferRequest): void {
    const i = this.queue.findIndex((q) => q.origin === request);
    if (i < 0) {
      this.pool.cancelRunning(request);
      return;
    }
    const [q] = this.queue.splice(i, 1);
    this.pool.cancelQueued(q!);
  }

  inflightCount(): number {
    return this.pool.inflightCount();
  }

  serve(on: boolean): void {
    this.pool.serve(on);
  }

  stop(): Promise<void> {
    // Queued requests still run: the queue drains as instances free up.
    this.stopped ??= this.pool.drained();
    return this.stopped;
  }

  private dispatch(): void {
    while (this.queue.length > 0 && this.pool.hasIdle()) {
      this.pool.run([this.queue.shift()!]);
    }
  }
}
