import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LintUsageError, parseLintArgs } from '../../src/lint/lint-cli';

const OK: [string, string[], object][] = [
  ['positional', ['models'], { repositories: ['models'], modelConfigName: '', autoComplete: true, backendConfig: {} }],
  [
    'flags as tritonserver spells them',
    ['--model-repository=a', '--model-repository', 'b', '--model-config-name=prod', '--disable-auto-complete-config'],
    { repositories: ['a', 'b'], modelConfigName: 'prod', autoComplete: false, backendConfig: {} },
  ],
  [
    'backend config',
    ['m', '--backend-config=python,shm-default-byte-size=1048576', '--backend-config=x=1'],
    { repositories: ['m'], modelConfigName: '', autoComplete: true, backendConfig: { python: { 'shm-default-byte-size': '1048576' }, '': { x: '1' } } },
  ],
];
for (const [name, argv, want] of OK) {
  test(`parseLintArgs: ${name}`, () => assert.deepEqual(parseLintArgs(argv), want));
}

const BAD: [string, string[], string][] = [
  ['nothing', [], 'name at least one model repository'],
  ['unknown flag', ['m', '--strict'], "unknown option '--strict'"],
  ['missing value', ['--model-repository'], '--model-repository needs a value'],
  ['bad backend config', ['m', '--backend-config=python'], "--backend-config takes <backend>,<setting>=<value>, got 'python'"],
];
for (const [name, argv, message] of BAD) {
  test(`parseLintArgs refuses: ${name}`, () =>
    assert.throws(
      () => parseLintArgs(argv),
      (e: unknown) => e instanceof LintUsageError && e.message === message,
    ));
}
