/**
 * A load request as every frontend hands it to the repository API, whatever
 * its wire form: an optional JSON config override and override files (raw
 * bytes, keyed by their path relative to the model folder, e.g.
 * `1/model.onnx`). Override files become a temporary model folder; a path
 * that would escape that folder is refused (protocol.md §1.10).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ServerError } from '../core/errors';
import { checkModelName } from '../request/model-name';
import type { ModelConfig } from '../core/model-config';

export interface OverrideFile {
  /** Path relative to the model folder, as given after `file:`. */
  path: string;
  data: Uint8Array;
}

export interface LoadRequest {
  /** JSON text of a ModelConfig (the `config` parameter). */
  config?: string;
  files: OverrideFile[];
}

/** What a load asked for beyond the repository's own files (the manager's form of a LoadRequest). */
export interface LoadOverride {
  config?: ModelConfig;
  /** A temporary model folder holding `file:` overrides (writeOverrideDir). */
  dir?: string;
}

/** Errors of one load, each as Triton words it after `load failed for model '<m>': `. */
export interface LoadOutcome {
  errors: string[];
}

export interface UnloadRequest {
  unloadDependents: boolean;
}

/** The model name checks Triton makes before a load or unload does anything else (texts of §1.10). */
export function checkModelNameToLoad(name: string): void {
  if (name.trim() === '') {
    throw new ServerError('INVALID_ARG', 'Model name cannot be empty. Please enter a valid name to deploy.');
  }
  checkModelName(name);
}

/** `file:` parameters need a `config` parameter next to them. */
export function checkLoadRequest(req: LoadRequest): void {
  if (req.files.length > 0 && req.config === undefined) {
    throw new ServerError('INVALID_ARG', "Load parameter 'config' must be specified for model file override");
  }
  for (const f of req.files) safeRelative(f.path);
}

/** The normalized relative path, or INVALID_ARG when it is absolute or leaves the model folder. */
export function safeRelative(p: string): string {
  const norm = path.posix.normalize(p.replace(/\\/g, '/'));
  if (p === '' || path.posix.isAbsolute(norm) || norm === '..' || norm.startsWith('../') || norm === '.') {
    throw new ServerError('INVALID_ARG', `Invalid file parameter 'file:${p}': the path must stay inside the model directory`);
  }
  return norm;
}

/**
 * Write override files into a fresh `<tmp>/<model>` folder; returns that
 * folder. A file system error becomes a text that names the file parameter
 * (or the temporary directory) and what to do, never the raw Node error or
 * the temporary path; nothing is left behind.
 */
export function writeOverrideDir(model: string, files: readonly OverrideFile[]): string {
  let root: string;
  try {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-override-'));
  } catch (err) {
    throw overrideWriteError(model, undefined, err);
  }
  const dir = path.join(root, model);
  let current: OverrideFile | undefined;
  try {
    fs.mkdirSync(dir);
    for (const f of files) {
      current = f;
      const target = path.join(dir, safeRelative(f.path));
      // Belt and braces: the resolved target must still be under dir.
      if (!target.startsWith(dir + path.sep)) {
        throw new ServerError('INVALID_ARG', `Invalid file parameter 'file:${f.path}': the path must stay inside the model directory`);
      }
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, f.data);
    }
    return dir;
  } catch (err) {
    fs.rmSync(root, { recursive: true, force: true });
    if (err instanceof ServerError) throw err;
    throw overrideWriteError(model, current, err);
  }
}

/** What a failed write of override files tells the client (errno → cause and remedy). */
export function overrideWriteError(model: string, file: OverrideFile | undefined, err: unknown): ServerError {
  const code = (err as NodeJS.ErrnoException).code ?? 'unknown error';
  const total = file === undefined ? 0 : file.data.byteLength;
  if (code === 'ENAMETOOLONG' && file !== undefined) {
    return new ServerError(
      'INVALID_ARG',
      `Invalid file parameter 'file:${file.path.length > 80 ? `${file.path.slice(0, 80)}...` : file.path}': a file or folder name in it is longer than the file system allows (255 bytes)`,
    );
  }
  if ((code === 'ENAMETOOLONG' || code === 'ENOTDIR' || code === 'EEXIST' || code === 'EISDIR') && file !== undefined) {
    return new ServerError(
      'INVALID_ARG',
      `Invalid file parameter 'file:${file.path}': it cannot be written as a file of the model folder (${code}); check that no other file parameter uses the same path as a folder`,
    );
  }
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new ServerError(
      'INTERNAL',
      `failed to load '${model}': no space left in the temporary directory for its override files${total > 0 ? ` (${total} bytes)` : ''}; free space there or point TMPDIR at a larger disk`,
    );
  }
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return new ServerError(
      'INTERNAL',
      `failed to load '${model}': the server cannot write its override files to the temporary directory (${code}); point TMPDIR at a writable folder`,
    );
  }
  return new ServerError('INTERNAL', `failed to load '${model}': the server could not write its override files (${code})`);
}

/** Remove a folder made by writeOverrideDir (its parent temp root included). */
export function removeOverrideDir(dir: string): void {
  fs.rmSync(path.dirname(dir), { recursive: true, force: true });
}
