/**
 * The classification labels of an ensemble's outputs, as Triton gives them:
 * an output with a `label_filename` of its own uses it; one without takes
 * the labels of the composing model whose output it carries (the step whose
 * output_map names it), through nested ensembles too. Pure: `lookup` gives
 * a model's config and its own labels (undefined when it is not known).
 */
import type { ModelConfig } from '../core/model-config';

export interface LabelSource {
  config: ModelConfig | undefined;
  /** Labels from the model's own label_filename entries, by output name. */
  labels: Readonly<Record<string, string[]>>;
}

export function resolvedLabels(name: string, lookup: (model: string) => LabelSource | undefined): Record<string, string[]> {
  return resolve(name, lookup, new Set());
}

function resolve(name: string, lookup: (model: string) => LabelSource | undefined, visiting: Set<string>): Record<string, string[]> {
  const source = lookup(name);
  if (source === undefined) return {};
  const own = source.labels;
  const steps = source.config?.ensemble_scheduling?.step;
  if (steps === undefined || steps.length === 0 || visiting.has(name)) return { ...own };
  visiting.add(name);
  const out: Record<string, string[]> = { ...own };
  for (const o of source.config!.output) {
    if (Object.hasOwn(out, o.name)) continue;
    for (const step of steps) {
      // output_map: the composing model's output name → the ensemble's tensor name.
      const from = Object.entries(step.output_map ?? {}).find(([, tensor]) => tensor === o.name)?.[0];
      if (from === undefined) continue;
      const inner = resolve(step.model_name, lookup, visiting);
      if (Object.hasOwn(inner, from)) out[o.name] = inner[from]!;
      break;
    }
  }
  visiting.delete(name);
  return out;
}
