import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ModelConfig } from '../../src/core/model-config';
import { unloadDependents } from '../../src/repository/dependents';
import type { ModelRecord as LiveRecord, VersionRecord } from '../../src/repository/model-record';

type ModelRecord = LiveRecord<VersionRecord>;

/** A record: `steps` makes it an ensemble; `ready: false` = unloaded (or failed). */
function record(name: string, steps: string[] = [], ready = true): ModelRecord {
  const config = (steps.length > 0 ? { name, ensemble_scheduling: { step: steps.map((model_name) => ({ model_name })) } } : { name }) as unknown as ModelConfig;
  return {
    name,
    location: { name, repository: '/r', dir: `/r/${name}` },
    prepared: { config } as ModelRecord['prepared'],
    versions: new Map([[1, { version: 1, readiness: ready ? { state: 'READY', reason: '' } : { state: 'UNAVAILABLE', reason: 'unloaded' } }]]),
    wanted: ready,
  };
}

function models(...records: ModelRecord[]): Map<string, ModelRecord> {
  return new Map(records.map((r) => [r.name, r]));
}

const cases: { what: string; models: Map<string, ModelRecord>; unload: string; along: string[] }[] = [
  { what: 'a plain model nobody uses', models: models(record('a'), record('b')), unload: 'a', along: [] },
  { what: 'the ensemble using it', models: models(record('simple'), record('ens', ['simple'])), unload: 'simple', along: ['ens'] },
  {
    what: 'ensembles through other ensembles',
    models: models(record('m'), record('e1', ['m']), record('e2', ['e1', 'x']), record('x')),
    unload: 'm',
    along: ['e1', 'e2'],
  },
  { what: 'an unloaded ensemble is not counted', models: models(record('m'), record('e', ['m'], false)), unload: 'm', along: [] },
  { what: "an ensemble's composing models", models: models(record('simple'), record('ens', ['simple'])), unload: 'ens', along: ['simple'] },
  {
    what: 'a composing model another loaded ensemble uses stays',
    models: models(record('m'), record('n'), record('e1', ['m', 'n']), record('e2', ['m'])),
    unload: 'e1',
    along: ['n'],
  },
  {
    what: 'nested composing models',
    models: models(record('m'), record('inner', ['m']), record('outer', ['inner'])),
    unload: 'outer',
    along: ['inner', 'm'],
  },
  {
    what: 'a composing model used by an ensemble that stays because of a shared model',
    models: models(record('m'), record('k'), record('inner', ['m']), record('outer', ['inner', 'k']), record('other', ['inner'])),
    unload: 'outer',
    along: ['k'],
  },
  { what: 'an unknown model', models: models(record('a')), unload: 'nope', along: [] },
];

for (const c of cases) {
  test(`unload_dependents: ${c.what}`, () => {
    assert.deepEqual(unloadDependents(c.models, c.unload), c.along);
  });
}
