import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lookupModel } from '../../src/request/model-lookup';
import type { ServerSnapshot } from '../../src/request/server-snapshot';
import { ServerError } from '../../src/core/errors';

const snap: ServerSnapshot = {
  live: true,
  ready: true,
  exiting: false,
  models: {
    m: {
      name: 'm',
      labels: {},
      versions: [
        { version: 1, state: 'READY', reason: '' },
        { version: 2, state: 'READY', reason: '' },
        { version: 3, state: 'UNAVAILABLE', reason: 'Internal: boom' },
      ],
    },
    dead: { name: 'dead', labels: {}, versions: [{ version: 1, state: 'LOADING', reason: '' }] },
    sick: {
      name: 'sick',
      labels: {},
      versions: [
        { version: 1, state: 'READY', reason: '' },
        { version: 2, state: 'READY', reason: '', unready: "Stub process 'sick_0' is not healthy." },
      ],
    },
  },
};

const CASES: [string, string | undefined, number | [string, string]][] = [
  ['m', undefined, 2],
  ['m', '1', 1],
  ['m', '3', ['UNAVAILABLE', "Request for unknown model: 'm' version 3 is not at ready state"]],
  ['m', '9', ['NOT_FOUND', "Request for unknown model: 'm' version 9 is not found"]],
  ['x', undefined, ['NOT_FOUND', "Request for unknown model: 'x' is not found"]],
  ['dead', undefined, ['NOT_FOUND', "Request for unknown model: 'dead' has no available versions"]],
  ['toString', undefined, ['NOT_FOUND', "Request for unknown model: 'toString' is not found"]],
  // The newest READY version is chosen, then asked whether it can serve (Triton: no fallback to an older one).
  ['sick', undefined, ['UNAVAILABLE', "Request for unknown model: 'sick' version 2 is not at ready state: Stub process 'sick_0' is not healthy."]],
  ['sick', '2', ['UNAVAILABLE', "Request for unknown model: 'sick' version 2 is not at ready state: Stub process 'sick_0' is not healthy."]],
  ['sick', '1', 1],
];

for (const [name, version, want] of CASES) {
  test(`lookup ${name} ${version ?? '(latest)'}`, () => {
    if (typeof want === 'number') {
      assert.equal(lookupModel(snap, name, version).version, want);
    } else {
      assert.throws(
        () => lookupModel(snap, name, version),
        (e: unknown) => e instanceof ServerError && e.code === want[0] && e.message === want[1],
      );
    }
  });
}

test("lookup for 'loaded' (inference, metadata, BLS) takes a READY version whose instance is not ready; 'ready' does not", () => {
  assert.equal(lookupModel(snap, 'sick', undefined, 'loaded').version, 2);
  assert.equal(lookupModel(snap, 'sick', '2', 'loaded').version, 2);
  assert.throws(() => lookupModel(snap, 'sick', '2', 'ready'), /is not at ready state: Stub process 'sick_0' is not healthy\./);
  assert.throws(() => lookupModel(snap, 'm', '3', 'loaded'), /version 3 is not at ready state$/);
});
