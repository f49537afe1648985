/**
 * The load-failure lines the server logs and `nodetron lint` prints, made
 * in one place so both say the same words.
 */
import { ServerError, toErrorInfo } from '../core/errors';

/** `failed to load '<m>': <reason>`, or with `version <v>` when one version failed. */
export function loadFailedText(model: string, reason: string, version?: number): string {
  return version === undefined ? `failed to load '${model}': ${reason}` : `failed to load '${model}' version ${version}: ${reason}`;
}

/** A model folder name found in more than one repository (Triton refuses it). */
export function duplicateModelText(name: string, repositories: readonly string[]): string {
  return `failed to poll model '${name}': not unique across all model repositories (${repositories.join(', ')})`;
}

/** Triton's answer to a load whose model folder could not be polled; `reason` follows it when known. */
export function pollFailure(name: string, reason?: string): ServerError {
  const text = `failed to load '${name}', failed to poll from model repository`;
  return new ServerError('INTERNAL', reason === undefined ? text : `${text}: ${reason}`);
}

/** Errors Triton meets while polling the folder (config unreadable), not while loading a version. */
export function isPollError(err: unknown): boolean {
  const m = toErrorInfo(err).message;
  return m.startsWith('failed to read text proto') || m.startsWith('unexpected directory name');
}
