/**
 * Resolve a model name and optional version string to a READY version, with
 * Triton's lookup errors (protocol.md §4.1). Shared by every frontend.
 */
import { ServerError } from '../core/errors';
import type { ModelView, ServerSnapshot } from './server-snapshot';

export interface Resolved {
  view: ModelView;
  version: number;
}

const PREFIX = 'Request for unknown model: ';

export function lookupModel(snapshot: ServerSnapshot, name: string, versionText: string | undefined): Resolved {
  const view = Object.prototype.hasOwnProperty.call(snapshot.models, name) ? snapshot.models[name] : undefined;
  if (view === undefined) throw new ServerError('NOT_FOUND', `${PREFIX}'${name}' is not found`);
  if (versionText !== undefined && versionText !== '') {
    const version = parseVersion(versionText);
    const v = view.versions.find((x) => x.version === version);
    if (v === undefined) throw new ServerError('NOT_FOUND', `${PREFIX}'${name}' version ${version} is not found`);
    if (v.state !== 'READY') throw new ServerError('UNAVAILABLE', `${PREFIX}'${name}' version ${version} is not at ready state`);
    return { view, version };
  }
  let best = -1;
  for (const v of view.versions) if (v.state === 'READY' && v.version > best) best = v.version;
  if (best < 0) throw new ServerError('NOT_FOUND', `${PREFIX}'${name}' has no available versions`);
  return { view, version: best };
}

/** Version text to number, with Triton's texts for bad values. */
export function parseVersion(text: string): number {
  if (/^-[0-9]+$/.test(text)) {
    throw new ServerError('INVALID_ARG', `invalid model version specified '${text}' , version should be an integral value > 0`);
  }
  if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new ServerError('INVALID_ARG', `failed to get model version from specified version string '${text}' (details: not an integral value), version should be an integral value > 0`);
  }
  return Number(text);
}

/** READY versions of a model, ascending, as strings (metadata `versions`). */
export function readyVersions(view: ModelView): string[] {
  return view.versions.filter((v) => v.state === 'READY').map((v) => v.version).sort((a, b) => a - b).map(String);
}
