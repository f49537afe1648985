/**
 * Golden tests for the command line, through the real CLI: each
 * test/golden/cli/<case>/ holds `args` (one argument a line; `$REPO` is the
 * example model repository), the exact output (`expected`, stdout and stderr
 * together) and the exit `status`. These cases stop before any model loads.
 * GOLDEN_UPDATE=1 rewrites `expected` from what the CLI prints now.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { MODEL_REPOSITORY, REPO_ROOT, runToExit } from './server-process';

const dir = path.join(REPO_ROOT, 'test', 'golden', 'cli');
const cases = fs
  .readdirSync(dir, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();

for (const name of cases) {
  test(`golden cli: ${name}`, async () => {
    const read = (f: string): string => fs.readFileSync(path.join(dir, name, f), 'utf8');
    const args = read('args')
      .split('\n')
      .filter((a) => a !== '')
      .map((a) => a.replace('$REPO', MODEL_REPOSITORY));
    const r = await runToExit(args);
    if (process.env.GOLDEN_UPDATE === '1') fs.writeFileSync(path.join(dir, name, 'expected'), r.output);
    assert.equal(r.output, read('expected'));
    assert.equal(r.code, Number(read('status').trim()));
  });
}
