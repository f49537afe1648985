/**
 * The model repository manager (Triton's model_repository_manager): which
 * models exist (scan), what to load, reload or unload and when (poll,
 * explicit requests, control-mode.ts at startup), in which order (an
 * ensemble after the models it uses), with which overrides, and the views
 * over the registry (index, table, snapshot). Each version's load, swap,
 * drain and retire, and its admission gate, are its lifecycle's
 * (model-lifecycle.ts); where a request enters a version is
 * version-resolution.ts; how a version is built is version-builder.ts.
 *
 * Every load, reload and unload of one model runs on that model's promise
 * chain, so concurrent requests for one model are serialized.
 */
import type { RateLimiter } from '../scheduler/rate-limiter';
import type { ResponseCache } from '../scheduler/response-cache';
import path from 'node:path';
import { ServerError, toErrorInfo } from '../core/errors';
import { closestName } from '../core/spelling';
import type { ServerSnapshot } from '../request/server-snapshot';
import type { InstanceGroupContext } from '../instances/instance-group';
import type { Logger } from '../logging/logger';
import type { ModelConfig } from '../core/model-config';
import { removeOverrideDir } from './load-request';
import { duplicateModelText, loadFailedText } from './load-texts';
import { fingerprint } from './model-fingerprint';
import type { VersionObserver } from '../metrics/version-observer';
import { prepareModel } from './model-loader';
import { ensembleDependencies } from './ensemble-services';
import { unloadDependents } from './dependents';
import type { InferRequest, Respond } from '../core/request';
import type { LoaderOptions, PreparedModel } from './model-loader';
import { VersionLifecycle, reasonOf } from './model-lifecycle';
import type { BuildVersion, InstanceHealth, LifecycleHooks, LoadResult } from './model-lifecycle';
import * as views from './model-record';
import type { IndexEntry, ModelRecord, TableRow } from './model-record';
import { VersionBuilder } from './version-builder';
import { LoadSlots } from './load-slots';
import { cancelRequest, routeRequest } from './version-resolution';
import { scanRepositories, scanVersions } from './scan';
import type { ModelLocation, ScanResult } from './scan';

export type { IndexEntry, TableRow } from './model-record';

/** What a load asked for beyond the repository's own files. */
export interface LoadOverride {
  config?: ModelConfig;
  /** A temporary model folder holding `file:` overrides (load-request.ts). */
  dir?: string;
}

/** Errors of one load, each as Triton words it after `load failed for model '<m>': `. */
export interface LoadOutcome {
  errors: string[];
}

export class RepositoryManager {
  private readonly models = new Map<string, ModelRecord>();
  private readonly chains = new Map<string, Promise<void>>();
  private readonly listeners: (() => void)[] = [];
  private duplicates = new Map<string, string[]>();
  private overrideCount = 0;
  private readonly builder: VersionBuilder;
  private readonly lifecycleHooks: LifecycleHooks;
  /** --model-load-thread-count / --model-load-retry-count: config completions and version builds share them. */
  private readonly slots: LoadSlots;

  constructor(
    private readonly repositories: readonly string[],
    private readonly loader: LoaderOptions,
    instanceCtx: Omit<InstanceGroupContext, 'backendConfig'>,
    private readonly log: Logger,
  ) {
    this.slots = new LoadSlots(loader.loadThreads ?? 4, loader.loadRetries ?? 0);
    this.builder = new VersionBuilder(this.models, instanceCtx, log, (request, respond) => this.route(request, respond), reasonOf, this.slots);
    this.lifecycleHooks = { changed: () => this.changed(), gone: (model, version) => this.builder.gone(model, version), log };
  }

  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Models with `response_cache { enable: true }` use this cache from now on. */
  setResponseCache(cache: ResponseCache | undefined): void {
    this.builder.responseCache = cache;
  }

  /** Instances of every version loaded from now on take their rate_limiter resources from this. */
  setRateLimiter(limiter: RateLimiter | undefined): void {
    this.builder.rateLimiter = limiter;
  }

  /** Telemetry (statistics, metrics, tracing) of every version loaded from now on. */
  setVersionObserver(observer: VersionObserver): void {
    this.builder.observer = observer;
  }

  /** The route requests made inside the server (ensemble steps) take: the frontends' own. */
  setRoute(route: (request: InferRequest, respond: Respond) => void): void {
    this.builder.route = route;
  }

  /** Scan every repository; logs a duplicate name once when it appears. */
  scan(): ScanResult {
    const scan = scanRepositories(this.repositories);
    for (const [name, repos] of scan.duplicates) {
      if (!this.duplicates.has(name)) {
        this.log.error(duplicateModelText(name, repos));
      }
    }
    this.duplicates = scan.duplicates;
    return scan;
  }

  /** Load every model of every repository, in parallel (modes none and poll, `--load-model=*`). */
  async loadAll(): Promise<void> {
    const scan = this.scan();
    for (const why of scan.skipped) this.log.verbose(1, why);
    // A model that fails is recorded (state and reason); the others load on.
    const load = (loc: ModelLocation): Promise<void> => this.apply(loc).then(() => undefined, () => undefined);
    // Ensembles load after the models they use (a cycle is not waited on; its ensembles fail their checks).
    const started = new Map<string, Promise<void>>();
    const visiting = new Set<string>();
    const start = (loc: ModelLocation): Promise<void> => {
      const known = started.get(loc.name);
      if (known !== undefined) return known;
      if (visiting.has(loc.name)) return Promise.resolve();
      visiting.add(loc.name);
      const deps = ensembleDependencies(loc, this.loader.modelConfigName).flatMap((d) => {
        const dl = scan.models.get(d);
        return dl === undefined ? [] : [start(dl)];
      });
      visiting.delete(loc.name);
      const p = deps.length === 0 ? this.serial(loc.name, () => load(loc)) : Promise.all(deps).then(() => this.serial(loc.name, () => load(loc)));
      started.set(loc.name, p);
      return p;
    };
    await Promise.all([...scan.models.values()].map(start));
  }

  /**
   * Load (or reload) one model by name; resolves with the version errors,
   * throws Triton's poll failure when the folder cannot be found or read.
   * A no-op when nothing changed and every version is READY.
   */
  load(name: string, override: LoadOverride = {}, loading: ReadonlySet<string> = new Set()): Promise<LoadOutcome> {
    return this.serial(name, async () => {
      const scan = this.scan();
      let location = scan.models.get(name);
      if (!location && !scan.duplicates.has(name)) {
        const meant = closestName(name, scan.models.keys());
        this.log.error(`failed to poll model '${name}': model not found in any model repository.${meant === undefined ? '' : ` Did you mean '${meant}'?`}`);
      }
      if (override.dir) location = { name, repository: path.dirname(override.dir), dir: override.dir };
      if (!location) throw pollFailure(name);
      await this.loadDependencies(location, loading);
      return this.apply(location, override);
    });
  }

  /**
   * A load whose model could not be polled for `reason` (an invalid config
   * override): logged as Triton logs it, answered with Triton's load
   * failure followed by the reason.
   */
  pollFailed(name: string, reason: string): ServerError {
    this.log.error(`Poll failed for model directory '${name}': ${reason}`);
    const e = pollFailure(name);
    return new ServerError(e.code, `${e.message}: ${reason}`);
  }

  /**
   * Unload every version of a model. Resolves once the versions are
   * UNLOADING (Triton answers then; none admits a request from then on);
   * draining continues on the model's chain.
   */
  unload(name: string): Promise<void> {
    return new Promise((initiated, reject) => {
      this.serial(name, async () => {
        const record = this.models.get(name);
        if (!record) return initiated();
        record.wanted = false;
        record.applied = undefined;
        const drains = [...record.versions.values()].map((v) => v.retire());
        initiated();
        await Promise.all(drains);
        this.dropOverrideDir(record);
      }).catch(reject);
    });
  }

  /** What `unload_dependents` takes along with `name` (dependents.ts). */
  dependentsOf(name: string): string[] {
    return unloadDependents(this.models, name);
  }

  /** Stop admitting, drain in-flight requests, release instances; every model (shutdown). */
  async unloadAll(): Promise<void> {
    await Promise.all([...this.models.keys()].map((name) => this.unload(name)));
    await Promise.all([...this.chains.values()]);
  }

  /**
   * One poll: load added models, reload changed ones, unload removed ones.
   * `settled(dir)` says whether a folder has been quiet long enough to read.
   */
  async poll(settled: (dir: string) => boolean): Promise<void> {
    const scan = this.scan();
    const work: Promise<unknown>[] = [];
    for (const loc of scan.models.values()) {
      const record = this.models.get(loc.name);
      if (record && record.wanted && record.location.dir === loc.dir && record.applied === fingerprint(loc.dir)) continue;
      if (!settled(loc.dir)) continue;
      work.push(this.serial(loc.name, () => this.apply(loc)).catch(() => undefined)); // logged by apply
    }
    for (const record of this.models.values()) {
      if (scan.models.has(record.name) || scan.duplicates.has(record.name) || !record.wanted) continue;
      this.log.info(`model '${record.name}' was removed from the model repository, unloading it`);
      work.push(this.unload(record.name).then(() => this.serial(record.name, async () => {
        if (!record.wanted) this.models.delete(record.name);
        this.changed();
      })));
    }
    await Promise.all(work);
  }

  /**
   * Where every inference request enters (frontends, BLS, ensemble steps):
   * its version is chosen now, against the live versions, and that
   * version's gate admits or refuses it (version-resolution.ts).
   */
  route(request: InferRequest, respond: Respond): void {
    routeRequest(this.models, request, respond);
  }

  /** A request `route` took was cancelled (its client went away, or its caller cancelled it). */
  cancel(request: InferRequest): void {
    cancelRequest(this.models, request);
  }

  index(readyOnly: boolean): IndexEntry[] {
    const scan = this.scan();
    return views.indexEntries(this.models, scan.models.keys(), scan.duplicates.keys(), readyOnly);
  }

  allReady(): boolean {
    return views.allReady(this.models);
  }

  inflightCount(): number {
    let n = 0;
    for (const m of this.models.values()) for (const v of m.versions.values()) n += v.inflightCount();
    return n;
  }

  /** Versions with requests in flight, and how many each (Triton's shutdown lines). */
  inflightVersions(): { model: string; version: number; count: number }[] {
    const out: { model: string; version: number; count: number }[] = [];
    for (const m of this.models.values()) {
      for (const v of m.versions.values()) {
        const count = v.inflightCount();
        if (count > 0) out.push({ model: m.name, version: v.version, count });
      }
    }
    return out;
  }

  /** Every version's serving instances, by model then version (the console's instance health). */
  instanceHealth(): { model: string; version: number; instances: InstanceHealth[] }[] {
    const out: { model: string; version: number; instances: InstanceHealth[] }[] = [];
    for (const name of [...this.models.keys()].sort()) {
      const m = this.models.get(name)!;
      for (const v of [...m.versions.values()].sort((a, b) => a.version - b.version)) {
        out.push({ model: name, version: v.version, instances: v.instanceHealth() });
      }
    }
    return out;
  }

  /** Versions with a loaded build (serving or draining): Triton's "live models" at shutdown. */
  liveCount(): number {
    let n = 0;
    for (const m of this.models.values()) for (const v of m.versions.values()) if (v.live) n++;
    return n;
  }

  /** Forced end (the stop's deadline): every loaded instance is killed now, without finalizing. */
  async killAll(): Promise<void> {
    const kills: Promise<void>[] = [];
    for (const m of this.models.values()) for (const v of m.versions.values()) kills.push(v.kill());
    await Promise.all(kills);
  }

  /** Model table rows; duplicate names are rows too unless the mode loads by name (explicit). */
  tableRows(withDuplicates = true): TableRow[] {
    return views.tableRows(this.models, withDuplicates ? this.duplicates.keys() : []);
  }

  /** Models that failed to load (and duplicate names), sorted. */
  failedModels(): string[] {
    return [...new Set([...views.failedModels(this.models), ...this.duplicates.keys()])].sort();
  }

  snapshotModels(): ServerSnapshot['models'] {
    return views.snapshotModels(this.models);
  }

  /** Run `fn` after every earlier operation on the same model. */
  private serial<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.chains.get(name) ?? Promise.resolve()).then(fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.chains.set(name, tail);
    void tail.then(() => {
      if (this.chains.get(name) === tail) this.chains.delete(name);
    });
    return run;
  }

  /** Load or reload `location` (on the model's chain). */
  private async apply(location: ModelLocation, override: LoadOverride = {}): Promise<LoadOutcome> {
    const name = location.name;
    let record = this.models.get(name);
    if (!record) {
      record = { name, location, versions: new Map(), wanted: true };
      this.models.set(name, record);
    }
    const wasUnwanted = !record.wanted;
    record.wanted = true;
    const prevOverrideDir = record.overrideDir;
    const print = override.config || override.dir ? `override ${++this.overrideCount}` : fingerprint(location.dir);
    const changed = record.applied !== print || wasUnwanted;
    record.location = location;
    record.overrideDir = override.dir;

    let prepared: PreparedModel;
    try {
      prepared = await prepareModel(location, this.loader, override.config, {
        warn: (w) => this.log.warn(w),
        detail: (d) => this.log.verbose(1, d),
      }, this.slots);
    } catch (err) {
      return this.prepareFailed(record, print, reasonOf(err), err);
    }
    record.applied = print;
    if (prepared.versions.length === 0) {
      const reason = prepared.noVersionReason ?? `at least one version must be available under the version policy of model '${name}'`;
      record.noVersionReason = reason;
      if (!views.hasServing(record)) record.prepared = prepared;
      this.log.error(loadFailedText(name, reason));
      this.changed();
      return { errors: [reason] };
    }
    record.noVersionReason = undefined;
    if (!views.hasServing(record)) record.prepared = prepared;
    const results = await Promise.all(prepared.versions.map((v) => this.loadOneVersion(record!, prepared, v, changed)));
    if (results.some((r) => r === 'loaded')) record.prepared = prepared;
    const errors = results.filter((r): r is { error: string } => typeof r === 'object').map((r) => r.error);
    // Retire what the version policy no longer wants, once a wanted version serves.
    if (prepared.versions.some((v) => record!.versions.get(v)?.readiness.state === 'READY')) {
      const retired = [...record.versions.values()].filter((v) => !prepared.versions.includes(v.version));
      await Promise.all(retired.map((v) => v.retire()));
    }
    if (prevOverrideDir && prevOverrideDir !== override.dir) removeOverrideDir(prevOverrideDir);
    this.log.info(errors.length === 0 ? `successfully loaded '${name}'` : `failed to load '${name}'`);
    this.changed();
    return { errors };
  }

  /** The config could not be read or completed. */
  private prepareFailed(record: ModelRecord, print: string, reason: string, err: unknown): LoadOutcome {
    record.applied = print; // don't retry the same broken files every poll
    this.log.error(loadFailedText(record.name, reason));
    if (views.hasServing(record)) {
      // The last good load keeps serving; the index shows why the new one failed.
      for (const v of record.versions.values()) if (v.readiness.state === 'READY') v.note = reason;
    } else {
      // Every version the default policy would load is UNAVAILABLE with that reason.
      const versions = scanVersions(record.location.dir).versions.slice(-1);
      if (versions.length === 0) record.noVersionReason = reason;
      for (const version of versions) this.versionOf(record, version).failed(reason);
    }
    this.changed();
    if (isPollError(err)) throw pollFailure(record.name);
    return { errors: [...record.versions.keys()].sort((a, b) => a - b).map((v) => `version ${v} is at UNAVAILABLE state: ${reason};`) };
  }

  /** 'kept' (unchanged and READY), or how loading (a READY one: reloading beside itself) went. */
  private async loadOneVersion(record: ModelRecord, prepared: PreparedModel, version: number, changed: boolean): Promise<'kept' | LoadResult> {
    const v = this.versionOf(record, version);
    const build: BuildVersion = () => this.builder.build(prepared, record.location, version);
    if (v.state === 'READY' && !changed) return 'kept';
    return v.state === 'READY' ? v.reload(build) : v.load(build);
  }

  /** The lifecycle of a version, made (UNAVAILABLE) the first time the version is named. */
  private versionOf(record: ModelRecord, version: number): VersionLifecycle {
    let v = record.versions.get(version);
    if (v === undefined) {
      v = new VersionLifecycle(record.name, version, this.lifecycleHooks);
      record.versions.set(version, v);
    }
    return v;
  }

  /** An ensemble's composing models that are not serving yet load first (explicit mode loads them along). */
  private async loadDependencies(location: ModelLocation, loading: ReadonlySet<string>): Promise<void> {
    const chain = new Set([...loading, location.name]);
    const missing = ensembleDependencies(location, this.loader.modelConfigName).filter((d) => {
      const r = this.models.get(d);
      return !chain.has(d) && !(r && r.wanted && views.hasServing(r));
    });
    await Promise.all(missing.map((d) => this.load(d, {}, chain).catch(() => undefined))); // their failure shows in the ensemble's reason
  }

  private dropOverrideDir(record: ModelRecord): void {
    if (record.overrideDir) removeOverrideDir(record.overrideDir);
    record.overrideDir = undefined;
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }
}

function pollFailure(name: string): ServerError {
  return new ServerError('INTERNAL', `failed to load '${name}', failed to poll from model repository`);
}

/** Errors Triton meets while polling the folder (config unreadable), not while loading a version. */
function isPollError(err: unknown): boolean {
  const m = toErrorInfo(err).message;
  return m.startsWith('failed to read text proto') || m.startsWith('unexpected directory name');
}
