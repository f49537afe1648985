/**
 * What the registry remembers per model and per version, and the pure views
 * over it: the repository index (protocol.md §1.10), the model table (§7.2)
 * and the strict-readiness rule. Versions change only through their
 * lifecycle (model-lifecycle.ts); the views read them.
 */
import type { ModelView, ServerSnapshot, VersionView } from '../request/server-snapshot';
import type { PreparedModel } from './model-loader';
import type { Readiness } from '../core/model-state';
import type { VersionLifecycle } from './model-lifecycle';
import type { ModelLocation } from './scan';
import { resolvedLabels } from './ensemble-labels';

/** What the views read of a version (VersionLifecycle is one). */
export interface VersionRecord {
  readonly version: number;
  readonly readiness: Readiness;
  /** Why the last reload of this READY version failed (the previous load keeps serving). */
  readonly note?: string | undefined;
  /** READY, but an instance cannot serve now: why (model-lifecycle.ts). */
  readonly unready?: string | undefined;
}

/** A model and its versions; the views take any VersionRecord, the manager holds lifecycles. */
export interface ModelRecord<V extends VersionRecord = VersionLifecycle> {
  name: string;
  location: ModelLocation;
  prepared?: PreparedModel;
  versions: Map<number, V>;
  /** Why the model has no version to load (shown as version '-' in the table). */
  noVersionReason?: string;
  /** Fingerprint of the files the last load attempt used; undefined = load again. */
  applied?: string;
  /** False once unloaded on request: such a model does not count for strict readiness. */
  wanted: boolean;
  /** Temporary folder of a load with `file:` overrides, removed when no longer used. */
  overrideDir?: string;
  /** Loads that built a version (ModelView.loads). */
  loads?: number;
  /** A slow step of the load runs now (Backend.prepare: 'building environment'): the model's reason meanwhile. */
  preparing?: string;
  /**
   * A load reads and completes the config now, before any version exists
   * (a Python model's auto-complete runs a stub): the model is LOADING
   * meanwhile, not missing from the index.
   */
  configuring?: boolean;
}

export const DUPLICATE_REASON = 'model appears in two or more repositories';

/** A load runs and no version exists yet (its config is being read, or a slow step such as an environment build runs): LOADING. */
function loadingFirstVersion(m: ModelRecord<VersionRecord>): boolean {
  return m.versions.size === 0 && (m.preparing !== undefined || m.configuring === true);
}

export interface IndexEntry {
  name: string;
  version?: string;
  state?: string;
  reason?: string;
}

export interface TableRow {
  model: string;
  version: string;
  status: string;
}

export function hasServing(record: ModelRecord<VersionRecord>): boolean {
  for (const v of record.versions.values()) if (v.readiness.state === 'READY') return true;
  return false;
}

function sortedVersions(record: ModelRecord<VersionRecord>): VersionRecord[] {
  return [...record.versions.values()].sort((a, b) => a.version - b.version);
}

/**
 * Index entries sorted by name: every model folder (`found`), each loaded
 * model per version; a never-loaded model is only its name; a model without
 * any version folder is UNAVAILABLE with the reason (Triton leaves it out,
 * which hides the mistake); duplicates carry their reason.
 */
export function indexEntries(
  records: ReadonlyMap<string, ModelRecord<VersionRecord>>,
  found: Iterable<string>,
  duplicates: Iterable<string>,
  readyOnly: boolean,
): IndexEntry[] {
  const dup = new Set(duplicates);
  const names = new Set([...found, ...dup, ...records.keys()]);
  const out: IndexEntry[] = [];
  for (const name of [...names].sort()) {
    const record = records.get(name);
    if (dup.has(name) && !(record && hasServing(record))) {
      if (!readyOnly) out.push({ name, state: 'UNAVAILABLE', reason: DUPLICATE_REASON });
      continue;
    }
    if (!record) {
      if (!readyOnly) out.push({ name });
      continue;
    }
    if (loadingFirstVersion(record)) {
      if (!readyOnly) out.push(record.preparing !== undefined ? { name, state: 'LOADING', reason: record.preparing } : { name, state: 'LOADING' });
      continue;
    }
    if (record.versions.size === 0 && record.noVersionReason !== undefined) {
      // Triton leaves such a model out; its entry says why it is not loaded and what to do.
      if (!readyOnly) out.push({ name, state: 'UNAVAILABLE', reason: record.noVersionReason });
      continue;
    }
    if (record.versions.size === 0) {
      // Never hidden: a model with no version to list is its name, as a never-loaded one.
      if (!readyOnly) out.push({ name });
      continue;
    }
    for (const v of sortedVersions(record)) {
      if (readyOnly && v.readiness.state !== 'READY') continue;
      const entry: IndexEntry = { name, version: String(v.version), state: v.readiness.state };
      const reason = v.readiness.reason || v.unready || v.note || record.preparing || '';
      if (reason !== '') entry.reason = reason;
      out.push(entry);
    }
  }
  return out;
}

/** Model | Version | Status rows, sorted by model then version (protocol.md §7.2). */
export function tableRows(records: ReadonlyMap<string, ModelRecord<VersionRecord>>, duplicates: Iterable<string>): TableRow[] {
  const rows: TableRow[] = [];
  const dup = new Set(duplicates);
  for (const name of [...new Set([...records.keys(), ...dup])].sort()) {
    const m = records.get(name);
    if (!m) {
      rows.push({ model: name, version: '-', status: `UNAVAILABLE: ${DUPLICATE_REASON}` });
      continue;
    }
    if (loadingFirstVersion(m)) {
      rows.push({ model: name, version: '-', status: m.preparing !== undefined ? `LOADING: ${m.preparing}` : 'LOADING' });
      continue;
    }
    if (m.versions.size === 0) {
      rows.push({ model: name, version: '-', status: `Not loaded: ${m.noVersionReason ?? 'No model version was found'}` });
      continue;
    }
    for (const v of sortedVersions(m)) {
      const status = v.readiness.state === 'READY' ? 'READY' : `${v.readiness.state}${v.readiness.reason ? `: ${v.readiness.reason}` : ''}`;
      rows.push({ model: name, version: String(v.version), status });
    }
  }
  return rows;
}

/**
 * Strict readiness: every model that should be loaded has all its versions
 * READY (versions retired by the version policy or unloaded on request do
 * not count), and each READY one can serve (no instance unready: a dead
 * stub, a model.py is_ready() that said no).
 */
export function allReady(records: ReadonlyMap<string, ModelRecord<VersionRecord>>): boolean {
  for (const m of records.values()) {
    if (!m.wanted) continue;
    if (m.versions.size === 0) return false;
    for (const v of m.versions.values()) {
      if (v.readiness.state !== 'READY' && v.readiness.reason !== 'unloaded') return false;
      if (v.readiness.state === 'READY' && v.unready !== undefined) return false;
    }
  }
  return true;
}

/** Names of wanted models that failed (not every version READY), for startup errors; one still preparing has not failed. */
export function failedModels(records: ReadonlyMap<string, ModelRecord<VersionRecord>>): string[] {
  return [...records.values()]
    .filter((m) => m.wanted && m.preparing === undefined && (m.versions.size === 0 || [...m.versions.values()].some((v) => v.readiness.state !== 'READY')))
    .map((m) => m.name);
}

export function snapshotModels(records: ReadonlyMap<string, ModelRecord<VersionRecord>>): ServerSnapshot['models'] {
  const models: Record<string, ModelView> = {};
  for (const m of records.values()) {
    models[m.name] = {
      name: m.name,
      config: m.prepared?.config,
      configJson: m.prepared?.configJson,
      dir: m.location.dir,
      loads: m.loads ?? 0,
      plan: m.prepared?.plan,
      labels:
        m.prepared?.config?.ensemble_scheduling === undefined
          ? (m.prepared?.labels ?? {})
          : resolvedLabels(m.name, (name) => {
              const r = records.get(name);
              return r === undefined ? undefined : { config: r.prepared?.config, labels: r.prepared?.labels ?? {} };
            }),
      versions: sortedVersions(m).map((v) => {
        const view: VersionView = { version: v.version, state: v.readiness.state, reason: v.readiness.reason };
        if (v.unready !== undefined) view.unready = v.unready;
        return view;
      }),
    };
  }
  return models;
}
