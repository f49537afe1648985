/**
 * What a model load says at --log-verbose=1 (the reading of a model, step
 * by step): which config file was read, which version folders were found
 * and chosen, how the backend was decided, what auto-complete filled in
 * from the model file, and which defaults normalisation added. Pure texts
 * from before/after configs; prepareModel hands them to its listener.
 */
import type { ModelConfig } from '../core/model-config';
import type { VersionScan } from './scan';

/** Who hears about a load while it runs (the server's logger; `nodetron lint`). */
export interface LoadListener {
  /** Something the author should fix; the load goes on. */
  warn(text: string): void;
  /** A step of the load, for --log-verbose=1. */
  detail(text: string): void;
  /** Progress a person follows (a Python environment being built), at info. */
  info?(text: string): void;
  /** The model's state reason while a slow step runs (Backend.prepare); undefined when it ends. */
  stage?(reason: string | undefined): void;
}

export const SILENT: LoadListener = { warn: () => undefined, detail: () => undefined };

export function configSourceDetail(model: string, file: string, source: 'file' | 'override' | 'none'): string {
  switch (source) {
    case 'file':
      return `model '${model}': reading config ${file}`;
    case 'override':
      return `model '${model}': config from the load request; ${file} is not read`;
    default:
      return `model '${model}': no ${file}; the config starts empty and auto-complete fills it from the model file`;
  }
}

export function versionsDetail(model: string, scanned: VersionScan, policy: unknown, chosen: readonly number[]): string {
  const found = scanned.versions.length === 0 ? 'none' : scanned.versions.join(', ');
  const skipped = scanned.ignored.length === 0 ? '' : ` (skipped, not integers: ${scanned.ignored.join(', ')})`;
  const picked = chosen.length === 0 ? 'no version' : `version ${chosen.join(', ')}`;
  return `model '${model}': version folders ${found}${skipped}; version_policy ${JSON.stringify(policy)} selects ${picked}`;
}

export function backendDetail(model: string, before: ModelConfig, after: ModelConfig, folder: string, entries: readonly string[]): string {
  const filled: string[] = [];
  for (const k of ['backend', 'platform', 'default_model_filename'] as const) {
    if ((before[k] ?? '') === '' && after[k] !== '') filled.push(k);
  }
  const what = `backend '${after.backend}', platform '${after.platform}', default_model_filename '${after.default_model_filename}'`;
  if (filled.length === 0) return `model '${model}': ${what}, as the config says`;
  const from =
    (before.platform ?? '') !== ''
      ? `from platform '${before.platform}'`
      : entries.length === 0
        ? 'with no version folder to look in'
        : `from the files in ${folder}: ${entries.join(', ')}`;
  return `model '${model}': ${what}; ${filled.join(', ')} filled in ${from}`;
}

export function checkingDetail(model: string, modelPath: string, autoComplete: boolean): string {
  return `model '${model}': checking the config against ${modelPath}${autoComplete ? ' and auto-completing it' : ''}`;
}

function tensorNames(list: readonly { name: string }[] | undefined): string[] {
  return (list ?? []).map((t) => t.name);
}

/** What the backend's auto-complete changed, by field. */
export function autoCompleteDetail(model: string, before: ModelConfig, after: ModelConfig, modelPath: string, enabled: boolean): string {
  if (!enabled) return `model '${model}': auto-complete is off (--disable-auto-complete-config); ${modelPath} is only checked against the config`;
  const filled: string[] = [];
  if (before.max_batch_size !== after.max_batch_size) filled.push(`max_batch_size ${after.max_batch_size}`);
  for (const [kind, b, a] of [
    ['input', before.input, after.input],
    ['output', before.output, after.output],
  ] as const) {
    const had = new Set(tensorNames(b));
    const added = tensorNames(a).filter((n) => !had.has(n));
    if (added.length > 0) filled.push(`${kind} ${added.join(', ')}`);
    const dimsFilled = (a ?? []).filter((t) => had.has(t.name) && (b ?? []).find((o) => o.name === t.name)?.dims?.length === 0 && t.dims.length > 0);
    if (dimsFilled.length > 0) filled.push(`dims of ${kind} ${dimsFilled.map((t) => t.name).join(', ')}`);
  }
  if (before.dynamic_batching === undefined && after.dynamic_batching !== undefined) filled.push('dynamic_batching {}');
  if (before.model_transaction_policy?.decoupled !== after.model_transaction_policy?.decoupled) filled.push('model_transaction_policy { decoupled }');
  const what = filled.length === 0 ? 'nothing to fill; the config matches it' : `filled ${filled.join('; ')}`;
  return `model '${model}': auto-complete from ${modelPath}: ${what}`;
}

/** Defaults normalisation added that the author did not write (instances). */
export function defaultsDetail(model: string, before: ModelConfig, after: ModelConfig): string | undefined {
  if ((before.instance_group ?? []).length > 0) return undefined;
  const groups = after.instance_group.map((g) => `${g.count} x ${g.kind}`).join(', ');
  return groups === ''
    ? undefined
    : `model '${model}': no instance_group in the config; default ${groups} (named ${after.instance_group.map((g) => g.name).join(', ')})`;
}
