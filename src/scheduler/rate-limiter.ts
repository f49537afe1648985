/**
 * The instance rate limiter (`--rate-limit=execution_count`, protocol.md
 * §3.5 ModelRateLimiter, §6.7): an instance may start an execution only when
 * the resources its instance_group's `rate_limiter` asks for are free.
 * Resources are per device unless `global: true`; a per-device resource has,
 * on each device, the count `--rate-limit-resource=<name>:<count>:<device>`
 * (or `<name>:<count>` for every device) gives it, else the largest count any
 * instance on that device asks for; a global one likewise, shared by all.
 * Across all models of the server, waiting executions are ordered as
 * Triton's rate limiter orders staged instances: by scaled priority, the
 * executions the instance has completed × its group's `priority` (0 counts
 * as 1), lower first, then arrival. So priority is a weight, not a level:
 * an instance of priority 2 gets about half the executions of one of
 * priority 1 while both have work waiting, and neither starves
 * (scaledPriority, grantable). The first waiter in that order that does not
 * fit keeps the resources it asks for: a later waiter may go ahead only on
 * resources the earlier ones do not ask for (Triton lets nothing go ahead
 * of it; here an execution that needs none of its resources is not held up).
 *
 * A request cancelled while its batch waits for resources leaves the batch
 * unrun, answered CANCELLED (RateLimitedInstance.cancel).
 *
 * With `--rate-limit=off` nothing is wrapped and the hot path is unchanged.
 */
import { ServerError } from '../core/errors';
import type { ModelInstance } from '../instances/instance';
import { planInstances } from '../instances/instance-group';
import type { ModelConfig } from '../core/model-config';
import { nowNs } from '../core/clock';
import { skippedResponse, type ExecuteResult, type InferRequest, type ReplyAddress, type StreamResponse } from '../core/request';

export interface RateLimitOverride {
  name: string;
  count: number;
  /** Absent: every device (or the global resource of that name). */
  device?: number;
}

/** What one instance asks for, resolved to resource keys. */
export interface ResourceAsk {
  key: string;
  count: number;
}

/** `global:<name>` or `device:<id>:<name>`. */
export function resourceKey(name: string, global: boolean, device: number): string {
  return global ? `global:${name}` : `device:${device}:${name}`;
}

/** The asks of one instance of a group on `device`; [] when the group has no rate_limiter. */
export function asksOf(limiter: ModelConfig['instance_group'][number]['rate_limiter'], device: number): ResourceAsk[] {
  const asks: ResourceAsk[] = [];
  for (const r of limiter?.resources ?? []) {
    if (r.count > 0) asks.push({ key: resourceKey(r.name, r.global, device), count: r.count });
  }
  return asks;
}

/** Available count of `key`: an override if one names it, else the largest ask of any registered instance. */
export function availableCount(key: string, overrides: readonly RateLimitOverride[], registered: Iterable<readonly ResourceAsk[]>): number {
  const [scope, a, b] = key.split(':') as [string, string, string | undefined];
  const name = scope === 'global' ? a : b!;
  const device = scope === 'global' ? undefined : Number(a);
  let deviceAll: number | undefined;
  for (const o of overrides) {
    if (o.name !== name) continue;
    if (device !== undefined && o.device === device) return o.count;
    if (o.device === undefined) deviceAll = o.count;
  }
  if (deviceAll !== undefined) return deviceAll;
  let max = 0;
  for (const asks of registered) for (const ask of asks) if (ask.key === key && ask.count > max) max = ask.count;
  return max;
}

/** Whether `asks` fit in what is left given `used`. */
export function fits(asks: readonly ResourceAsk[], used: ReadonlyMap<string, number>, available: (key: string) => number): boolean {
  for (const ask of asks) if ((used.get(ask.key) ?? 0) + ask.count > available(ask.key)) return false;
  return true;
}

/**
 * Triton's ModelInstanceContext::ScaledPriority: executions completed so far
 * times the group's priority, where 0 counts as 1.
 */
export function scaledPriority(executions: number, priority: number): number {
  return executions * Math.max(1, priority);
}

/** What the grant decision needs of a waiting execution. */
export interface WaitingAsk {
  asks: readonly ResourceAsk[];
  /** scaledPriority at the time it asked: lower goes first. */
  rank: number;
  /** Arrival order: breaks ties of rank. */
  seq: number;
}

/**
 * Which waiters start now, as indices into `waiting` (which is in order:
 * rank, then seq), given what is in use. In order, each waiter that fits is
 * granted (and counts as used for the next); one that does not fit reserves
 * the resources it asks for, so no later waiter takes any of those ahead of it.
 */
export function grantable(waiting: readonly WaitingAsk[], used: ReadonlyMap<string, number>, available: (key: string) => number): number[] {
  const granted: number[] = [];
  const taken = new Map(used);
  const reserved = new Set<string>();
  for (let i = 0; i < waiting.length; i++) {
    const asks = waiting[i]!.asks;
    if (asks.some((a) => reserved.has(a.key))) continue;
    if (fits(asks, taken, available)) {
      granted.push(i);
      for (const a of asks) taken.set(a.key, (taken.get(a.key) ?? 0) + a.count);
    } else {
      for (const a of asks) reserved.add(a.key);
    }
  }
  return granted;
}

/** Lower rank first, then arrival. */
export function waitsBefore(a: WaitingAsk, b: WaitingAsk): boolean {
  return a.rank < b.rank || (a.rank === b.rank && a.seq < b.seq);
}

interface Waiter extends WaitingAsk {
  grant: () => void;
}

/**
 * One execution's wait for its resources (RateLimiter.request): `granted`
 * resolves once they are allocated (pair it with release); `withdraw()`
 * takes a wait not granted yet out of the line, so it never holds them
 * (true), or says it was granted already (false).
 */
export interface ResourceWait {
  granted: Promise<void>;
  withdraw(): boolean;
}

export class RateLimiter {
  private readonly used = new Map<string, number>();
  /** Asks of every live rate-limited instance (the defaults are the max of these). */
  private readonly registered = new Map<object, readonly ResourceAsk[]>();
  private readonly waiting: Waiter[] = [];
  private seq = 0;

  constructor(
    private readonly overrides: readonly RateLimitOverride[],
    private readonly gpuIds: readonly number[],
  ) {}

  /**
   * The instances the scheduler should use: wrapped so each execution holds
   * its group's resources. Throws (a load error) when an instance asks for
   * more than a `--rate-limit-resource` makes available.
   */
  wrap(config: ModelConfig, instances: ModelInstance[]): ModelInstance[] {
    // createInstances starts them in planInstances' order, group by group.
    const groupOf: { group: ModelConfig['instance_group'][number]; device: number }[] = [];
    for (const group of config.instance_group) {
      for (const p of planInstances({ ...config, instance_group: [group] }, this.gpuIds)) groupOf.push({ group, device: p.deviceId });
    }
    if (groupOf.length !== instances.length) {
      throw new ServerError(
        'INTERNAL',
        `rate limiter: model '${config.name}' has ${instances.length} instances but its instance groups plan ${groupOf.length}`,
      );
    }
    const asks = groupOf.map(({ group, device }) => asksOf(group.rate_limiter, device));
    // Check every instance before registering any, so a failed load leaves nothing behind.
    asks.forEach((mine, i) => {
      for (const ask of mine) {
        const have = availableCount(ask.key, this.overrides, [mine, ...this.registered.values()]);
        if (ask.count > have) {
          throw new ServerError(
            'INVALID_ARG',
            `rate limiter: instance ${instances[i]!.name} of model '${config.name}' asks for ${ask.count} of resource '${ask.key.split(':').pop()!}' but only ${have} are available (--rate-limit-resource)`,
          );
        }
      }
    });
    return instances.map((instance, i) => {
      const mine = asks[i]!;
      if (mine.length === 0) return instance;
      return new RateLimitedInstance(instance, this, mine, groupOf[i]!.group.rate_limiter?.priority ?? 0);
    });
  }

  register(owner: object, asks: readonly ResourceAsk[]): void {
    this.registered.set(owner, asks);
  }

  unregister(owner: object): void {
    this.registered.delete(owner);
    this.grantWaiting(); // defaults may have shrunk or grown; re-check
  }

  /**
   * `granted` resolves once `asks` are allocated; pair with release(asks).
   * rank: the instance's scaledPriority now. `withdraw` is the way out for
   * an execution whose requests were all cancelled while it waited.
   */
  request(asks: readonly ResourceAsk[], rank: number): ResourceWait {
    if (this.waiting.length === 0 && fits(asks, this.used, (k) => this.available(k))) {
      this.take(asks);
      return { granted: Promise.resolve(), withdraw: () => false };
    }
    let w!: Waiter;
    const granted = new Promise<void>((grant) => {
      w = { asks, rank, seq: this.seq++, grant };
      let at = this.waiting.length;
      while (at > 0 && waitsBefore(w, this.waiting[at - 1]!)) at--;
      this.waiting.splice(at, 0, w);
      this.grantWaiting();
    });
    const withdraw = (): boolean => {
      const i = this.waiting.indexOf(w);
      if (i < 0) return false;
      this.waiting.splice(i, 1);
      this.grantWaiting(); // what it reserved may let a later waiter go
      return true;
    };
    return { granted, withdraw };
  }

  release(asks: readonly ResourceAsk[]): void {
    for (const ask of asks) this.used.set(ask.key, (this.used.get(ask.key) ?? 0) - ask.count);
    this.grantWaiting();
  }

  /** Executions waiting for resources (tests, diagnostics). */
  waitingCount(): number {
    return this.waiting.length;
  }

  private available(key: string): number {
    return availableCount(key, this.overrides, this.registered.values());
  }

  /** Starts what grantable() allows, in order. */
  private grantWaiting(): void {
    if (this.waiting.length === 0) return;
    const granted = grantable(this.waiting, this.used, (k) => this.available(k));
    if (granted.length === 0) return;
    const go = granted.map((i) => this.waiting[i]!);
    for (let k = granted.length - 1; k >= 0; k--) this.waiting.splice(granted[k]!, 1);
    for (const w of go) {
      this.take(w.asks);
      w.grant();
    }
  }

  private take(asks: readonly ResourceAsk[]): void {
    for (const ask of asks) this.used.set(ask.key, (this.used.get(ask.key) ?? 0) + ask.count);
  }
}

interface WaitingBatch {
  requests: InferRequest[];
  /** Indexes of its requests cancelled while it waited. */
  cancelled: Set<number>;
  wait: ResourceWait;
  allCancelled: () => void;
}

/** Every request answered CANCELLED without running: the batch was cancelled whole while it waited. */
function skippedResult(requests: InferRequest[]): ExecuteResult {
  const t = nowNs();
  return { responses: requests.map((r) => skippedResponse(r)), timings: { computeStartNs: t, computeInputEndNs: t, computeInferEndNs: t, computeEndNs: t } };
}

/** An instance whose every execution holds its group's resources, and whose completed executions weigh its priority. */
class RateLimitedInstance implements ModelInstance {
  readonly name: string;
  /** Executions completed (Triton's exec_count_). */
  private executions = 0;
  /** Batches waiting for their resources: where a cancel looks first. */
  private readonly waits = new Set<WaitingBatch>();

  constructor(
    private readonly inner: ModelInstance,
    private readonly limiter: RateLimiter,
    private readonly asks: readonly ResourceAsk[],
    private readonly priority: number,
  ) {
    this.name = inner.name;
    limiter.register(this, asks);
  }

  // pipelineDepth stays 1: a queued batch must not hold resources while it waits.

  async execute(requests: InferRequest[], stream?: StreamResponse, replyTo?: (ReplyAddress | null)[]): Promise<ExecuteResult> {
    const wait = this.limiter.request(this.asks, scaledPriority(this.executions, this.priority));
    let allCancelled!: () => void;
    const entry: WaitingBatch = { requests, cancelled: new Set(), wait, allCancelled: () => allCancelled() };
    this.waits.add(entry);
    const outcome = await Promise.race([
      wait.granted.then(() => 'granted' as const),
      new Promise<'cancelled'>((resolve) => (allCancelled = () => resolve('cancelled'))),
    ]);
    this.waits.delete(entry);
    if (outcome === 'cancelled') return skippedResult(requests);
    try {
      if (entry.cancelled.size === 0) return await this.inner.execute(requests, stream, replyTo);
      // Every request left between the grant and now (cancels come as microtasks): nothing to run.
      if (entry.cancelled.size === requests.length) return skippedResult(requests);
      return await this.runRest(requests, entry.cancelled, stream, replyTo);
    } finally {
      this.executions++;
      this.limiter.release(this.asks);
    }
  }

  /**
   * A request of a batch still waiting for its resources leaves it: answered
   * CANCELLED without running (`skipped`); a batch whose every request left
   * stops waiting. One already running is its instance's to tell.
   */
  cancel(request: InferRequest): void {
    for (const e of this.waits) {
      const i = e.requests.indexOf(request);
      if (i < 0) continue;
      e.cancelled.add(i);
      if (e.cancelled.size === e.requests.length && e.wait.withdraw()) e.allCancelled();
      return;
    }
    this.inner.cancel?.(request);
  }

  /** Runs the requests of the batch that were not cancelled while it waited; the others are answered skipped. */
  private async runRest(
    requests: InferRequest[],
    cancelled: ReadonlySet<number>,
    stream?: StreamResponse,
    replyTo?: (ReplyAddress | null)[],
  ): Promise<ExecuteResult> {
    const keep: number[] = [];
    for (let i = 0; i < requests.length; i++) if (!cancelled.has(i)) keep.push(i);
    const result = await this.inner.execute(
      keep.map((i) => requests[i]!),
      stream === undefined ? undefined : (j, r) => stream(keep[j]!, r),
      replyTo === undefined ? undefined : keep.map((i) => replyTo[i] ?? null),
    );
    const responses = requests.map((r) => skippedResponse(r));
    keep.forEach((i, j) => {
      const r = result.responses[j];
      if (r !== undefined) responses[i] = r;
    });
    return { responses, timings: result.timings };
  }

  stop(): Promise<void> {
    this.limiter.unregister(this);
    return this.inner.stop();
  }

  get unready(): string | undefined {
    return this.inner.unready;
  }

  onUnreadyChange(listener: () => void): void {
    this.inner.onUnreadyChange?.(listener);
  }

  kill(): Promise<void> {
    this.limiter.unregister(this);
    return this.inner.kill();
  }
}
