/**
 * Repository scanning: which model directories exist in which repository,
 * and which version directories a model has (protocol.md §3.4, §3.12).
 * A non-integer version folder is skipped as Triton does, but logged with a
 * warning that names it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { versionFolderFix } from './folder-findings';

export interface ModelLocation {
  name: string;
  repository: string;
  dir: string;
}

export interface ScanResult {
  models: Map<string, ModelLocation>;
  /** Names found in more than one repository: Triton refuses them. */
  duplicates: Map<string, string[]>;
  /** Entries of a repository that are not model folders, and why (for --log-verbose). */
  skipped: string[];
  /** Repositories that could not be listed: their models are unknown this time, not gone. */
  unreadable: string[];
}

export function scanRepositories(repositories: readonly string[]): ScanResult {
  const models = new Map<string, ModelLocation>();
  const duplicates = new Map<string, string[]>();
  const skipped: string[] = [];
  const unreadable: string[] = [];
  for (const repository of repositories) {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(repository, { withFileTypes: true });
    } catch {
      unreadable.push(repository); // reported by the caller (at start: repository-paths.ts; in a poll: repository-roots.ts)
      continue;
    }
    for (const e of entries) {
      if (!isDirectory(repository, e)) {
        skipped.push(`skipping '${e.name}' in ${repository}: a file, not a model folder (each model is a folder holding config.pbtxt and version folders)`);
        continue;
      }
      if (e.name.startsWith('.')) {
        skipped.push(`skipping '${e.name}' in ${repository}: hidden folders are not models`);
        continue;
      }
      const location = { name: e.name, repository, dir: path.join(repository, e.name) };
      const seen = models.get(e.name);
      if (seen) {
        duplicates.set(e.name, [...(duplicates.get(e.name) ?? [seen.repository]), repository]);
      } else {
        models.set(e.name, location);
      }
    }
  }
  for (const name of duplicates.keys()) models.delete(name);
  return { models, duplicates, skipped, unreadable };
}

function isDirectory(parent: string, e: fs.Dirent): boolean {
  if (e.isDirectory()) return true;
  if (!e.isSymbolicLink()) return false;
  try {
    return fs.statSync(path.join(parent, e.name)).isDirectory();
  } catch {
    return false;
  }
}

const NOT_VERSIONS = new Set(['warmup', 'initial_state', 'configs']);

export interface VersionScan {
  versions: number[];
  warnings: string[];
  /** Folders skipped because their name is not a plain integer. */
  ignored: string[];
}

/** Integer version directories of a model, ascending. */
export function scanVersions(modelDir: string): VersionScan {
  const versions: number[] = [];
  const warnings: string[] = [];
  const ignored: string[] = [];
  const model = path.basename(modelDir);
  let entries: fs.Dirent[] = [];
  try {
    entries = fs.readdirSync(modelDir, { withFileTypes: true });
  } catch {
    return { versions, warnings, ignored };
  }
  for (const e of entries) {
    if (!isDirectory(modelDir, e) || NOT_VERSIONS.has(e.name) || e.name.startsWith('.')) continue;
    if (!/^[0-9]+$/.test(e.name)) {
      ignored.push(e.name);
      warnings.push(`ignore version directory '${e.name}' which fails to convert to integral number. ${versionFolderFix(model, e.name)}`);
    } else if (e.name.length > 1 && e.name.startsWith('0')) {
      ignored.push(e.name);
      warnings.push(`ignore version directory '${e.name}' which contains leading zeros in its directory name. ${versionFolderFix(model, e.name)}`);
    } else {
      versions.push(Number(e.name));
    }
  }
  versions.sort((a, b) => a - b);
  ignored.sort();
  return { versions, warnings, ignored };
}

export interface VersionPolicyChoice {
  latest?: { num_versions: number };
  all?: unknown;
  specific?: { versions: number[] };
}

/** Versions to load under a policy; `missing` lists specific versions without a directory. */
export function selectVersions(available: readonly number[], policy: VersionPolicyChoice): { versions: number[]; missing: number[] } {
  if (policy.specific) {
    const wanted = [...new Set(policy.specific.versions)].sort((a, b) => a - b);
    return { versions: wanted.filter((v) => available.includes(v)), missing: wanted.filter((v) => !available.includes(v)) };
  }
  if (policy.all) return { versions: [...available], missing: [] };
  const n = Math.max(1, policy.latest?.num_versions ?? 1);
  return { versions: available.slice(-n), missing: [] };
}
