/**
 * Where every inference request enters a model version, on the main thread:
 * client requests from both frontends, BLS and ensemble steps. The version
 * is chosen here, against the live versions at enqueue time, whatever a
 * frontend picked from its (possibly a moment old) snapshot:
 *
 * - a request that named a version gets that version if it is READY, else
 *   Triton's "... version <v> is not at ready state" / "... is not found";
 * - a request that named none (`latest`) gets the newest READY version now,
 *   so during a reload or a version change the new version takes over with
 *   no gap while the old one drains what it admitted; none READY is
 *   "... has no available versions".
 *
 * The chosen version is written into the request (its responses report it)
 * and the version's admission gate (model-lifecycle.ts) takes it. A refused
 * request is answered exactly once with the error; its sender frees its
 * tensors as after any final response.
 */
import { toErrorInfo } from '../core/errors';
import type { InferRequest, Respond } from '../core/request';
import { chooseVersion, unknownModel } from '../request/model-lookup';
import { checkModelName } from '../request/model-name';
import type { VersionLifecycle } from './model-lifecycle';

/** What resolution needs of a model: its versions. */
export interface VersionedModel {
  versions: ReadonlyMap<number, VersionLifecycle>;
}

/** The version a request runs on (Triton's GetModel), or its lookup error thrown. */
export function resolveVersion(models: ReadonlyMap<string, VersionedModel>, model: string, version: number, latest: boolean): VersionLifecycle {
  const record = models.get(model);
  if (record === undefined) {
    checkModelName(model);
    throw unknownModel(model);
  }
  return chooseVersion(model, record.versions.values(), latest ? undefined : version);
}

/** Resolve the request's version now and hand it to that version's admission gate, or answer the lookup error. */
export function routeRequest(models: ReadonlyMap<string, VersionedModel>, request: InferRequest, respond: Respond): void {
  let target: VersionLifecycle;
  try {
    target = resolveVersion(models, request.model, request.version, request.latest);
  } catch (err) {
    respond({ outputs: [], error: toErrorInfo(err), final: true });
    return;
  }
  request.version = target.version;
  target.admit(request, respond);
}

/**
 * A request `routeRequest` took was cancelled: the version it was admitted
 * to (its `version`, written at routing) hands it to its schedulers, which
 * take it out of their queue or tell the instance running it. A request
 * refused at routing, or already answered, is not found there: nothing.
 */
export function cancelRequest(models: ReadonlyMap<string, VersionedModel>, request: InferRequest): void {
  models.get(request.model)?.versions.get(request.version)?.cancel(request);
}
