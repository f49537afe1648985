#!/usr/bin/env node
// `npm test` after the build: every compiled test file under node --test
// (two at a time), then one line naming what was skipped for a missing
// program or package (test/integration/needs.ts writes them to the file in
// NODETRON_TEST_SKIPS). With NODETRON_FAIL_ON_SKIP=1 (.ci/run) such a skip
// fails the run, so CI never hides one. Arguments replace the file list.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');
const files = process.argv.length > 2 ? process.argv.slice(2) : ['unit', 'integration'].flatMap((dir) => {
  const d = path.join(root, 'dist', 'test', dir);
  return fs.readdirSync(d).filter((f) => f.endsWith('.test.js')).sort().map((f) => path.join(d, f));
});
const skips = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-test-skips-')), 'skips.txt');
fs.writeFileSync(skips, '');
const run = spawnSync(process.execPath, ['--test', '--test-concurrency=2', ...files], {
  stdio: 'inherit',
  env: { ...process.env, NODETRON_TEST_SKIPS: skips },
});
const lines = [...new Set(fs.readFileSync(skips, 'utf8').split('\n').filter((l) => l !== ''))];
fs.rmSync(path.dirname(skips), { recursive: true, force: true });
if (lines.length === 0) console.log('nodetron tests: nothing skipped for a missing program or package');
else console.log(`nodetron tests: skipped for a missing program or package: ${lines.join('; ')}`);
let code = run.status ?? 1;
if (lines.length > 0 && process.env.NODETRON_FAIL_ON_SKIP === '1') {
  console.log('NODETRON_FAIL_ON_SKIP=1: a test skipped for a missing package fails the run (install it, as .ci/run does)');
  code = code === 0 ? 1 : code;
}
process.exit(code);
