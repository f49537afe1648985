/**
 * Version resolution at enqueue (routeRequest), table-driven over live
 * version lifecycles in every state: which version runs a request (written
 * back into it), or which Triton error answers it, exactly once, without
 * reaching any instance. The version a frontend guessed from its snapshot
 * counts only when the client named it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../src/logging/logger';
import { VersionLifecycle } from '../../src/repository/model-lifecycle';
import type { LoadedVersion } from '../../src/repository/model-loader';
import { ServerError } from '../../src/core/errors';
import type { InferRequest } from '../../src/core/request';
import { routeRequest } from '../../src/repository/version-resolution';
import type { VersionedModel } from '../../src/repository/version-resolution';
import { DefaultScheduler } from '../../src/scheduler/default-scheduler';
import { FakeInstance, Recorder, request } from './scheduler-test-kit';

const hooks = {
  changed: () => undefined,
  gone: () => undefined,
  log: createLogger({ verbose: 0, info: true, warning: true, error: true, format: 'default', sink: () => undefined }),
};

type Target = 'READY' | 'LOADING' | 'UNLOADING' | 'FAILED' | 'UNLOADED';

/** A version of `model` driven to `target`; its instance is returned so a test can see what reached it. */
async function version(model: string, n: number, target: Target): Promise<{ v: VersionLifecycle; instance: FakeInstance }> {
  const instance = new FakeInstance(`${model}_${n}`);
  const loaded: LoadedVersion = { instances: [instance], scheduler: new DefaultScheduler(model, [instance]) };
  const v = new VersionLifecycle(model, n, hooks);
  if (target === 'LOADING') {
    void v.load(() => new Promise<LoadedVersion>(() => undefined)); // a build that never ends
  } else if (target === 'FAILED') {
    await v.load(async () => {
      throw new ServerError('INTERNAL', 'boom');
    });
  } else {
    await v.load(async () => loaded);
    if (target === 'UNLOADING') {
      v.admit({ ...request('keeps-it-draining'), model, version: n }, () => undefined);
      void v.retire();
    } else if (target === 'UNLOADED') {
      await v.retire();
    }
  }
  assert.equal(v.state, { READY: 'READY', LOADING: 'LOADING', UNLOADING: 'UNLOADING', FAILED: 'UNAVAILABLE', UNLOADED: 'UNAVAILABLE' }[target]);
  return { v, instance };
}

/** m: 1 READY, 2 READY, 3 failed, 4 UNLOADING, 5 LOADING; gone: 1 unloaded; empty: no version. */
async function registry(): Promise<{ models: Map<string, VersionedModel>; instances: Map<string, FakeInstance> }> {
  const instances = new Map<string, FakeInstance>();
  const models = new Map<string, VersionedModel>();
  const states: [string, number, Target][] = [
    ['m', 1, 'READY'],
    ['m', 2, 'READY'],
    ['m', 3, 'FAILED'],
    ['m', 4, 'UNLOADING'],
    ['m', 5, 'LOADING'],
    ['gone', 1, 'UNLOADED'],
  ];
  for (const [model, n, target] of states) {
    const { v, instance } = await version(model, n, target);
    const versions = (models.get(model)?.versions ?? new Map<number, VersionLifecycle>()) as Map<number, VersionLifecycle>;
    versions.set(n, v);
    models.set(model, { versions });
    instances.set(`${model}:${n}`, instance);
  }
  models.set('empty', { versions: new Map() });
  return { models, instances };
}

const NR = (m: string, v: number): [string, string] => ['UNAVAILABLE', `Request for unknown model: '${m}' version ${v} is not at ready state`];

/** [model, version the frontend sent, latest, the version that runs it | [code, message]] */
const CASES: [string, number, boolean, number | [string, string]][] = [
  ['m', 1, false, 1],
  ['m', 2, false, 2],
  ['m', 3, false, NR('m', 3)],
  ['m', 4, false, NR('m', 4)],
  ['m', 5, false, NR('m', 5)],
  ['m', 9, false, ['NOT_FOUND', "Request for unknown model: 'm' version 9 is not found"]],
  // latest: the frontend's guess does not count, the newest READY version now does
  ['m', 4, true, 2],
  ['m', 1, true, 2],
  ['m', 9, true, 2],
  ['gone', 1, false, NR('gone', 1)],
  ['gone', 1, true, ['NOT_FOUND', "Request for unknown model: 'gone' has no available versions"]],
  ['empty', 1, true, ['NOT_FOUND', "Request for unknown model: 'empty' has no available versions"]],
  ['nobody', 1, false, ['NOT_FOUND', "Request for unknown model: 'nobody' is not found"]],
  ['nobody', 1, true, ['NOT_FOUND', "Request for unknown model: 'nobody' is not found"]],
];

for (const [model, sent, latest, want] of CASES) {
  test(`route ${model} version ${sent}${latest ? ' (latest)' : ''} → ${typeof want === 'number' ? `version ${want}` : want[1]}`, async () => {
    const { models, instances } = await registry();
    const rec = new Recorder();
    const r: InferRequest = { ...request('r'), model, version: sent, latest };
    const running = new Map([...instances].map(([k, i]) => [k, i.executions.length]));
    routeRequest(models, r, rec.respond('r'));
    const reached = [...instances].filter(([k, i]) => i.executions.length > running.get(k)!).map(([k]) => k);
    if (typeof want === 'number') {
      assert.equal(r.version, want, 'the chosen version is written into the request');
      assert.deepEqual(reached, [`${model}:${want}`]);
      assert.equal(rec.responses.size, 0, 'not answered before it runs');
    } else {
      assert.deepEqual(reached, [], 'a refused request reaches no instance');
      assert.deepEqual(rec.only('r').error, { code: want[0], message: want[1] });
      assert.equal(rec.only('r').final, true);
    }
  });
}
