/**
 * The registry views over plain records: strict readiness (allReady), the
 * repository index's reason and the snapshot's version views, for versions
 * that are READY but whose instance cannot serve (`unready`).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allReady, indexEntries, snapshotModels } from '../../src/repository/model-record';
import type { ModelRecord, VersionRecord } from '../../src/repository/model-record';
import type { ModelState } from '../../src/core/model-state';

function record(
  name: string,
  versions: { version: number; state: ModelState; reason?: string; unready?: string; note?: string }[],
  wanted = true,
): ModelRecord<VersionRecord> {
  return {
    name,
    location: { name, repository: '/r', dir: `/r/${name}` },
    versions: new Map(
      versions.map((v) => [v.version, { version: v.version, readiness: { state: v.state, reason: v.reason ?? '' }, unready: v.unready, note: v.note }]),
    ),
    wanted,
  };
}

const records = (...r: ModelRecord<VersionRecord>[]): Map<string, ModelRecord<VersionRecord>> => new Map(r.map((m) => [m.name, m]));

const READY_CASES: [string, ModelRecord<VersionRecord>[], boolean][] = [
  ['every version READY', [record('a', [{ version: 1, state: 'READY' }])], true],
  ['a READY version whose instance is not ready', [record('a', [{ version: 1, state: 'READY', unready: 'dead stub' }])], false],
  ['an unloaded version does not count', [record('a', [{ version: 1, state: 'UNAVAILABLE', reason: 'unloaded' }])], true],
  ['a failed version', [record('a', [{ version: 1, state: 'UNAVAILABLE', reason: 'Internal: boom' }])], false],
  ['an unwanted model does not count', [record('a', [{ version: 1, state: 'READY', unready: 'dead stub' }], false)], true],
];

for (const [what, recs, want] of READY_CASES) {
  test(`allReady: ${what} → ${want}`, () => {
    assert.equal(allReady(records(...recs)), want);
  });
}

test('the index shows a READY version whose instance is not ready with the reason; the snapshot view carries it', () => {
  const recs = records(
    record('sick', [{ version: 1, state: 'READY', unready: "Stub process 'sick_0' is not healthy." }]),
    record('fine', [{ version: 1, state: 'READY', note: 'Internal: the last reload failed' }]),
  );
  assert.deepEqual(indexEntries(recs, ['sick', 'fine'], [], false), [
    { name: 'fine', version: '1', state: 'READY', reason: 'Internal: the last reload failed' },
    { name: 'sick', version: '1', state: 'READY', reason: "Stub process 'sick_0' is not healthy." },
  ]);
  const views = snapshotModels(recs);
  assert.deepEqual(views['sick']!.versions, [{ version: 1, state: 'READY', reason: '', unready: "Stub process 'sick_0' is not healthy." }]);
  assert.deepEqual(views['fine']!.versions, [{ version: 1, state: 'READY', reason: '' }]);
});

const LOADING_CASES: [string, Partial<ModelRecord<VersionRecord>>, object[]][] = [
  ['its config is being read (no version yet)', { configuring: true }, [{ name: 'm', state: 'LOADING' }]],
  ['a slow step runs', { preparing: 'building environment' }, [{ name: 'm', state: 'LOADING', reason: 'building environment' }]],
  ['both', { configuring: true, preparing: 'building environment' }, [{ name: 'm', state: 'LOADING', reason: 'building environment' }]],
  ['neither: still listed, by its name', {}, [{ name: 'm' }]],
];

for (const [what, extra, want] of LOADING_CASES) {
  test(`the index while a first load has no version yet: ${what}`, () => {
    assert.deepEqual(indexEntries(records({ ...record('m', []), ...extra }), [], [], false), want);
    assert.deepEqual(indexEntries(records({ ...record('m', []), ...extra }), [], [], true), [], 'not in the ready-only index');
  });
}
