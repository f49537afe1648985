import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { scanRepositories, scanVersions, selectVersions } from '../../src/repository/scan';
import { transition } from '../../src/core/model-state';

test('scanVersions keeps integer folders, warns about the others by name', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scan-'));
  for (const d of ['1', '10', '2', 'v3', '007', 'configs', 'warmup']) fs.mkdirSync(path.join(dir, d));
  fs.writeFileSync(path.join(dir, '5'), 'a file, not a version');
  const r = scanVersions(dir);
  const m = path.basename(dir);
  assert.deepEqual(r.versions, [1, 2, 10]);
  assert.deepEqual(r.ignored, ['007', 'v3']);
  assert.deepEqual(r.warnings.sort(), [
    `ignore version directory '007' which contains leading zeros in its directory name. Model '${m}' loads only version folders named by an integer (1/, 2/, ...): rename 007 to 7 (${m}/7/).`,
    `ignore version directory 'v3' which fails to convert to integral number. Model '${m}' loads only version folders named by an integer (1/, 2/, ...): rename v3 to 3 (${m}/3/).`,
  ]);
});

const POLICIES: [string, object, number[], number[]][] = [
  ['latest 1', { latest: { num_versions: 1 } }, [3], []],
  ['latest 2', { latest: { num_versions: 2 } }, [2, 3], []],
  ['all', { all: {} }, [1, 2, 3], []],
  ['specific', { specific: { versions: [3, 1, 7] } }, [1, 3], [7]],
];
for (const [name, policy, versions, missing] of POLICIES) {
  test(`selectVersions ${name}`, () => {
    assert.deepEqual(selectVersions([1, 2, 3], policy), { versions, missing });
  });
}

test('a model in two repositories is a duplicate and is not loaded', () => {
  const a = fs.mkdtempSync(path.join(os.tmpdir(), 'ra-'));
  const b = fs.mkdtempSync(path.join(os.tmpdir(), 'rb-'));
  fs.mkdirSync(path.join(a, 'm'));
  fs.mkdirSync(path.join(b, 'm'));
  fs.mkdirSync(path.join(b, 'n'));
  const r = scanRepositories([a, b]);
  assert.deepEqual([...r.models.keys()], ['n']);
  assert.deepEqual(r.duplicates.get('m'), [a, b]);
});

const MOVES: [string, string, boolean][] = [
  ['UNAVAILABLE', 'LOADING', true],
  ['LOADING', 'READY', true],
  ['LOADING', 'UNAVAILABLE', true],
  ['READY', 'UNLOADING', true],
  ['UNLOADING', 'UNAVAILABLE', true],
  ['UNAVAILABLE', 'READY', false],
  ['READY', 'LOADING', false],
];
for (const [from, to, ok] of MOVES) {
  test(`transition ${from} -> ${to} ${ok ? 'allowed' : 'is an internal error'}`, () => {
    const cur = { state: from as 'READY', reason: '' };
    if (ok) assert.equal(transition(cur, to as 'READY', 'r', 'm').state, to);
    else assert.throws(() => transition(cur, to as 'READY', 'r', 'm'), new RegExp(`illegal state transition for m: ${from} -> ${to}`));
  });
}
