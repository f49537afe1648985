/**
 * What the registry lends ensemble schedulers (src/scheduler/ensemble-scheduler.ts):
 * the configs of composing models at load, with Triton's dependency errors,
 * READY versions and validation plans at request time, and the route into
 * the composing models' schedulers. Also reads which models an ensemble's
 * config depends on, so loads can wait for them.
 */
import fs from 'node:fs';
import { CODE_WORDS, ServerError } from '../core/errors';
import type { Arena } from '../dataplane/arena';
import type { EnsembleServices } from '../scheduler/ensemble-scheduler';
import type { InferRequest, Respond } from '../core/request';
import type { ModelConfig } from '../core/model-config';
import { parseModelConfigText } from './config/pbtxt';
import { configPath } from './model-loader';
import { notReady } from '../request/model-lookup';
import type { ModelRecord, VersionRecord } from './model-record';
import type { ModelLocation } from './scan';
import { cancelRequest, resolveVersion } from './version-resolution';

function newestReady(record: ModelRecord): VersionRecord | undefined {
  let best: VersionRecord | undefined;
  for (const v of record.versions.values()) {
    if (v.state === 'READY' && (best === undefined || v.version > best.version)) best = v;
  }
  return best;
}

/** A load reason without its code words ("Internal: x" → "x"), as Triton quotes a status message. */
function message(reason: string): string {
  for (const w of Object.values(CODE_WORDS)) if (reason.startsWith(`${w}: `)) return reason.slice(w.length + 2);
  return reason;
}

export function ensembleServices(
  models: ReadonlyMap<string, ModelRecord>,
  arena: Arena,
  route: (request: InferRequest, respond: Respond) => void,
): EnsembleServices {
  return {
    arena,
    route,
    cancel: (request) => cancelRequest(models, request),
    composingConfig(e: string, m: string, version: number): ModelConfig {
      const record = models.get(m);
      if (record === undefined || !record.wanted) {
        throw new ServerError('INVALID_ARG', ensembleMissingModelText(e, m));
      }
      const ready = version === -1 ? newestReady(record) : record.versions.get(version);
      if (ready !== undefined && ready.readiness.state === 'READY' && record.prepared !== undefined) return record.prepared.config;
      if (version !== -1 && newestReady(record) !== undefined) {
        throw new ServerError('INVALID_ARG', `ensemble '${e}' depends on '${m}' whose required version ${version} is not loaded.`);
      }
      const latest = [...record.versions.values()].sort((a, b) => b.version - a.version)[0];
      const why = message(latest?.readiness.reason || record.noVersionReason || 'not loaded');
      if (record.prepared === undefined) {
        throw new ServerError('INVALID_ARG', `ensemble '${e}' depends on '${m}' which is not valid. Model '${m}' failed with error: ${why}`);
      }
      throw new ServerError('INVALID_ARG', `ensemble '${e}' depends on '${m}' which has no loaded version. Model '${m}' loading failed with error: ${why}`);
    },
    resolve(m: string, version: number) {
      // The same choice the route makes again when the step is enqueued (version-resolution.ts).
      const v = resolveVersion(models, m, version, version === -1);
      const plan = models.get(m)?.prepared?.plan;
      if (plan === undefined) throw notReady(m, v.version);
      return { version: v.version, plan };
    },
  };
}

/** Triton's text for an ensemble step naming a model that is not in the repository (or is in two). */
export function ensembleMissingModelText(ensemble: string, model: string): string {
  return `ensemble ${ensemble} contains models that are not available or ambiguous: ${model}`;
}

/** Models an ensemble's config names in its steps ([] for other models, or when the config cannot be read). */
export function ensembleDependencies(location: ModelLocation, modelConfigName: string): string[] {
  try {
    const file = configPath(location, modelConfigName);
    const config = parseModelConfigText(fs.readFileSync(file, 'utf8'), file);
    return [...new Set((config.ensemble_scheduling?.step ?? []).map((s) => s.model_name).filter((n) => n !== location.name))];
  } catch {
    return [];
  }
}
