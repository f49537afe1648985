/**
 * Golden tests for config validation: test/golden/config/<case>/config.pbtxt
 * must fail with exactly the one-line text in <case>/expected. The case
 * directory name is the model directory name; the pipeline is the loader's
 * (parse, backend resolution with no model files, normalise, validate) on a
 * machine without GPUs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { parseModelConfigText } from '../../src/repository/config/pbtxt';
import { resolveBackend } from '../../src/repository/config/backend-resolution';
import { normalizeConfig } from '../../src/repository/config/normalize';
import { validateConfig } from '../../src/repository/config/validate';
import { ServerError } from '../../src/core/errors';

/** Tests run from dist*\/test/unit, so find the repository root first. */
function repoRoot(): string {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${__dirname}`);
    dir = parent;
  }
  return dir;
}

const goldenDir = path.join(repoRoot(), 'test', 'golden', 'config');
const cases = fs
  .readdirSync(goldenDir, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();

function loadCase(name: string): void {
  const text = fs.readFileSync(path.join(goldenDir, name, 'config.pbtxt'), 'utf8');
  let config = parseModelConfigText(text, `${name}/config.pbtxt`);
  config = resolveBackend(config, [], name);
  config = normalizeConfig(config, { modelName: name, gpuCount: 0 });
  validateConfig(config, 0);
}

test('golden config cases exist', () => {
  assert.ok(cases.length >= 12, `only ${cases.length} cases in ${goldenDir}`);
});

for (const name of cases) {
  test(`golden config: ${name}`, () => {
    const expected = fs.readFileSync(path.join(goldenDir, name, 'expected'), 'utf8').trim();
    assert.throws(
      () => loadCase(name),
      (err: unknown) => {
        assert.ok(err instanceof ServerError, `not a ServerError: ${String(err)}`);
        assert.equal(err.message.trim(), expected);
        return true;
      },
    );
  });
}
