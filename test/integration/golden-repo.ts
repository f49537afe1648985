/**
 * Builds the model repository of a golden case (test/golden/server/<case>,
 * test/golden/lint/<case>) in a temporary folder: `case.json`'s `copy`
 * ({ "<folder>": "<example model>" }, from model_repository/, the config's
 * name rewritten to the folder's), then `rename` ({ "<from>": "<to>" },
 * paths inside the repository), `remove` (paths), then the case's own
 * `repo/` folder on top.
 * `{repo}` and `{case}` in the case's texts stand for the two folders.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MODEL_REPOSITORY, REPO_ROOT } from './server-process';

export interface RepoSetup {
  copy?: Record<string, string>;
  rename?: Record<string, string>;
  /** Paths inside the repository removed after the renames. */
  remove?: string[];
}

export const GOLDEN_DIR = path.join(REPO_ROOT, 'test', 'golden');

/** Case folder names under test/golden/<kind>, sorted. */
export function goldenCases(kind: string): string[] {
  const dir = path.join(GOLDEN_DIR, kind);
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

export function readCase<T>(kind: string, name: string): T {
  return JSON.parse(fs.readFileSync(path.join(GOLDEN_DIR, kind, name, 'case.json'), 'utf8')) as T;
}

/** A fresh temporary repository for the case. */
export function buildCaseRepo(kind: string, name: string, setup: RepoSetup = {}): string {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), `nodetron-golden-${name}-`));
  for (const [folder, example] of Object.entries(setup.copy ?? {})) {
    const dest = path.join(repo, folder);
    fs.cpSync(path.join(MODEL_REPOSITORY, example), dest, { recursive: true });
    const config = path.join(dest, 'config.pbtxt');
    if (fs.existsSync(config)) {
      fs.writeFileSync(config, fs.readFileSync(config, 'utf8').replace(/^name: ".*"$/m, `name: "${path.basename(folder)}"`));
    }
  }
  for (const [from, to] of Object.entries(setup.rename ?? {})) fs.renameSync(path.join(repo, from), path.join(repo, to));
  for (const p of setup.remove ?? []) fs.rmSync(path.join(repo, p), { recursive: true, force: true });
  const overlay = path.join(GOLDEN_DIR, kind, name, 'repo');
  if (fs.existsSync(overlay)) fs.cpSync(overlay, repo, { recursive: true });
  return repo;
}

/** `{repo}` and `{case}` replaced, in strings anywhere inside a JSON value. */
export function fill<T>(value: T, vars: Record<string, string>): T {
  const text = JSON.stringify(value).replace(/\{(repo|case)\}/g, (m, k: string) => JSON.stringify(vars[k] ?? m).slice(1, -1));
  return JSON.parse(text) as T;
}
