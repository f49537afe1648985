import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pollPlan } from '../../src/repository/poll-plan';
import type { ModelRecord, VersionRecord } from '../../src/repository/model-record';
import type { ScanResult } from '../../src/repository/scan';

const loc = (name: string, repository = '/r') => ({ name, repository, dir: `${repository}/${name}` });
const scanOf = (names: string[], duplicates: string[] = [], unreadable: string[] = []): ScanResult => ({
  models: new Map(names.map((n) => [n, loc(n)])),
  duplicates: new Map(duplicates.map((d) => [d, ['/r', '/s']])),
  skipped: [],
  unreadable,
});
const record = (name: string, applied: string, wanted = true, repository = '/r'): ModelRecord<VersionRecord> => ({
  name,
  location: loc(name, repository),
  versions: new Map(),
  applied,
  wanted,
});
const prints: Record<string, string> = { '/r/a': 'a1', '/r/b': 'b2', '/r/c': 'c1' };

// [case, scan, records, unsettled dirs, unreadable roots, apply, remove]
const CASES: [string, ScanResult, ModelRecord<VersionRecord>[], string[], string[], string[], string[]][] = [
  ['unchanged models stay', scanOf(['a']), [record('a', 'a1')], [], [], [], []],
  ['a changed model reloads', scanOf(['a', 'b']), [record('a', 'a1'), record('b', 'b1')], [], [], ['b'], []],
  ['a new model loads', scanOf(['a', 'c']), [record('a', 'a1')], [], [], ['c'], []],
  ['not before its folder settled', scanOf(['b', 'c']), [record('b', 'b1')], ['/r/b', '/r/c'], [], [], []],
  ['an unloaded model that is still there loads again', scanOf(['a']), [record('a', 'a1', false)], [], [], ['a'], []],
  ['a model gone from its root unloads', scanOf(['a']), [record('a', 'a1'), record('b', 'b2')], [], [], [], ['b']],
  ['not when its root could not be read before the scan', scanOf(['a']), [record('a', 'a1'), record('g', 'g1', true, '/gone')], [], ['/gone'], [], []],
  ['nor when the scan could not read it', scanOf(['a'], [], ['/gone']), [record('a', 'a1'), record('g', 'g1', true, '/gone')], [], [], [], []],
  ['a name now in two roots is not unloaded by the poll', scanOf(['a'], ['b']), [record('a', 'a1'), record('b', 'b2')], [], [], [], []],
  ['an unwanted model that left is not unloaded again', scanOf([]), [record('a', 'a1', false)], [], [], [], []],
];
for (const [name, scan, records, unsettled, unreadable, apply, remove] of CASES) {
  test(`pollPlan: ${name}`, () => {
    const plan = pollPlan(
      scan,
      new Map(records.map((r) => [r.name, r])),
      (d) => !unsettled.includes(d),
      new Set(unreadable),
      (d) => prints[d] ?? 'new',
    );
    assert.deepEqual(
      plan.apply.map((l) => l.name),
      apply,
    );
    assert.deepEqual(
      plan.remove.map((r) => r.name),
      remove,
    );
  });
}
