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
 * Every load, reload and unload of one model runs on its promise chain
 * (model-chains.ts). A cloud root is scanned as its local mirror,
 * which repository-roots.ts brings up to date before the scan.
 */
import type { RateLimiter } from '../scheduler/rate-limiter';
import type { ResponseCache } from '../scheduler/response-cache';
import path from 'node:path';
import { ServerError, toErrorInfo } from '../core/errors';
import { closestName } from '../core/spelling';
import type { ServerSnapshot } from '../request/server-snapshot';
import type { InstanceGroupContext } from '../instances/instance-group';
import type { Logger } from '../logging/logger';
import { removeOverrideDir, type LoadOutcome, type LoadOverride } from './load-request';
import { ModelChains } from './model-chains';
import { duplicateModelText, isPollError, loadFailedText, pollFailure } from './load-texts';
import { fingerprint } from './model-fingerprint';
import { pollPlan } from './poll-plan';
import type { VersionObserver } from '../metrics/version-observer';
import { prepareModel } from './model-loader';
import { ensembleDependencies } from './ensemble-services';
import { loadInDependencyOrder } from './load-order';
import type { Listings, RepositoryRoots } from './repository-roots';
import * as tallies from './version-tallies';
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
import { scanRepositories, scanVersions, type ModelLocation, type ScanResult } from './scan';

export type { IndexEntry, TableRow } from './model-record';

export class RepositoryManager {
  private readonly models = new Map<string, ModelRecord>();
  private readonly chains = new ModelChains();
  private readonly listeners: (() => void)[] = [];
  private duplicates = new Map<string, string[]>();
  private overrideCount = 0;
  private readonly builder: VersionBuilder;
  private readonly lifecycleHooks: LifecycleHooks;
  /** --model-load-thread-count / --model-load-retry-count: config completions and version builds share them. */
  private readonly slots: LoadSlots;

  constructor(
    private readonly roots: RepositoryRoots,
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
    const scan = scanRepositories(this.roots.localPaths);
    for (const [name, repos] of scan.duplicates) {
      if (!this.duplicates.has(name)) {
        this.log.error(
          duplicateModelText(
            name,
            repos.map((r) => this.roots.displayName(r)),
          ),
        );
      }
    }
    this.duplicates = scan.duplicates;
    return scan;
  }

  /** Load every model of every repository, in parallel (modes none and poll, `--load-model=*`). */
  async loadAll(): Promise<void> {
    const scan = this.scan();
    for (const why of scan.skipped) this.log.verbose(1, why);
    // A model that fails is recorded (state and reason); the others load on. Ensembles after the models they use.
    // A model whose environment is being built does not hold the start up: it
    // shows as LOADING ('building environment') and loads on while the server serves.
    const load = (loc: ModelLocation): Promise<void> =>
      new Promise((resolve) => {
        this.chains
          .run(loc.name, () => this.apply(loc, {}, resolve))
          .then(
            () => resolve(),
            () => resolve(),
          );
      });
    await loadInDependencyOrder(scan.models, this.loader.modelConfigName, load);
  }

  /** The folders the scan reads, in --model-repository order (a cloud root's mirror in its place). */
  localPaths(): readonly string[] {
    return this.roots.localPaths;
  }

  /** Explicit mode's index: the cloud roots' model names are listed again first (a root that cannot be is logged, not thrown). */
  async refreshNames(): Promise<void> {
    await this.roots.refreshNames();
  }

  /**
   * Load (or reload) one model by name; resolves with the version errors,
   * throws Triton's poll failure when the folder cannot be found or read.
   * A no-op when nothing changed and every version is READY.
   */
  load(
    name: string,
    override: LoadOverride = {},
    loading: ReadonlySet<string> = new Set(),
    listings: Listings = this.roots.newListings(),
  ): Promise<LoadOutcome> {
    return this.chains.run(name, async () => {
      if (!override.dir) await this.fetch(name, listings);
      const scan = this.scan();
      let location = scan.models.get(name);
      if (!location && !scan.duplicates.has(name)) {
        const meant = closestName(name, scan.models.keys());
        this.log.error(`failed to poll model '${name}': model not found in any model repository.${meant === undefined ? '' : ` Did you mean '${meant}'?`}`);
      }
      if (override.dir) location = { name, repository: path.dirname(override.dir), dir: override.dir };
      if (!location) throw pollFailure(name);
      await this.loadDependencies(location, loading, listings);
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
    return pollFailure(name, reason);
  }

  /**
   * Unload every version of a model. Resolves once the versions are
   * UNLOADING (Triton answers then; none admits a request from then on);
   * draining continues on the model's chain. `release`: once drained, the
   * model's files fetched from a cloud root leave the cache (explicit
   * unload; at shutdown they stay for the next start).
   */
  unload(name: string, release = false): Promise<void> {
    return new Promise((initiated, reject) => {
      this.chains
        .run(name, async () => {
          const record = this.models.get(name);
          if (!record) {
            if (release) this.roots.release(name);
            return initiated();
          }
          record.wanted = false;
          record.applied = undefined;
          const drains = [...record.versions.values()].map((v) => v.retire());
          initiated();
          await Promise.all(drains);
          this.dropOverrideDir(record);
          if (release && !record.wanted) this.roots.release(name);
        })
        .catch(reject);
    });
  }

  /** What `unload_dependents` takes along with `name` (dependents.ts). */
  dependentsOf(name: string): string[] {
    return unloadDependents(this.models, name);
  }

  /** Stop admitting, drain in-flight requests, release instances; every model (shutdown). */
  async unloadAll(): Promise<void> {
    await Promise.all([...this.models.keys()].map((name) => this.unload(name)));
    await this.chains.idle();
  }

  /**
   * One poll: load added models, reload changed ones, unload removed ones.
   * `settled(dir)` says whether a folder has been quiet long enough to read.
   * Cloud roots are mirrored again first (only changed objects are
   * fetched); a model fetched only in part waits for a later poll, and the
   * models of a root that cannot be read (cloud or local) keep serving.
   */
  async poll(settled: (dir: string) => boolean): Promise<void> {
    const refresh = await this.roots.refresh();
    const scan = this.scan();
    this.roots.noteLocal(scan.unreadable);
    const plan = pollPlan(scan, this.models, (dir) => settled(dir) && !refresh.incomplete.has(dir), refresh.unreadable);
    const work: Promise<unknown>[] = [];
    for (const loc of plan.apply) work.push(this.chains.run(loc.name, () => this.apply(loc)).catch(() => undefined)); // logged by apply
    for (const record of plan.remove) {
      this.log.info(`model '${record.name}' was removed from the model repository, unloading it`);
      work.push(
        this.unload(record.name).then(() =>
          this.chains.run(record.name, async () => {
            if (!record.wanted) this.models.delete(record.name);
            this.changed();
          }),
        ),
      );
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
    return tallies.inflightCount(this.models);
  }

  /** Versions with requests in flight, and how many each (Triton's shutdown lines). */
  inflightVersions(): { model: string; version: number; count: number }[] {
    return tallies.inflightVersions(this.models);
  }

  /** Every version's serving instances, by model then version (the console's instance health). */
  instanceHealth(): { model: string; version: number; instances: InstanceHealth[] }[] {
    return tallies.instanceHealth(this.models);
  }

  /** Each version's readiness, instances and restarts, for /metrics. */
  versionStates(): tallies.VersionState[] {
    return tallies.versionStates(this.models);
  }

  /** Versions with a loaded build (serving or draining): Triton's "live models" at shutdown. */
  liveCount(): number {
    return tallies.liveCount(this.models);
  }

  /** Forced end (the stop's deadline): every loaded instance is killed now, without finalizing. */
  killAll(): Promise<void> {
    return tallies.killAll(this.models);
  }

  /** After the last unload: the cloud roots' clients close (their caches stay for the next start). */
  close(): void {
    this.roots.close();
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

  /** An explicit load reads the model's objects from the cloud roots first; a failure is Triton's poll failure, with why. */
  private async fetch(name: string, listings: Listings): Promise<void> {
    try {
      await this.roots.fetchModel(name, listings);
    } catch (err) {
      const reason = toErrorInfo(err).message;
      this.log.error(`failed to poll model '${name}': ${reason}`);
      throw pollFailure(name, reason);
    }
  }

  /** Load or reload `location` (on the model's chain). */
  private async apply(location: ModelLocation, override: LoadOverride = {}, onSlowStep?: () => void): Promise<LoadOutcome> {
    const name = location.name;
    const log = this.log.child({ model: name });
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
    record.configuring = true;
    this.changed();
    try {
      const preparing = record;
      prepared = await prepareModel(
        location,
        this.loader,
        override.config,
        {
          warn: (w) => log.warn(w),
          detail: (d) => log.verbose(1, d),
          info: (t) => log.info(t),
          stage: (reason) => {
            preparing.preparing = reason;
            this.changed();
            if (reason !== undefined) onSlowStep?.();
          },
        },
        this.slots,
      );
    } catch (err) {
      record.preparing = undefined;
      record.configuring = false;
      return this.prepareFailed(record, print, reasonOf(err), err);
    }
    record.configuring = false;
    record.applied = print;
    if (prepared.versions.length === 0) {
      const reason = prepared.noVersionReason ?? `at least one version must be available under the version policy of model '${name}'`;
      record.noVersionReason = reason;
      if (!views.hasServing(record)) record.prepared = prepared;
      log.error(loadFailedText(name, reason));
      this.changed();
      return { errors: [reason] };
    }
    record.noVersionReason = undefined;
    if (!views.hasServing(record)) record.prepared = prepared;
    const results = await Promise.all(prepared.versions.map((v) => this.loadOneVersion(record!, prepared, v, changed)));
    if (results.some((r) => r === 'loaded')) {
      record.prepared = prepared;
      record.loads = (record.loads ?? 0) + 1;
    }
    const errors = results.filter((r): r is { error: string } => typeof r === 'object').map((r) => r.error);
    // Retire what the version policy no longer wants, once a wanted version serves.
    if (prepared.versions.some((v) => record!.versions.get(v)?.readiness.state === 'READY')) {
      const retired = [...record.versions.values()].filter((v) => !prepared.versions.includes(v.version));
      await Promise.all(retired.map((v) => v.retire()));
    }
    if (prevOverrideDir && prevOverrideDir !== override.dir) removeOverrideDir(prevOverrideDir);
    log.info(errors.length === 0 ? `successfully loaded '${name}'` : `failed to load '${name}'`);
    this.changed();
    return { errors };
  }

  /** The config could not be read or completed. */
  private prepareFailed(record: ModelRecord, print: string, reason: string, err: unknown): LoadOutcome {
    record.applied = print; // don't retry the same broken files every poll
    this.log.child({ model: record.name }).error(loadFailedText(record.name, reason));
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
  private async loadDependencies(location: ModelLocation, loading: ReadonlySet<string>, listings: Listings): Promise<void> {
    const chain = new Set([...loading, location.name]);
    const missing = ensembleDependencies(location, this.loader.modelConfigName).filter((d) => {
      const r = this.models.get(d);
      return !chain.has(d) && !(r && r.wanted && views.hasServing(r));
    });
    await Promise.all(missing.map((d) => this.load(d, {}, chain, listings).catch(() => undefined))); // their failure shows in the ensemble's reason
  }

  private dropOverrideDir(record: ModelRecord): void {
    if (record.overrideDir) removeOverrideDir(record.overrideDir);
    record.overrideDir = undefined;
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }
}
