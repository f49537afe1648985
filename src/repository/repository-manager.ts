/**
 * The model registry and its lifecycle: which models exist, the state and
 * reason of each version, and the scheduler of every READY version. Control
 * mode `none` (load everything at start) lives here; explicit and poll modes
 * extend it (issue: model management).
 */
import { CODE_WORDS, ServerError, toErrorInfo } from '../errors';
import type { ModelView, ServerSnapshot } from '../frontend/server-snapshot';
import type { InstanceGroupContext } from '../instances/instance-group';
import type { Scheduler } from '../scheduler/scheduler';
import type { Logger } from '../logging/logger';
import { loadVersion, prepareModel } from './model-loader';
import type { LoadedVersion, LoaderOptions, PreparedModel } from './model-loader';
import { transition } from './model-state';
import type { Readiness } from './model-state';
import { scanRepositories, scanVersions } from './scan';
import type { ModelLocation } from './scan';

interface VersionRecord {
  version: number;
  readiness: Readiness;
  loaded?: LoadedVersion;
}

interface ModelRecord {
  name: string;
  location: ModelLocation;
  prepared?: PreparedModel;
  versions: Map<number, VersionRecord>;
  /** Why the model has no version to load (shown as version '-' in the table). */
  noVersionReason?: string;
}

export interface TableRow {
  model: string;
  version: string;
  status: string;
}

export class RepositoryManager {
  private readonly models = new Map<string, ModelRecord>();
  private readonly listeners: (() => void)[] = [];

  constructor(
    private readonly repositories: readonly string[],
    private readonly loader: LoaderOptions,
    private readonly instanceCtx: Omit<InstanceGroupContext, 'backendConfig'>,
    private readonly log: Logger,
  ) {}

  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Mode none: every model of every repository, in parallel. */
  async loadAll(): Promise<void> {
    const scan = scanRepositories(this.repositories);
    for (const [name, repos] of scan.duplicates) {
      this.log.error(`failed to poll model '${name}': not unique across all model repositories (${repos.join(', ')})`);
    }
    await Promise.all([...scan.models.values()].map((loc) => this.loadModel(loc)));
  }

  private async loadModel(location: ModelLocation): Promise<void> {
    const record: ModelRecord = { name: location.name, location, versions: new Map() };
    this.models.set(location.name, record);
    let prepared: PreparedModel;
    try {
      prepared = await prepareModel(location, this.loader);
    } catch (err) {
      // The config could not be read or completed: every version the
      // default policy would load is UNAVAILABLE with that reason.
      const reason = reasonOf(err);
      const versions = scanVersions(location.dir).versions.slice(-1);
      if (versions.length === 0) record.noVersionReason = reason;
      for (const v of versions) record.versions.set(v, { version: v, readiness: { state: 'UNAVAILABLE', reason } });
      this.log.error(`failed to load '${location.name}': ${reason}`);
      this.changed();
      return;
    }
    record.prepared = prepared;
    for (const w of prepared.warnings) this.log.warn(w);
    if (prepared.versions.length === 0) {
      record.noVersionReason = 'No model version was found';
      this.changed();
      return;
    }
    await Promise.all(prepared.versions.map((v) => this.loadOneVersion(record, prepared, v)));
    const ok = [...record.versions.values()].some((v) => v.readiness.state === 'READY');
    this.log.info(ok ? `successfully loaded '${record.name}'` : `failed to load '${record.name}'`);
  }

  private async loadOneVersion(record: ModelRecord, prepared: PreparedModel, version: number): Promise<void> {
    const v: VersionRecord = { version, readiness: { state: 'UNAVAILABLE', reason: '' } };
    record.versions.set(version, v);
    v.readiness = transition(v.readiness, 'LOADING', '', `'${record.name}' version ${version}`);
    this.log.info(`loading: ${record.name}:${version}`);
    this.changed();
    try {
      v.loaded = await loadVersion(prepared, record.location, version, this.instanceCtx);
      v.readiness = transition(v.readiness, 'READY', '', `'${record.name}' version ${version}`);
    } catch (err) {
      const reason = reasonOf(err);
      v.readiness = transition(v.readiness, 'UNAVAILABLE', reason, `'${record.name}' version ${version}`);
      this.log.error(`failed to load '${record.name}' version ${version}: ${reason}`);
    }
    this.changed();
  }

  /** Stop admitting, drain in-flight requests, release instances; every model. */
  async unloadAll(): Promise<void> {
    const work: Promise<void>[] = [];
    for (const record of this.models.values()) {
      for (const v of record.versions.values()) work.push(this.unloadVersion(record, v));
    }
    await Promise.all(work);
  }

  private async unloadVersion(record: ModelRecord, v: VersionRecord): Promise<void> {
    if (v.readiness.state !== 'READY' || !v.loaded) return;
    const what = `'${record.name}' version ${v.version}`;
    v.readiness = transition(v.readiness, 'UNLOADING', '', what);
    this.changed();
    const loaded = v.loaded;
    await loaded.scheduler.stop();
    await Promise.all(loaded.instances.map((i) => i.stop()));
    v.loaded = undefined;
    v.readiness = transition(v.readiness, 'UNAVAILABLE', 'unloaded', what);
    this.log.info(`successfully unloaded '${record.name}' version ${v.version}`);
    this.changed();
  }

  /** The scheduler of a READY version, or the lookup error Triton gives. */
  scheduler(model: string, version: number): Scheduler {
    const v = this.models.get(model)?.versions.get(version);
    if (!v) throw new ServerError('NOT_FOUND', `Request for unknown model: '${model}' version ${version} is not found`);
    if (v.readiness.state !== 'READY' || !v.loaded) {
      throw new ServerError('UNAVAILABLE', `Request for unknown model: '${model}' version ${version} is not at ready state`);
    }
    return v.loaded.scheduler;
  }

  /** True when every known model has all its versions READY (strict readiness). */
  allReady(): boolean {
    for (const m of this.models.values()) {
      if (m.versions.size === 0) return false;
      for (const v of m.versions.values()) if (v.readiness.state !== 'READY' && v.readiness.reason !== 'unloaded') return false;
    }
    return true;
  }

  inflightCount(): number {
    let n = 0;
    for (const m of this.models.values()) for (const v of m.versions.values()) n += v.loaded?.scheduler.inflightCount() ?? 0;
    return n;
  }

  /** Model | Version | Status rows, sorted by model then version (protocol.md §7.2). */
  tableRows(): TableRow[] {
    const rows: TableRow[] = [];
    for (const name of [...this.models.keys()].sort()) {
      const m = this.models.get(name)!;
      if (m.versions.size === 0) {
        rows.push({ model: name, version: '-', status: `Not loaded: ${m.noVersionReason ?? 'No model version was found'}` });
        continue;
      }
      for (const v of [...m.versions.values()].sort((a, b) => a.version - b.version)) {
        const status = v.readiness.state === 'READY' ? 'READY' : `${v.readiness.state}${v.readiness.reason ? `: ${v.readiness.reason}` : ''}`;
        rows.push({ model: name, version: String(v.version), status });
      }
    }
    return rows;
  }

  /** Names of models that failed (not every version READY), for startup errors. */
  failedModels(): string[] {
    return [...this.models.values()]
      .filter((m) => m.versions.size === 0 || [...m.versions.values()].some((v) => v.readiness.state !== 'READY'))
      .map((m) => m.name)
      .sort();
  }

  snapshotModels(): ServerSnapshot['models'] {
    const models: Record<string, ModelView> = {};
    for (const m of this.models.values()) {
      models[m.name] = {
        name: m.name,
        config: m.prepared?.config,
        configJson: m.prepared?.configJson,
        plan: m.prepared?.plan,
        labels: m.prepared?.labels ?? {},
        versions: [...m.versions.values()].map((v) => ({ version: v.version, state: v.readiness.state, reason: v.readiness.reason })),
      };
    }
    return models;
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }
}

/** `<Code words>: <message>`, the reason text Triton shows in the table and index. */
export function reasonOf(err: unknown): string {
  const info = toErrorInfo(err);
  return `${CODE_WORDS[info.code]}: ${info.message}`;
}
