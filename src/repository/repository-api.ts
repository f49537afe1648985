/**
 * The model repository extension (protocol.md §1.10, §2.5), one
 * implementation for every frontend: HTTP and gRPC only translate their wire
 * form into these calls and the results back. Texts and codes are Triton's.
 */
import type { ModelControlMode } from '../cli-options';
import { ServerError, toErrorInfo } from '../core/errors';
import { parseModelConfigJson } from './config/json-config';
import type { ModelConfig } from '../core/model-config';
import { checkLoadRequest, checkModelNameToLoad, writeOverrideDir } from './load-request';
import type { LoadRequest, UnloadRequest } from './load-request';
import type { IndexEntry, RepositoryManager } from './repository-manager';
import { lookupModel } from '../request/model-lookup';

export type { LoadRequest, OverrideFile, UnloadRequest } from './load-request';
export type { IndexEntry } from './repository-manager';

export interface RepositoryApiContext {
  repo: RepositoryManager;
  mode: ModelControlMode;
}

/** `/v2/repository/<name>/...` and a non-empty gRPC repository_name are refused (UNSUPPORTED). */
export function checkRepositoryName(repository: string | undefined): void {
  if (repository !== undefined && repository !== '') {
    throw new ServerError('UNSUPPORTED', "'repository_name' specification is not supported");
  }
}

/**
 * Load and unload need --model-control-mode=explicit. Triton answers "...
 * if polling is enabled" in none mode too, where no polling is on, and
 * clients match that text: it comes first in both modes, then which mode
 * this is and the flag that allows it.
 */
export function modelControlRefusal(mode: ModelControlMode): ServerError {
  const which = mode === 'poll' ? '' : ` The server runs in model control mode '${mode}'.`;
  return new ServerError(
    'UNAVAILABLE',
    `explicit model load / unload is not allowed if polling is enabled.${which} Start the server with --model-control-mode=explicit to load and unload models through the repository API.`,
  );
}

function requireExplicit(mode: ModelControlMode): void {
  if (mode !== 'explicit') throw modelControlRefusal(mode);
}

/**
 * Every model folder and version, sorted by name; `ready` keeps READY
 * versions only. In explicit mode the cloud roots are listed again first,
 * so a model uploaded since is in the index before it is loaded.
 */
export async function repositoryIndex(ctx: RepositoryApiContext, ready: boolean): Promise<IndexEntry[]> {
  if (ctx.mode === 'explicit') await ctx.repo.refreshNames();
  return ctx.repo.index(ready);
}

/** Load or reload a model; resolves when the load finished, throws Triton's load failure. */
export async function repositoryLoad(ctx: RepositoryApiContext, model: string, req: LoadRequest): Promise<void> {
  checkModelNameToLoad(model);
  requireExplicit(ctx.mode);
  checkLoadRequest(req);
  let config: ModelConfig | undefined;
  if (req.config !== undefined) {
    try {
      config = parseModelConfigJson(req.config);
    } catch (err) {
      // Triton: the model's poll fails (logged with the reason) and the load answers "failed to load".
      throw ctx.repo.pollFailed(model, toErrorInfo(err).message);
    }
  }
  const dir = req.files.length > 0 ? writeOverrideDir(model, req.files) : undefined;
  const outcome = await ctx.repo.load(model, { config, dir });
  if (outcome.errors.length > 0) {
    throw new ServerError('INVALID_ARG', `load failed for model '${model}': ${outcome.errors.join('')}\n`);
  }
}

/** Start unloading a model (answers once its versions are UNLOADING); an unknown model is fine. */
export async function repositoryUnload(ctx: RepositoryApiContext, model: string, req: UnloadRequest): Promise<void> {
  checkModelNameToLoad(model);
  requireExplicit(ctx.mode);
  // unload_dependents: the ensembles using the model and an ensemble's unshared composing models go too.
  const along = req.unloadDependents ? ctx.repo.dependentsOf(model) : [];
  // Its files fetched from a cloud root leave the cache once it has drained.
  await Promise.all([model, ...along].map((m) => ctx.repo.unload(m, true)));
  const still = ctx.repo
    .index(true)
    .filter((e) => e.name === model)
    .map((e) => e.version);
  if (still.length > 0) {
    throw new ServerError('INTERNAL', `failed to unload '${model}', versions that are still available: ${still.join(',')}`);
  }
}

/**
 * Whether a model (a version; -1: the one the version policy serves) is
 * READY, as Triton's ServerModelIsReady answers it: an unknown model or
 * version is not ready, no error. Any control mode.
 */
export function repositoryModelReady(ctx: RepositoryApiContext, model: string, version: number): boolean {
  try {
    lookupModel({ live: true, ready: true, exiting: false, models: ctx.repo.snapshotModels() }, model, version < 0 ? undefined : String(version));
    return true;
  } catch {
    return false;
  }
}
