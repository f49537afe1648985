/**
 * A model name is the name of one folder in a model repository, so a name
 * that is not one plain folder name can never be a model and must never
 * reach the file system: `.` and `..`, anything with a `/` or `\` (which an
 * absolute path has), and a NUL byte. One check, with Triton's text
 * (protocol.md §1.10), for every API that takes a model name: the
 * repository API checks it before anything else, as Triton does; the
 * lookups (infer, metadata, ready, config, statistics, trace settings, BLS)
 * check it when the name is not a served model, so the served models'
 * lookups cost nothing and a refused name says why instead of "unknown
 * model".
 */
import { ServerError } from '../core/errors';

/** Why `name` cannot be a model's folder name, or undefined when it can. */
export function modelNameProblem(name: string): ServerError | undefined {
  if (name === '.' || name === '..' || name.includes('/') || name.includes('\\') || name.includes('\0')) {
    return new ServerError('INVALID_ARG', `invalid model name '${name}', model name must not contain path traversal characters`);
  }
  return undefined;
}

/** Throws modelNameProblem's error (INVALID_ARG, 400). */
export function checkModelName(name: string): void {
  const problem = modelNameProblem(name);
  if (problem !== undefined) throw problem;
}
