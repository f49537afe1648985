/**
 * Golden tests of `nodetron lint` (the compiled CLI, run as a process): one
 * folder per case under test/golden/lint/ with `case.json` (and an optional
 * `repo/` overlay, golden-repo.ts): the arguments, the exit status and the
 * exact stdout, line by line; a line "..." stands for any lines (Python
 * tracebacks differ between Python versions).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { buildCaseRepo, fill, goldenCases, GOLDEN_DIR, readCase } from './golden-repo';
import type { RepoSetup } from './golden-repo';
import { REPO_ROOT } from './server-process';

interface LintCase {
  about: string;
  repo?: RepoSetup;
  args: string[];
  exit: number;
  stdout: string[];
}

const CLI = path.join(REPO_ROOT, 'dist/src/cli.js');

function runLint(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, 'lint', ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Whether `actual` lines match `expected`, where an expected "..." matches any run of lines. */
export function linesMatch(expected: readonly string[], actual: readonly string[]): boolean {
  if (expected.length === 0) return actual.length === 0;
  const [head, ...rest] = expected;
  if (head === '...') {
    for (let k = 0; k <= actual.length; k++) if (linesMatch(rest, actual.slice(k))) return true;
    return false;
  }
  return actual.length > 0 && actual[0] === head && linesMatch(rest, actual.slice(1));
}

const cases = goldenCases('lint');

test('golden lint cases exist', () => {
  assert.ok(cases.length >= 4, `only ${cases.length} cases in ${path.join(GOLDEN_DIR, 'lint')}`);
});

for (const name of cases) {
  const raw = readCase<LintCase>('lint', name);
  test(`golden lint: ${name}: ${raw.about}`, async () => {
    const repo = buildCaseRepo('lint', name, raw.repo);
    const c = fill(raw, { repo, case: path.join(GOLDEN_DIR, 'lint', name) });
    try {
      const r = await runLint(c.args);
      const actual = r.stdout.replace(/\n$/, '').split('\n');
      assert.ok(linesMatch(c.stdout, actual), `stdout:\n${r.stdout}\nexpected:\n${c.stdout.join('\n')}\nstderr:\n${r.stderr}`);
      assert.equal(r.code, c.exit, r.stderr);
    } finally {
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });
}
