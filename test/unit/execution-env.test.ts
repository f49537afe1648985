/**
 * EXECUTION_ENV_PATH resolution: the activated environment variables, the
 * model-directory variable and its escape check, and Triton's text for an
 * environment without bin/activate.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { activatedEnv, stubRuntime } from '../../src/python-backend/execution-env';
import type { ModelConfig } from '../../src/core/model-config';

const withEnvPath = (p: string | undefined): ModelConfig =>
  ({ parameters: p === undefined ? {} : { EXECUTION_ENV_PATH: { string_value: p } } }) as unknown as ModelConfig;

test('activatedEnv sets what activate would, drops PYTHONHOME', () => {
  const env = activatedEnv('/e/env', { PATH: '/usr/bin', PYTHONHOME: '/x', LD_LIBRARY_PATH: '', KEEP: '1' });
  assert.equal(env['VIRTUAL_ENV'], '/e/env');
  assert.equal(env['VIRTUAL_ENV_PROMPT'], '(env) ');
  assert.equal(env['PATH'], '/e/env/bin:/usr/bin');
  assert.equal(env['LD_LIBRARY_PATH'], '/e/env/lib');
  assert.equal(env['PYTHONHOME'], undefined);
  assert.equal(env['KEEP'], '1');
});

test('stubRuntime: cases', async (t) => {
  const modelDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-envtest-'));
  t.after(() => fs.rmSync(modelDir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(modelDir, 'noactivate', 'bin'), { recursive: true });
  fs.mkdirSync(path.join(modelDir, 'good', 'bin'), { recursive: true });
  fs.writeFileSync(path.join(modelDir, 'good', 'bin', 'activate'), '');
  fs.writeFileSync(path.join(modelDir, 'good', 'bin', 'python3'), '');
  const cases: { path: string | undefined; interpreter?: string; error?: string | RegExp }[] = [
    { path: undefined, interpreter: 'python3' },
    { path: '', interpreter: 'python3' },
    { path: '$$TRITON_MODEL_DIRECTORY/good', interpreter: path.join(modelDir, 'good', 'bin', 'python3') },
    { path: path.join(modelDir, 'good'), interpreter: path.join(modelDir, 'good', 'bin', 'python3') },
    { path: '$$TRITON_MODEL_DIRECTORY/../elsewhere', error: /points outside the model directory/ },
    { path: '$$TRITON_MODEL_DIRECTORY/missing', error: /EXECUTION_ENV_PATH '.*missing' does not exist/ },
    {
      path: '$$TRITON_MODEL_DIRECTORY/noactivate',
      error: `Path ${modelDir}/noactivate/bin/activate does not exist. The Python environment should contain an 'activate' script.`,
    },
  ];
  for (const c of cases) {
    if (c.error !== undefined) {
      await assert.rejects(
        stubRuntime(withEnvPath(c.path), modelDir, 'python3'),
        (e: Error) => (typeof c.error === 'string' ? e.message === c.error : c.error!.test(e.message)) || assert.fail(e.message),
      );
    } else {
      const r = await stubRuntime(withEnvPath(c.path), modelDir, 'python3');
      assert.equal(r.interpreter, c.interpreter, String(c.path));
    }
  }
});
