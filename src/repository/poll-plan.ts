/**
 * What one poll does (poll mode), decided from the scan and the registry:
 * load a model that is new, reload one whose files changed (its fingerprint
 * differs from the one its last load used) once its folder has settled, and
 * unload one whose folder is gone, unless its root could not be read this
 * time, by the scan or before it (a root that is away is not a repository
 * that was emptied).
 */
import { fingerprint } from './model-fingerprint';
import type { ModelRecord, VersionRecord } from './model-record';
import type { ModelLocation, ScanResult } from './scan';

export interface PollPlan<R> {
  apply: ModelLocation[];
  remove: R[];
}

export function pollPlan<R extends ModelRecord<VersionRecord>>(
  scan: ScanResult,
  models: ReadonlyMap<string, R>,
  settled: (dir: string) => boolean,
  unreadableRoots: ReadonlySet<string>,
  print: (dir: string) => string = fingerprint,
): PollPlan<R> {
  const apply: ModelLocation[] = [];
  for (const loc of scan.models.values()) {
    const record = models.get(loc.name);
    if (record && record.wanted && record.location.dir === loc.dir && record.applied === print(loc.dir)) continue;
    if (settled(loc.dir)) apply.push(loc);
  }
  const remove: R[] = [];
  for (const record of models.values()) {
    if (scan.models.has(record.name) || scan.duplicates.has(record.name) || !record.wanted) continue;
    if (unreadableRoots.has(record.location.repository) || scan.unreadable.includes(record.location.repository)) continue;
    remove.push(record);
  }
  return { apply, remove };
}
