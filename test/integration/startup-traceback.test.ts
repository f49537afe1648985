/**
 * A Python model whose model.py fails to import, at start (real stub): the
 * server exits 1 (--exit-on-error, Triton's default); the models table has
 * one line of reason for it; the Python traceback is in the log exactly once
 * (with the load-failure line), not also in the stub's own error line or
 * again below the table.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runToExit } from './server-process';

test('a failing model.py: one reason line in the table, its traceback once', async () => {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-traceback-'));
  try {
    fs.mkdirSync(path.join(repo, 'badpy', '1'), { recursive: true });
    fs.writeFileSync(
      path.join(repo, 'badpy', 'config.pbtxt'),
      'backend: "python"\ninput [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]\n',
    );
    fs.writeFileSync(
      path.join(repo, 'badpy', '1', 'model.py'),
      'import nodetron_missing_module_xyz\n\nclass TritonPythonModel:\n    def execute(self, requests):\n        return []\n',
    );
    const r = await runToExit([`--model-repository=${repo}`, '--http-port=0', '--allow-grpc=false', '--allow-metrics=false']);
    assert.equal(r.code, 1, r.output.slice(-3000));
    assert.equal(r.output.match(/badpy\/1\/model\.py\(1\): <module>/g)?.length, 1, `the traceback once:\n${r.output}`);
    assert.match(r.output, /failed to load 'badpy': Internal: ModuleNotFoundError: No module named 'nodetron_missing_module_xyz'/);
    assert.match(r.output, /\| badpy +\| 1 +\| UNAVAILABLE: Internal: ModuleNotFoundError: No module +\|/);
    assert.doesNotMatch(r.output, /Failed to initialize Python stub/);
  } finally {
    fs.rmSync(repo, { recursive: true, force: true });
  }
});
