/**
 * Counts and lists over every model's live versions, read at shutdown
 * (Triton's "live models" and in-flight lines), by the console (instance
 * health) and by the forced stop.
 */
import type { InstanceHealth } from './model-lifecycle';
import type { ModelRecord } from './model-record';

type Records = ReadonlyMap<string, ModelRecord>;

export function inflightCount(models: Records): number {
  let n = 0;
  for (const m of models.values()) for (const v of m.versions.values()) n += v.inflightCount();
  return n;
}

/** Versions with requests in flight, and how many each (Triton's shutdown lines). */
export function inflightVersions(models: Records): { model: string; version: number; count: number }[] {
  const out: { model: string; version: number; count: number }[] = [];
  for (const m of models.values()) {
    for (const v of m.versions.values()) {
      const count = v.inflightCount();
      if (count > 0) out.push({ model: m.name, version: v.version, count });
    }
  }
  return out;
}

/** Every version's serving instances, by model then version (the console's instance health). */
export function instanceHealth(models: Records): { model: string; version: number; instances: InstanceHealth[] }[] {
  const out: { model: string; version: number; instances: InstanceHealth[] }[] = [];
  for (const name of [...models.keys()].sort()) {
    const m = models.get(name)!;
    for (const v of [...m.versions.values()].sort((a, b) => a.version - b.version)) {
      out.push({ model: name, version: v.version, instances: v.instanceHealth() });
    }
  }
  return out;
}

/** A version as /metrics shows it (nodetron_model_ready, _instances, nodetron_instance_restarts_total). */
export interface VersionState {
  model: string;
  /** '' for a model whose load failed before any version (its config, say). */
  version: string;
  ready: boolean;
  /** Instances of the serving build (0 unless READY or draining; an ensemble has none). */
  instances: number;
  /** Deaths of its instances that began a restart (Python stubs, instance threads). */
  restarts: number;
}

/** Every version that was loaded or tried, and every model that failed before it had one; read at each scrape. */
export function versionStates(models: Records): VersionState[] {
  const out: VersionState[] = [];
  for (const m of models.values()) {
    if (m.versions.size === 0 && m.noVersionReason !== undefined) out.push({ model: m.name, version: '', ready: false, instances: 0, restarts: 0 });
    for (const v of m.versions.values()) {
      const health = v.instanceHealth();
      out.push({
        model: m.name,
        version: String(v.version),
        ready: v.readiness.state === 'READY',
        instances: health.length,
        restarts: health.reduce((n, h) => n + h.restarts, 0),
      });
    }
  }
  return out;
}

/** Versions with a loaded build (serving or draining): Triton's "live models" at shutdown. */
export function liveCount(models: Records): number {
  let n = 0;
  for (const m of models.values()) for (const v of m.versions.values()) if (v.live) n++;
  return n;
}

/** Forced end (the stop's deadline): every loaded instance is killed now, without finalizing. */
export async function killAll(models: Records): Promise<void> {
  const kills: Promise<void>[] = [];
  for (const m of models.values()) for (const v of m.versions.values()) kills.push(v.kill());
  await Promise.all(kills);
}
