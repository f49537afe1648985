/**
 * The dynamic batcher's queue under `priority_levels` and the queue policies
 * (protocol.md §3.6): one FIFO per priority level, scanned from level 1
 * (highest) down, each with its policy (`max_queue_size`, timeouts and what a
 * timeout does). Pure data structure with a caller-supplied clock, so it is
 * table-tested without timers.
 *
 * Within a level, requests whose timeout expired under the DELAY action move
 * behind every request of that level that has not timed out (Triton's
 * delayed queue); under REJECT they leave the queue through `expire`.
 */
import type { ModelDynamicBatching, ModelQueuePolicy } from '../core/model-config';
import type { ParamValue } from '../core/request';

export interface QueuePolicy {
  timeoutAction: 'REJECT' | 'DELAY';
  /** 0 = requests never time out unless they ask to (and may). */
  defaultTimeoutUs: number;
  /** A request's `timeout` parameter may shorten the default (never lengthen it). */
  allowTimeoutOverride: boolean;
  /** 0 = unbounded; counts this level's requests, delayed ones included. */
  maxQueueSize: number;
}

/** The queue policy of every level, compiled once at load. */
export interface PriorityPlan {
  /** Index 0 is priority level 1 (highest). Length >= 1. */
  levels: readonly QueuePolicy[];
  /** Level index of requests that name no (valid) priority. */
  defaultLevel: number;
}

const NO_POLICY: QueuePolicy = { timeoutAction: 'REJECT', defaultTimeoutUs: 0, allowTimeoutOverride: false, maxQueueSize: 0 };

function policyOf(p: ModelQueuePolicy | undefined): QueuePolicy {
  if (p === undefined || p === null) return NO_POLICY;
  return {
    timeoutAction: p.timeout_action === 'DELAY' ? 'DELAY' : 'REJECT',
    defaultTimeoutUs: Number(p.default_timeout_microseconds ?? 0),
    allowTimeoutOverride: p.allow_timeout_override === true,
    maxQueueSize: Number(p.max_queue_size ?? 0),
  };
}

export function compilePriorityPlan(db: ModelDynamicBatching | undefined): PriorityPlan {
  const count = Math.max(0, Number(db?.priority_levels ?? 0));
  const fallback = policyOf(db?.default_queue_policy);
  if (count === 0) return { levels: [fallback], defaultLevel: 0 };
  const levels: QueuePolicy[] = [];
  for (let level = 1; level <= count; level++) {
    const own = db?.priority_queue_policy?.[String(level)];
    levels.push(own === undefined ? fallback : policyOf(own));
  }
  const def = Number(db?.default_priority_level ?? 1);
  return { levels, defaultLevel: def >= 1 && def <= count ? def - 1 : 0 };
}

/**
 * The level index of a request's `priority` parameter: 0 or absent means the
 * model's default level, and so does a value above the model's levels (Triton
 * maps those silently). Without priority levels every request is level 0.
 */
export function levelOf(plan: PriorityPlan, priority: ParamValue | undefined): number {
  if (typeof priority !== 'number' || !Number.isInteger(priority)) return plan.defaultLevel;
  if (priority < 1 || priority > plan.levels.length) return plan.defaultLevel;
  return priority - 1;
}

/** The timeout (µs, 0 = none) a request gets under `policy`, given its `timeout` parameter. */
export function timeoutOf(policy: QueuePolicy, requested: ParamValue | undefined): number {
  const def = policy.defaultTimeoutUs;
  if (!policy.allowTimeoutOverride || typeof requested !== 'number' || !(requested > 0)) return def;
  return def === 0 || requested < def ? requested : def;
}

interface Level<T> {
  policy: QueuePolicy;
  /** Requests in arrival order, and their deadlines (µs; 0 = none), index for index. */
  items: T[];
  deadlines: number[];
  /** Requests whose timeout passed under DELAY: served after `items`. */
  delayed: T[];
}

export class PriorityQueue<T> {
  private readonly levels: Level<T>[];
  private count = 0;
  /** No deadline is earlier than this (it may be stale-early, never late). */
  private earliest = Infinity;

  constructor(readonly plan: PriorityPlan) {
    this.levels = plan.levels.map((policy) => ({ policy, items: [], deadlines: [], delayed: [] }));
  }

  get size(): number {
    return this.count;
  }

  /** Queue `item` at `level` with the deadline its timeout gives; false when that level is full. */
  push(item: T, level: number, timeoutUs: number, nowUs: number): boolean {
    const l = this.levels[level] ?? this.levels[this.plan.defaultLevel]!;
    const max = l.policy.maxQueueSize;
    if (max > 0 && l.items.length + l.delayed.length >= max) return false;
    const deadline = timeoutUs > 0 ? nowUs + timeoutUs : 0;
    l.items.push(item);
    l.deadlines.push(deadline);
    if (deadline !== 0 && deadline < this.earliest) this.earliest = deadline;
    this.count++;
    return true;
  }

  /**
   * The first `max` requests in service order (level by level, each level's
   * on-time requests before its delayed ones). With one level and nothing
   * delayed this is the level's own array, not a copy: read it, do not keep it.
   */
  peek(max: number): readonly T[] {
    if (this.levels.length === 1 && this.levels[0]!.delayed.length === 0) return this.levels[0]!.items;
    const out: T[] = [];
    for (const l of this.levels) {
      for (const src of [l.items, l.delayed]) {
        for (let i = 0; i < src.length && out.length < max; i++) out.push(src[i]!);
      }
      if (out.length >= max) break;
    }
    return out;
  }

  /** Remove and return the first `n` requests in service order. */
  take(n: number): T[] {
    const out: T[] = [];
    for (const l of this.levels) {
      if (out.length >= n) break;
      const fromItems = Math.min(n - out.length, l.items.length);
      if (fromItems > 0) {
        for (const x of l.items.splice(0, fromItems)) out.push(x);
        l.deadlines.splice(0, fromItems);
      }
      const fromDelayed = Math.min(n - out.length, l.delayed.length);
      if (fromDelayed > 0) for (const x of l.delayed.splice(0, fromDelayed)) out.push(x);
    }
    this.count -= out.length;
    return out;
  }

  /**
   * Remove and return the first request `match` accepts (a cancelled one),
   * wherever it waits; undefined when none does. The earliest deadline may
   * stay stale-early (a wake-up that finds nothing to expire).
   */
  remove(match: (item: T) => boolean): T | undefined {
    for (const l of this.levels) {
      const i = l.items.findIndex(match);
      if (i >= 0) {
        const [item] = l.items.splice(i, 1);
        l.deadlines.splice(i, 1);
        this.count--;
        return item;
      }
      const j = l.delayed.findIndex(match);
      if (j >= 0) {
        const [item] = l.delayed.splice(j, 1);
        this.count--;
        return item;
      }
    }
    return undefined;
  }

  /** The earliest deadline still pending (µs), or Infinity. */
  nextDeadlineUs(): number {
    return this.earliest;
  }

  /**
   * Apply the timeout action to every request whose deadline is <= now:
   * REJECT removes it and hands it to `rejected`; DELAY moves it behind its
   * level's on-time requests (it never times out again).
   */
  expire(nowUs: number, rejected: (item: T) => void): void {
    if (nowUs < this.earliest) return;
    let earliest = Infinity;
    const out: T[] = [];
    for (const l of this.levels) {
      let keep = 0;
      for (let i = 0; i < l.items.length; i++) {
        const item = l.items[i]!;
        const d = l.deadlines[i]!;
        if (d !== 0 && d <= nowUs) {
          if (l.policy.timeoutAction === 'DELAY') l.delayed.push(item);
          else out.push(item);
          continue;
        }
        if (d !== 0 && d < earliest) earliest = d;
        l.items[keep] = item;
        l.deadlines[keep] = d;
        keep++;
      }
      l.items.length = keep;
      l.deadlines.length = keep;
    }
    this.earliest = earliest;
    this.count -= out.length;
    for (const item of out) rejected(item);
  }
}
