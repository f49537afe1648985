import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readyCheckVerdict } from '../../src/python-backend/readiness-checks';

const FAILED = "Model 'm_0' is not ready (user-defined check failed)";
const CASES: [string, Parameters<typeof readyCheckVerdict>[1], string | undefined][] = [
  ['True', { ready: true }, undefined],
  ['False', { ready: false }, `${FAILED}: is_ready() returned False`],
  ['an exception', { error: 'RuntimeError: offline\n\nAt:\n  model.py(9): is_ready\n' }, `${FAILED}: RuntimeError: offline\n\nAt:\n  model.py(9): is_ready`],
  ['a non-bool', { error: 'is_ready() must return a boolean value, got str' }, `${FAILED}: is_ready() must return a boolean value, got str`],
  ['no answer in 5 s', 'timeout', `${FAILED}: is_ready() did not return within 5 s`],
];

for (const [what, result, want] of CASES) {
  test(`is_ready() verdict: ${what}`, () => {
    assert.equal(readyCheckVerdict('m_0', result), want);
  });
}
