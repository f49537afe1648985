/**
 * Tests that need a program or package the machine may lack skip, naming
 * it and how to install it, instead of failing. Each such skip is also
 * written to the file NODETRON_TEST_SKIPS names (scripts/test.js sets it),
 * so `npm test` ends with one line listing them and `.ci/run`
 * (NODETRON_FAIL_ON_SKIP=1) fails when one was skipped: CI never hides one.
 */
import { after as nodeAfter, before as nodeBefore, test as nodeTest, type TestContext, type TestOptions } from 'node:test';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** Why a test is skipped, or false when it runs. */
export type Skip = string | false;

/** The modules `python` cannot import, each with the package that provides it. */
export function missingPython(python: string, modules: { module: string; pkg: string }[]): string[] {
  return modules.filter(({ module }) => spawnSync(python, ['-c', `import ${module}`], { stdio: 'ignore' }).status !== 0).map((m) => m.pkg);
}

/**
 * The skip reason when some of `modules` are missing from `python`
 * (recorded, see above), else false. `install` is the command that installs them.
 */
export function needsPython(python: string, modules: { module: string; pkg: string }[], install: string): Skip {
  const missing = missingPython(python, modules);
  return missing.length === 0 ? false : recordSkip(`${python} lacks ${missing.join(', ')} (${install})`);
}

/** Record a skip for a missing program or package; returns the reason. */
export function recordSkip(reason: string): string {
  const file = process.env.NODETRON_TEST_SKIPS;
  const test = path.basename(process.argv[1] ?? 'test');
  if (file !== undefined && file !== '') fs.appendFileSync(file, `${test}: ${reason}\n`);
  return reason;
}

type TestFn = (t: TestContext) => void | Promise<void>;

/**
 * A file's before/after/test that all skip with `skip` (its hooks do not run):
 * `const { before, after, test } = gatedBy(needsPython(...))`.
 */
export function gatedBy(skip: Skip): {
  before: (fn: () => unknown) => void;
  after: (fn: () => unknown) => void;
  test: (name: string, a: TestOptions | TestFn, b?: TestFn) => void;
} {
  return {
    before: (fn) =>
      nodeBefore(async () => {
        if (skip === false) await fn();
      }),
    after: (fn) =>
      nodeAfter(async () => {
        if (skip === false) await fn();
      }),
    test: (name, a, b) => {
      const opts: TestOptions = typeof a === 'function' ? {} : a;
      const fn = typeof a === 'function' ? a : b!;
      void nodeTest(name, { ...opts, skip: skip === false ? opts.skip : skip }, fn);
    },
  };
}
