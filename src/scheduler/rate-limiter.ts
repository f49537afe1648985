/**
 * The instance rate limiter (`--rate-limit=execution_count`, protocol.md
 * §3.5 ModelRateLimiter, §6.7): an instance may start an execution only when
 * the resources its instance_group's `rate_limiter` asks for are free.
 * Resources are per device unless `global: true`; a per-device resource has,
 * on each device, the count `--rate-limit-resource=<name>:<count>:<device>`
 * (or `<name>:<count>` for every device) gives it, else the largest count any
 * instance on that device asks for; a global one likewise, shared by all.
 * Waiting executions start in order of their group's priority (lower first;
 * 0 counts as 1), then arrival. Across all models of the server.
 *
 * With `--rate-limit=off` nothing is wrapped and the hot path is unchanged.
 */
import { ServerError } from '../core/errors';
import type { ModelInstance } from '../instances/instance';
import { planInstances } from '../instances/instance-group';
import type { ModelConfig } from '../core/model-config';
import type { ExecuteResult, InferRequest, ReplyAddress, StreamResponse } from '../core/request';

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

interface Waiter {
  asks: readonly ResourceAsk[];
  priority: number;
  seq: number;
  grant: () => void;
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
      throw new ServerError('INTERNAL', `rate limiter: model '${config.name}' has ${instances.length} instances but its instance groups plan ${groupOf.length}`);
    }
    const asks = groupOf.map(({ group, device }) => asksOf(group.rate_limiter, device));
    // Check every instance before registering any, so a failed load leaves nothing behind.
    asks.forEach((mine, i) => {
      for (const ask of mine) {
        const have = availableCount(ask.key, this.overrides, [mine, ...this.registered.values()]);
        if (ask.count > have) {
          throw new ServerError('INVALID_ARG', `rate limiter: instance ${instances[i]!.name} of model '${config.name}' asks for ${ask.count} of resource '${ask.key.split(':').pop()!}' but only ${have} are available (--rate-limit-resource)`);
        }
      }
    });
    return instances.map((instance, i) => {
      const mine = asks[i]!;
      if (mine.length === 0) return instance;
      return new RateLimitedInstance(instance, this, mine, Math.max(1, groupOf[i]!.group.rate_limiter?.priority ?? 1));
    });
  }

  register(owner: object, asks: readonly ResourceAsk[]): void {
    this.registered.set(owner, asks);
  }

  unregister(owner: object): void {
    this.registered.delete(owner);
    this.grantWaiting(); // defaults may have shrunk or grown; re-check
  }

  /** Resolves once `asks` are allocated; pair with release(asks). */
  acquire(asks: readonly ResourceAsk[], priority: number): Promise<void> {
    if (this.waiting.length === 0 && fits(asks, this.used, (k) => this.available(k))) {
      this.take(asks);
      return Promise.resolve();
    }
    return new Promise((grant) => {
      const w: Waiter = { asks, priority, seq: this.seq++, grant };
      let at = this.waiting.length;
      while (at > 0 && this.waiting[at - 1]!.priority > priority) at--;
      this.waiting.splice(at, 0, w);
      this.grantWaiting();
    });
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

  /** In order; a waiter that does not fit lets later ones that fit go ahead. */
  private grantWaiting(): void {
    for (let i = 0; i < this.waiting.length;) {
      const w = this.waiting[i]!;
      if (fits(w.asks, this.used, (k) => this.available(k))) {
        this.waiting.splice(i, 1);
        this.take(w.asks);
        w.grant();
      } else {
        i++;
      }
    }
  }

  private take(asks: readonly ResourceAsk[]): void {
    for (const ask of asks) this.used.set(ask.key, (this.used.get(ask.key) ?? 0) + ask.count);
  }
}

/** An instance whose every execution holds its group's resources. */
class RateLimitedInstance implements ModelInstance {
  readonly name: string;

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
    await this.limiter.acquire(this.asks, this.priority);
    try {
      return await this.inner.execute(requests, stream, replyTo);
    } finally {
      this.limiter.release(this.asks);
    }
  }

  stop(): Promise<void> {
    this.limiter.unregister(this);
    return this.inner.stop();
  }

  kill(): Promise<void> {
    this.limiter.unregister(this);
    return this.inner.kill();
  }
}
