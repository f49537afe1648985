/**
 * Resolve a model name and optional version string to a READY version, with
 * Triton's lookup errors (protocol.md §4.1). Shared by every frontend, which
 * answer from their snapshot; the main thread makes the same choice again
 * over the live versions when a request is enqueued
 * (repository/version-resolution.ts), and that choice is the one that counts.
 */
import { ServerError } from '../core/errors';
import type { ModelState } from '../core/model-state';
import { checkModelName } from './model-name';
import type { ModelView, ServerSnapshot } from './server-snapshot';

export interface Resolved {
  view: ModelView;
  version: number;
  /** No version was named: the newest READY one was picked (and is picked again at enqueue). */
  latest: boolean;
}

/** A version as far as choosing one goes: a snapshot's VersionView or a live version. */
export interface VersionChoice {
  readonly version: number;
  readonly state: ModelState;
}

const PREFIX = 'Request for unknown model: ';

/** Triton's text for a model name nobody knows. */
export function unknownModel(name: string): ServerError {
  return new ServerError('NOT_FOUND', `${PREFIX}'${name}' is not found`);
}

/** Triton's text for a version that exists but is not READY (or, `why`, READY and unable to serve now). */
export function notReady(name: string, version: number, why?: string): ServerError {
  return new ServerError('UNAVAILABLE', `${PREFIX}'${name}' version ${version} is not at ready state${why === undefined ? '' : `: ${why}`}`);
}

/**
 * What a lookup is for. 'ready': the model's ready probe, which also needs
 * the version's instances able to serve (VersionView.unready, Triton's
 * instance readiness). 'loaded': inference, metadata, config, BLS: a READY
 * version is enough (Triton's GetModel); a request to an instance being
 * restarted waits for it.
 */
export type LookupFor = 'ready' | 'loaded';

/**
 * Triton's version choice (GetModel): the named version if it is READY, or,
 * with none named, the newest READY version; otherwise its lookup error.
 */
export function chooseVersion<V extends VersionChoice>(name: string, versions: Iterable<V>, wanted: number | undefined): V {
  if (wanted !== undefined) {
    for (const v of versions) {
      if (v.version !== wanted) continue;
      if (v.state !== 'READY') throw notReady(name, wanted);
      return v;
    }
    throw new ServerError('NOT_FOUND', `${PREFIX}'${name}' version ${wanted} is not found`);
  }
  let best: V | undefined;
  for (const v of versions) if (v.state === 'READY' && (best === undefined || v.version > best.version)) best = v;
  if (best === undefined) throw new ServerError('NOT_FOUND', `${PREFIX}'${name}' has no available versions`);
  return best;
}

/**
 * `lookupFor` defaults to 'ready' because the HTTP thread calls this one way
 * for its ready route and its infer, metadata and config routes alike (its
 * transport is being rewritten); until those pass 'loaded', an HTTP
 * request to an unready version is refused with the reason.
 */
export function lookupModel(snapshot: ServerSnapshot, name: string, versionText: string | undefined, lookupFor: LookupFor = 'ready'): Resolved {
  const view = Object.prototype.hasOwnProperty.call(snapshot.models, name) ? snapshot.models[name] : undefined;
  if (view === undefined) {
    checkModelName(name);
    throw unknownModel(name);
  }
  const latest = versionText === undefined || versionText === '';
  const chosen = chooseVersion(name, view.versions, latest ? undefined : parseVersion(versionText));
  if (lookupFor === 'ready' && chosen.unready !== undefined) throw notReady(name, chosen.version, chosen.unready);
  return { view, version: chosen.version, latest };
}

/** Version text to number, with Triton's texts for bad values. */
export function parseVersion(text: string): number {
  if (/^-[0-9]+$/.test(text)) {
    throw new ServerError('INVALID_ARG', `invalid model version specified '${text}' , version should be an integral value > 0`);
  }
  if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new ServerError(
      'INVALID_ARG',
      `failed to get model version from specified version string '${text}' (details: not an integral value), version should be an integral value > 0`,
    );
  }
  return Number(text);
}

/** READY versions of a model, ascending, as strings (metadata `versions`). */
export function readyVersions(view: ModelView): string[] {
  return view.versions
    .filter((v) => v.state === 'READY')
    .map((v) => v.version)
    .sort((a, b) => a - b)
    .map(String);
}
