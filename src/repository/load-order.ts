/**
 * The order a load of many models takes (modes none and poll at start,
 * `--load-model=*`): every model at once, except that an ensemble starts
 * once the models it uses are done. A cycle is not waited on: its
 * ensembles fail their own checks.
 */
import { ensembleDependencies } from './ensemble-services';
import type { ModelLocation } from './scan';

export function loadInDependencyOrder(
  models: ReadonlyMap<string, ModelLocation>,
  modelConfigName: string,
  load: (location: ModelLocation) => Promise<void>,
): Promise<void> {
  const started = new Map<string, Promise<void>>();
  const visiting = new Set<string>();
  const start = (loc: ModelLocation): Promise<void> => {
    const known = started.get(loc.name);
    if (known !== undefined) return known;
    if (visiting.has(loc.name)) return Promise.resolve();
    visiting.add(loc.name);
    const deps = ensembleDependencies(loc, modelConfigName).flatMap((d) => {
      const dl = models.get(d);
      return dl === undefined ? [] : [start(dl)];
    });
    visiting.delete(loc.name);
    const p = deps.length === 0 ? load(loc) : Promise.all(deps).then(() => load(loc));
    started.set(loc.name, p);
    return p;
  };
  return Promise.all([...models.values()].map(start)).then(() => undefined);
}
