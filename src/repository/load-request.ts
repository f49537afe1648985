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

/** Write override files into a fresh `<tmp>/<model>` folder; returns that folder. */
export function writeOverrideDir(model: string, files: readonly OverrideFile[]): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-override-'));
  const dir = path.join(root, model);
  fs.mkdirSync(dir);
  for (const f of files) {
    const target = path.join(dir, safeRelative(f.path));
    // Belt and braces: the resolved target must still be under dir.
    if (!target.startsWith(dir + path.sep)) {
      throw new ServerError('INVALID_ARG', `Invalid file parameter 'file:${f.path}': the path must stay inside the model directory`);
    }
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, f.data);
  }
  return dir;
}

/** Remove a folder made by writeOverrideDir (its parent temp root included). */
export function removeOverrideDir(dir: string): void {
  fs.rmSync(path.dirname(dir), { recursive: true, force: true });
}
