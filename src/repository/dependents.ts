/**
 * Which models an unload with `unload_dependents: true` takes along
 * (protocol.md §1.10: "models loaded along with it, e.g. the ensemble that
 * uses a composing model, or composing models of an ensemble"):
 *
 * - downstream: every loaded ensemble that uses the model, directly or
 *   through other ensembles (they could no longer serve);
 * - upstream, when the named model is an ensemble: its composing models
 *   (through nested ensembles too), except those a loaded ensemble that
 *   stays still uses. Ensembles taken along downstream do not take their
 *   own composing models.
 *
 * Without the flag nothing else is unloaded: an ensemble whose step model is
 * gone stays READY and its requests fail with that step's lookup error.
 */
import type { ModelRecord, VersionRecord } from './model-record';
import { hasServing } from './model-record';

/** Models a loaded (wanted, serving) model's config names in its ensemble steps. */
function steps(record: ModelRecord<VersionRecord>): string[] {
  const step = record.prepared?.config.ensemble_scheduling?.step ?? [];
  return [...new Set(step.map((s) => s.model_name).filter((n) => n !== record.name))];
}

function loaded(record: ModelRecord<VersionRecord> | undefined): record is ModelRecord<VersionRecord> {
  return record !== undefined && record.wanted && hasServing(record);
}

/** Names to unload besides `name` (sorted; downstream ensembles and unshared composing models). */
export function unloadDependents(models: ReadonlyMap<string, ModelRecord<VersionRecord>>, name: string): string[] {
  const live = [...models.values()].filter(loaded);
  const gone = new Set<string>([name]);
  // Downstream: ensembles whose steps reach something that goes, until nothing changes.
  for (let grew = true; grew;) {
    grew = false;
    for (const r of live) {
      if (!gone.has(r.name) && steps(r).some((s) => gone.has(s))) {
        gone.add(r.name);
        grew = true;
      }
    }
  }
  // Upstream: composing models of what goes, unless a staying ensemble uses them.
  const candidates = new Set<string>();
  const visit = (m: string): void => {
    const r = models.get(m);
    if (!loaded(r)) return;
    for (const s of steps(r)) {
      if (gone.has(s) || candidates.has(s)) continue;
      candidates.add(s);
      visit(s);
    }
  };
  visit(name); // only the named model's own composing models, not those of ensembles taken along
  for (let shrank = true; shrank;) {
    shrank = false;
    for (const c of candidates) {
      const usedByStaying = live.some((r) => !gone.has(r.name) && !candidates.has(r.name) && steps(r).includes(c));
      if (usedByStaying) {
        candidates.delete(c);
        shrank = true;
      }
    }
  }
  for (const c of candidates) if (loaded(models.get(c))) gone.add(c);
  gone.delete(name);
  return [...gone].sort();
}
