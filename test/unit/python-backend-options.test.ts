import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parsePythonBackendOptions } from '../../src/python-backend/backend-options';

const CASES: [string, Record<string, string>, number | RegExp][] = [
  ["the default stub start timeout is Triton's 30 s", {}, 30_000],
  ['stub-timeout-seconds=5', { 'stub-timeout-seconds': '5' }, 5000],
  ['stub-timeout-seconds=0 is refused', { 'stub-timeout-seconds': '0' }, /^stub-timeout-seconds must be greater than 0$/],
  [
    'stub-timeout-seconds=soon is refused',
    { 'stub-timeout-seconds': 'soon' },
    /^failed to parse python backend config 'stub-timeout-seconds': expected an integer, got 'soon'$/,
  ],
];

for (const [what, cfg, want] of CASES) {
  test(`python backend options: ${what}`, () => {
    if (typeof want === 'number') assert.equal(parsePythonBackendOptions(cfg).stubTimeoutMs, want);
    else assert.throws(() => parsePythonBackendOptions(cfg), { message: want });
  });
}
