/**
 * The scheduler of a `dynamic_batching` model: requests wait in a queue,
 * decideBatch (batch-decision.ts) says when and how many form a batch, and
 * the batch runs on the next free instance. Only free instances pull batches,
 * so under load the queue grows while instances are busy and the next
 * decision sees a bigger batch.
 */
import type { ModelInstance } from '../instances/instance';
import { RETRY_AFTER_SECONDS, requestIdPrefix } from '../core/errors';
import type { ModelConfig } from '../core/model-config';
import { batchKeyPlan, decideBatch, shapeKeyOf, type BatchPolicy } from './batch-decision';
import { nowNs, nowUs } from '../core/clock';
import { ExecutionPool } from './execution-pool';
import { QueuedRequest } from './queued-request';
import { stoppingMessage } from './scheduler-answers';
import { compilePriorityPlan, levelOf, PriorityQueue, timeoutOf } from './priority-queue';
import type { InferRequest, Respond } from '../core/request';
import type { Scheduler } from './scheduler';
import type { SchedulerHooks } from './scheduler-hooks';

/** Below this wait a 1 ms timer is too coarse, so the wait polls with setImmediate. */
const TIMER_GRANULARITY_US = 1000;

export class DynamicBatchScheduler implements Scheduler {
  /** Admitted requests: one FIFO per priority level, with the queue policies. */
  private readonly queue: PriorityQueue<QueuedRequest>;
  private readonly pool: ExecutionPool;
  private readonly policy: BatchPolicy;
  /** While stopping nothing waits: queued requests run as soon as they can. */
  private readonly drainPolicy: BatchPolicy;
  /** Requests the decision may look at: a batch never spans more. */
  private readonly peekCount: number;
  /** null when every request gets the same key (no batching constraint beyond size). */
  private readonly ragged: ReadonlySet<string> | null;
  private stopped: Promise<void> | null = null;

  /** The one pending wake-up, and the time it is for. */
  private timer: NodeJS.Timeout | null = null;
  private immediate: NodeJS.Immediate | null = null;
  private wakeUs = 0;
  private readonly onWake = (): void => {
    this.timer = null;
    this.immediate = null;
    this.dispatch();
  };

  private readonly model: string;

  constructor(config: ModelConfig, instances: readonly ModelInstance[], hooks?: SchedulerHooks) {
    this.model = config.name;
    const db = config.dynamic_batching;
    const maxBatchSize = Math.max(1, config.max_batch_size);
    const preferred = [...new Set(db?.preferred_batch_size ?? [])].filter((s) => s >= 1 && s <= maxBatchSize).sort((a, b) => a - b);
    this.policy = { maxBatchSize, preferredBatchSizes: preferred, maxQueueDelayUs: db?.max_queue_delay_microseconds ?? 0 };
    this.drainPolicy = { ...this.policy, maxQueueDelayUs: 0 };
    this.queue = new PriorityQueue(compilePriorityPlan(db));
    this.peekCount = maxBatchSize + 1;
    this.ragged = batchKeyPlan(config);
    this.pool = new ExecutionPool({
      model: config.name,
      instances,
      hooks,
      preserveOrdering: db?.preserve_ordering === true,
      directReplies: true,
      decoupled: config.model_transaction_policy?.decoupled === true,
      onIdle: () => this.dispatch(),
    });
  }

  enqueue(request: InferRequest, respond: Respond): void {
    if (this.stopped !== null) {
      this.pool.reject(request, respond, { code: 'UNAVAILABLE', message: stoppingMessage(request) });
      return;
    }
    const plan = this.queue.plan;
    const level = levelOf(plan, request.parameters['priority']);
    const timeoutUs = timeoutOf(plan.levels[level]!, request.parameters['timeout']);
    const key = this.ragged === null ? '' : shapeKeyOf(request, this.ragged);
    const q = new QueuedRequest(request, respond, nowNs(), key);
    if (!this.queue.push(q, level, timeoutUs, q.enqueuedUs)) {
      // Triton's text first (clients look for it), then which bound it is; 429 / RESOURCE_EXHAUSTED with the retry hint.
      const max = plan.levels[level]!.maxQueueSize;
      this.pool.reject(request, respond, {
        code: 'RESOURCE_EXHAUSTED',
        message:
          `${requestIdPrefix(request.id)}Exceeds maximum queue size: model '${this.model}' queues at most ${max} request(s)` +
          `${plan.levels.length > 1 ? ` at priority level ${level + 1}` : ''} (its max_queue_size); retry after ${RETRY_AFTER_SECONDS} s, or raise max_queue_size`,
      });
      return;
    }
    this.pool.admit();
    this.dispatch();
  }

  cancel(request: InferRequest): void {
    const q = this.queue.remove((x) => x.origin === request);
    if (q === undefined) {
      this.pool.cancelRunning(request);
      return;
    }
    this.pool.cancelQueued(q);
    // The batch the rest of the queue forms, and the wake-up it needs, may differ now.
    this.dispatch();
  }

  inflightCount(): number {
    return this.pool.inflightCount();
  }

  serve(on: boolean): void {
    this.pool.serve(on);
  }

  stop(): Promise<void> {
    if (this.stopped === null) {
      this.stopped = this.pool.drained();
      this.disarm();
      this.dispatch();
    }
    return this.stopped;
  }

  /** Form and start batches while an instance is free; otherwise arm the wake-up. */
  private dispatch(): void {
    const policy = this.stopped === null ? this.policy : this.drainPolicy;
    const queue = this.queue;
    let now = nowUs();
    if (queue.nextDeadlineUs() <= now) queue.expire(now, this.onExpired);
    while (queue.size > 0 && this.pool.hasIdle()) {
      now = nowUs();
      const d = decideBatch(queue.peek(this.peekCount), policy, now);
      if (d.kind === 'run') {
        this.pool.run(queue.take(d.count));
        continue;
      }
      if (d.kind === 'wait') this.arm(d.untilUs, now);
      break;
    }
    // Nothing left to wait for: do not keep a wake-up (and the event loop) alive.
    if (queue.size === 0) {
      this.disarm();
      return;
    }
    // Queued requests with a timeout are answered when it passes, even while every instance is busy.
    const deadline = queue.nextDeadlineUs();
    if (deadline !== Infinity) this.arm(deadline, now);
  }

  private readonly onExpired = (q: QueuedRequest): void => {
    this.pool.abandon(q, { code: 'UNAVAILABLE', message: 'Request timeout expired' });
  };

  /**
   * One wake-up at a time; an earlier one already armed serves (it re-decides
   * and re-arms). setTimeout has 1 ms granularity and may fire a little early,
   * after which the rest of the wait (< 1 ms) polls with setImmediate, so a
   * spin never lasts longer than about a millisecond.
   */
  private arm(untilUs: number, now: number): void {
    if ((this.timer !== null || this.immediate !== null) && this.wakeUs <= untilUs) return;
    this.disarm();
    this.wakeUs = untilUs;
    const waitUs = untilUs - now;
    if (waitUs >= TIMER_GRANULARITY_US) this.timer = setTimeout(this.onWake, Math.floor(waitUs / 1000));
    else this.immediate = setImmediate(this.onWake);
  }

  private disarm(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    if (this.immediate !== null) clearImmediate(this.immediate);
    this.timer = null;
    this.immediate = null;
  }
}
