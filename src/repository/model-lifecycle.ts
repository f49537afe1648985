/**
 * The lifecycle of one model version (Triton core's model_lifecycle.cc, per
 * version): its readiness, moved only by core/model-state.ts's transition();
 * the instances and scheduler it serves with; how it loads, reloads beside
 * itself (swap), retires and drains; and its admission gate, the check that
 * counts for every request routed to it (version-resolution.ts).
 *
 *   UNAVAILABLE → LOADING → READY | UNAVAILABLE (build failed, with the reason)
 *   READY → (reload: a fresh build takes new requests at once, the old drains)
 *   READY → UNLOADING → UNAVAILABLE 'unloaded'
 *
 * A READY version may still be unable to serve for a while: an instance
 * reports it (ModelInstance.unready: a dead stub being restarted, a model.py
 * is_ready() that said no). That is the version's `unready`, Triton's
 * instance readiness: the model's ready probe and strict server readiness
 * say not ready (snapshot views), the state stays READY, requests are still
 * admitted (they wait for the restart), and it is logged once each way.
 *
 * A version admits requests only while READY. Draining is the scheduler's
 * stop(): it resolves when the in-flight count reaches zero, so a version
 * retires as soon as its last admitted request is answered, with no timer.
 * What to load and when is the repository manager's decision
 * (repository-manager.ts); how a version is built is version-builder.ts's.
 */
import { CODE_WORDS, toErrorInfo } from '../core/errors';
import { transition } from '../core/model-state';
import type { ModelState, Readiness } from '../core/model-state';
import type { InferRequest, Respond } from '../core/request';
import type { Logger } from '../logging/logger';
import { notReady } from '../request/model-lookup';
import type { LoadedVersion } from './model-loader';
import { loadFailedText } from './load-texts';

/** What a version tells the rest of the server. */
export interface LifecycleHooks {
  /** Readiness or the serving build changed (snapshots, BLS lookups). */
  changed(): void;
  /** The version retired: its telemetry ends. */
  gone(model: string, version: number): void;
  log: Logger;
}

/** One instance of the serving build, as the console shows it. */
export interface InstanceHealth {
  name: string;
  /** Why it cannot serve now (ModelInstance.unready); absent while it can. */
  unready?: string;
  /** Deaths that began a restart (ModelInstance.restarts). */
  restarts: number;
}

/** Builds the instances and scheduler of this version (version-builder.ts). */
export type BuildVersion = () => Promise<LoadedVersion>;

/** A load or reload: done, or the error text the load API words after `load failed for model '<m>': `. */
export type LoadResult = 'loaded' | { error: string };

export class VersionLifecycle {
  private current: Readiness = { state: 'UNAVAILABLE', reason: '' };
  /** Set while READY and while UNLOADING (draining); undefined otherwise. */
  private serving: LoadedVersion | undefined;
  /** Old builds of a reload that are still draining. */
  private readonly retiring = new Set<LoadedVersion>();
  /** Why the last reload of this READY version (or of its config) failed; the serving build stays. */
  note: string | undefined;
  /** The last `unready` logged, so each change is logged once. */
  private unreadyLogged: string | undefined;

  /** hooks.log bound to the model (its lines are the console's model log too). */
  private readonly log: Logger;

  constructor(
    readonly model: string,
    readonly version: number,
    private readonly hooks: LifecycleHooks,
  ) {
    this.log = hooks.log.child({ model });
  }

  get readiness(): Readiness {
    return this.current;
  }

  get state(): ModelState {
    return this.current.state;
  }

  /** While READY: why an instance of the serving build cannot serve now (the first one's reason); undefined when all can. */
  get unready(): string | undefined {
    if (this.current.state !== 'READY' || this.serving === undefined) return undefined;
    for (const i of this.serving.instances) {
      const why = i.unready;
      if (why !== undefined) return why;
    }
    return undefined;
  }

  /** The serving build's instances (none unless READY or draining; an ensemble has none). */
  instanceHealth(): InstanceHealth[] {
    return (this.serving?.instances ?? []).map((i) => {
      const h: InstanceHealth = { name: i.name, restarts: i.restarts ?? 0 };
      if (i.unready !== undefined) h.unready = i.unready;
      return h;
    });
  }

  /** UNAVAILABLE → LOADING → READY, or back to UNAVAILABLE with the build's reason. */
  async load(build: BuildVersion): Promise<LoadResult> {
    this.move('LOADING', '');
    this.note = undefined;
    this.unreadyLogged = undefined;
    this.log.info(`loading: ${this.model}:${this.version}`);
    this.hooks.changed();
    try {
      const loaded = await build();
      this.serving = loaded;
      this.watchInstances(loaded);
      this.move('READY', '');
      loaded.scheduler.serve?.(true);
      this.unreadyChanged();
      this.hooks.changed();
      return 'loaded';
    } catch (err) {
      const reason = reasonOf(err);
      this.move('UNAVAILABLE', reason);
      this.log.error(loadFailedText(this.model, reason, this.version));
      this.hooks.changed();
      return { error: `version ${this.version} is at UNAVAILABLE state: ${reason};` };
    }
  }

  /**
   * A READY version built again beside itself: the fresh build takes every
   * request from the moment it is ready, the old one drains what it admitted
   * and then releases its instances. A failed build leaves the old one
   * serving, with the reason as the version's note. A version that is not
   * READY has nothing to swap: it loads (an illegal move fails as transition() says).
   */
  async reload(build: BuildVersion): Promise<LoadResult> {
    if (this.current.state !== 'READY' || this.serving === undefined) return this.load(build);
    let fresh: LoadedVersion;
    try {
      fresh = await build();
    } catch (err) {
      this.note = reasonOf(err);
      this.log.error(loadFailedText(this.model, this.note, this.version));
      return { error: `version ${this.version} is at UNAVAILABLE state: ${this.note};` };
    }
    const old = this.serving;
    old.scheduler.serve?.(false);
    this.serving = fresh;
    fresh.scheduler.serve?.(true);
    this.watchInstances(fresh);
    this.note = undefined;
    this.unreadyChanged();
    this.hooks.changed();
    this.retiring.add(old);
    await drain(old);
    this.retiring.delete(old);
    return 'loaded';
  }

  /** A version never built because its model's config could not be read: LOADING → UNAVAILABLE with the reason. */
  failed(reason: string): void {
    this.move('LOADING', '');
    this.move('UNAVAILABLE', reason);
  }

  /**
   * READY → UNLOADING at once (so an unload can be answered, and no request
   * is admitted from here on) → drain: the in-flight count reaches zero →
   * instances released → UNAVAILABLE 'unloaded'. A no-op unless READY.
   */
  async retire(): Promise<void> {
    const loaded = this.serving;
    if (this.current.state !== 'READY' || loaded === undefined) return;
    this.move('UNLOADING', '');
    loaded.scheduler.serve?.(false);
    this.note = undefined;
    this.hooks.changed();
    await drain(loaded);
    this.serving = undefined;
    this.hooks.gone(this.model, this.version);
    this.move('UNAVAILABLE', 'unloaded');
    this.log.info(`successfully unloaded '${this.model}' version ${this.version}`);
    this.hooks.changed();
  }

  /**
   * The admission gate: a READY version's scheduler takes the request; in any
   * other state the request is answered (once) with Triton's not-ready error.
   */
  admit(request: InferRequest, respond: Respond): void {
    if (this.current.state === 'READY' && this.serving !== undefined) {
      this.serving.scheduler.enqueue(request, respond);
      return;
    }
    respond({ outputs: [], error: toErrorInfo(notReady(this.model, this.version)), final: true });
  }

  /**
   * A request this gate admitted was cancelled: the build that took it, the
   * serving one or one still draining after a reload or unload, takes it
   * out of its queue or tells its instance (Scheduler.cancel).
   */
  cancel(request: InferRequest): void {
    this.serving?.scheduler.cancel(request);
    for (const old of this.retiring) old.scheduler.cancel(request);
  }

  /** Requests admitted and not yet finally answered, draining builds included. */
  inflightCount(): number {
    let n = this.serving?.scheduler.inflightCount() ?? 0;
    for (const old of this.retiring) n += old.scheduler.inflightCount();
    return n;
  }

  /** A change of an instance's readiness is the version's while that build serves. */
  private watchInstances(loaded: LoadedVersion): void {
    for (const i of loaded.instances) {
      i.onUnreadyChange?.(() => {
        if (this.serving !== loaded || this.current.state !== 'READY') return;
        this.unreadyChanged();
        this.hooks.changed();
      });
    }
  }

  /** Log the version's readiness when it changed (Triton's text for a version that is not ready). */
  private unreadyChanged(): void {
    const now = this.unready;
    if (now === this.unreadyLogged) return;
    const was = this.unreadyLogged;
    this.unreadyLogged = now;
    if (now !== undefined) this.log.error(`Model '${this.model}' version ${this.version} is not ready: ${now}`);
    else if (was !== undefined) this.log.info(`model '${this.model}' version ${this.version} is ready again`);
  }

  /** Loaded builds (serving and draining): a live model in the stop's log lines. */
  get live(): boolean {
    return this.serving !== undefined || this.retiring.size > 0;
  }

  /** Forced end (server-stop.ts, at its deadline): every instance of every build is killed, without finalizing. */
  async kill(): Promise<void> {
    const builds = [...this.retiring, ...(this.serving === undefined ? [] : [this.serving])];
    await Promise.all(builds.flatMap((b) => b.instances.map((i) => i.kill())));
  }

  private move(to: ModelState, reason: string): void {
    this.current = transition(this.current, to, reason, `'${this.model}' version ${this.version}`);
  }
}

/** Stop admitting, wait until the in-flight count is zero (scheduler.stop()), then release the instances. */
async function drain(loaded: LoadedVersion): Promise<void> {
  await loaded.scheduler.stop();
  await Promise.all(loaded.instances.map((i) => i.stop()));
}

/** `<Code words>: <message>`, the reason text Triton shows in the table and index. */
export function reasonOf(err: unknown): string {
  const info = toErrorInfo(err);
  return `${CODE_WORDS[info.code]}: ${info.message}`;
}
