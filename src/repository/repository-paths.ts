/**
 * The local --model-repository paths, checked before anything loads: a
 * missing, misspelt or unreadable folder stops the server (Triton: "failed
 * to stat file <path>") with a sentence that names the fix, and a poll that
 * finds it gone keeps its models serving (repository-roots.ts). Cloud roots
 * (s3://, as://, gs://) are read by repository-roots.ts; `nodetron lint`
 * reads local folders only and says so (`lintCloudRootText`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { ServerError } from '../core/errors';
import { cloudScheme } from './storage/object-store';
import { closestName } from '../core/spelling';

/** Why the local folder `repository` cannot serve as a model repository, or undefined when it can (or it is a cloud URL). */
export function repositoryPathProblem(repository: string, cwd = process.cwd()): ServerError | undefined {
  if (cloudScheme(repository) !== undefined) return undefined;
  const absolute = path.resolve(cwd, repository);
  const where = absolute === repository ? '' : ` (${absolute}, relative to ${cwd})`;
  let stat: fs.Stats;
  try {
    stat = fs.statSync(absolute);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR') {
      return new ServerError(
        'INTERNAL',
        `failed to stat file ${repository}. A part of the path is a file, not a folder: pass --model-repository the folder that holds one folder per model.`,
      );
    }
    if (code === 'EACCES') return unreadable(repository);
    const guess = nearbyFolder(absolute);
    const fix = guess === undefined ? '' : ` Did you mean --model-repository=${guess}?`;
    return new ServerError(
      'INTERNAL',
      `failed to stat file ${repository}. No such folder${where}: check the spelling of --model-repository, which names the folder holding one folder per model.${fix}`,
    );
  }
  if (!stat.isDirectory()) return notAFolder(repository);
  try {
    fs.readdirSync(absolute);
  } catch {
    return unreadable(repository);
  }
  return undefined;
}

/** Throws the first path's problem (the server does not start without every repository). */
export function checkRepositoryPaths(repositories: readonly string[]): void {
  for (const r of repositories) {
    const problem = repositoryPathProblem(r);
    if (problem !== undefined) throw problem;
  }
}

function notAFolder(repository: string): ServerError {
  return new ServerError(
    'INTERNAL',
    `model repository '${repository}' is a file, not a folder: pass --model-repository the folder that holds one folder per model (each with its config.pbtxt and version folders 1/, 2/, ...).`,
  );
}

function unreadable(repository: string): ServerError {
  const uid = typeof process.getuid === 'function' ? ` (uid ${process.getuid()})` : '';
  return new ServerError(
    'INTERNAL',
    `failed to open directory ${repository}: permission denied. Make the folder readable by the user running the server${uid}, or pass another --model-repository.`,
  );
}

/** A folder beside the missing one whose name is a near miss (`model_repositry` → `model_repository`). */
function nearbyFolder(absolute: string): string | undefined {
  const parent = path.dirname(absolute);
  let names: string[];
  try {
    names = fs
      .readdirSync(parent, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
  } catch {
    return undefined;
  }
  const near = closestName(path.basename(absolute), names);
  return near === undefined ? undefined : path.join(parent, near);
}

/** `nodetron lint` on a cloud root: it lints local folders only. */
export function lintCloudRootText(repository: string): string | undefined {
  const scheme = cloudScheme(repository);
  if (scheme === undefined) return undefined;
  return (
    `nodetron lint reads local folders only, and '${repository}' is in cloud storage (${scheme}://): ` +
    `copy it to a local folder (for example with ${cloudCopyCommand(scheme, repository)}) and lint that folder.`
  );
}

function cloudCopyCommand(scheme: string, repository: string): string {
  switch (scheme) {
    case 's3':
      return `'aws s3 sync ${repository} ./models'`;
    case 'gs':
      return `'gsutil -m rsync -r ${repository} ./models'`;
    default:
      return "'azcopy copy <container URL> ./models --recursive'";
  }
}
