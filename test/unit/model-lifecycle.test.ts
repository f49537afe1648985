/**
 * One version's lifecycle with a real scheduler (DefaultScheduler) over a
 * test-kit instance whose executions finish when the test says: unloading
 * while a request is in flight, reloading beside the serving build, and a
 * failed build. setTimeout is mocked in the unload test, so a retire that
 * waited on a timer (the old 500 ms grace) could not finish at all.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../src/logging/logger';
import { VersionLifecycle } from '../../src/repository/model-lifecycle';
import type { LifecycleHooks } from '../../src/repository/model-lifecycle';
import type { LoadedVersion } from '../../src/repository/model-loader';
import { ServerError } from '../../src/core/errors';
import { DefaultScheduler } from '../../src/scheduler/default-scheduler';
import { FakeInstance, Recorder, request, settle } from './scheduler-test-kit';

/** A test-kit instance that also records when it was stopped. */
class StoppableInstance extends FakeInstance {
  stopped = false;

  override stop(): Promise<void> {
    this.stopped = true;
    return Promise.resolve();
  }
}

function build(instance: StoppableInstance): LoadedVersion {
  return { instances: [instance], scheduler: new DefaultScheduler('m', [instance]) };
}

/** Hooks that record which versions' telemetry ended (`gone`). */
function hooks(gone: string[] = []): LifecycleHooks {
  return {
    changed: () => undefined,
    gone: (model, version) => void gone.push(`${model}:${version}`),
    log: createLogger({ verbose: 0, info: true, warning: true, error: true, format: 'default', sink: () => undefined }),
  };
}

/** Lets promise and setImmediate callbacks run, without any timer (setTimeout may be mocked). */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await settle();
}

test("unload while a request is in flight: UNLOADING at once, new requests refused with Triton's text, the in-flight one answered, then UNAVAILABLE with no timer", async (t) => {
  const instance = new StoppableInstance('m_0');
  const gone: string[] = [];
  const v = new VersionLifecycle('m', 3, hooks(gone));
  assert.equal(await v.load(async () => build(instance)), 'loaded');
  assert.deepEqual(v.readiness, { state: 'READY', reason: '' });

  const rec = new Recorder();
  v.admit(request('inflight'), rec.respond('inflight'));
  assert.equal(instance.running, 1);
  assert.equal(v.inflightCount(), 1);

  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  let retiredAt: number | undefined;
  const retired = v.retire().then(() => (retiredAt = performance.now()));
  assert.equal(v.state, 'UNLOADING', 'UNLOADING before retire() yields, so an unload can be answered');

  v.admit(request('late'), rec.respond('late'));
  assert.deepEqual(rec.only('late').error, { code: 'UNAVAILABLE', message: "Request for unknown model: 'm' version 3 is not at ready state" });
  assert.equal(rec.only('late').final, true);
  assert.equal(instance.executions.length, 1, 'the refused request never reached the instance');

  await turns(10);
  assert.equal(v.state, 'UNLOADING', 'still draining: one request in flight');
  assert.equal(retiredAt, undefined);
  assert.equal(instance.stopped, false, 'instances are released only after the drain');

  const answeredAt = performance.now();
  instance.current().finish();
  await turns(10); // no mocked timer is ever ticked: only promise and setImmediate turns
  assert.notEqual(retiredAt, undefined, 'retired without any timer firing');
  await retired;
  assert.equal(rec.only('inflight').error, undefined);
  assert.equal(rec.only('inflight').parameters?.['echo'], 'inflight');
  assert.deepEqual(v.readiness, { state: 'UNAVAILABLE', reason: 'unloaded' });
  assert.equal(instance.stopped, true);
  assert.deepEqual(gone, ['m:3']);
  assert.ok(retiredAt! - answeredAt < 50, `retired ${(retiredAt! - answeredAt).toFixed(1)} ms after the last response`);
  assert.equal(v.inflightCount(), 0);
});

test('reload: the fresh build takes new requests at once, the old one drains what it admitted and then stops', async () => {
  const first = new StoppableInstance('old');
  const second = new StoppableInstance('new');
  const v = new VersionLifecycle('m', 3, hooks());
  await v.load(async () => build(first));
  const rec = new Recorder();
  v.admit(request('a'), rec.respond('a'));

  const reloaded = v.reload(async () => build(second));
  await turns(2);
  assert.equal(v.state, 'READY', 'never leaves READY during a reload');
  v.admit(request('b'), rec.respond('b'));
  assert.deepEqual(second.batches(), [['b']], 'the fresh build took the new request');
  assert.deepEqual(first.batches(), [['a']]);
  assert.equal(v.inflightCount(), 2, 'the draining build still counts');
  second.current().finish();
  await turns(2);
  assert.equal(first.stopped, false, 'the old build waits for its own request');

  first.current().finish();
  assert.equal(await reloaded, 'loaded');
  assert.equal(first.stopped, true);
  assert.equal(second.stopped, false);
  assert.deepEqual(rec.finalOrder, ['b', 'a']);
  assert.equal(v.inflightCount(), 0);
});

test('a failed build: UNAVAILABLE with the reason when loading, the serving build kept (with a note) when reloading', async () => {
  const v = new VersionLifecycle('m', 1, hooks());
  const boom = async (): Promise<LoadedVersion> => {
    throw new ServerError('INTERNAL', 'boom');
  };
  assert.deepEqual(await v.load(boom), { error: 'version 1 is at UNAVAILABLE state: Internal: boom;' });
  assert.deepEqual(v.readiness, { state: 'UNAVAILABLE', reason: 'Internal: boom' });

  const instance = new StoppableInstance('m_0');
  assert.equal(await v.load(async () => build(instance)), 'loaded');
  assert.deepEqual(await v.reload(boom), { error: 'version 1 is at UNAVAILABLE state: Internal: boom;' });
  assert.equal(v.state, 'READY');
  assert.equal(v.note, 'Internal: boom');
  const rec = new Recorder();
  v.admit(request('r'), rec.respond('r'));
  assert.deepEqual(instance.batches(), [['r']], 'the old build still serves');
  instance.current().finish();
  await v.retire();
});

test('a load from a state that cannot load is an INTERNAL error naming both states', async () => {
  const instance = new StoppableInstance('m_0');
  const v = new VersionLifecycle('m', 2, hooks());
  await v.load(async () => build(instance));
  v.admit(request('r'), new Recorder().respond('r'));
  const retired = v.retire();
  await assert.rejects(
    v.load(async () => build(instance)),
    (e: unknown) => e instanceof ServerError && e.code === 'INTERNAL' && e.message === "illegal state transition for 'm' version 2: UNLOADING -> LOADING",
  );
  instance.current().finish();
  await retired;
});

/** A test-kit instance whose readiness the test sets (a dead stub, an is_ready() that said no). */
class UnreadyInstance extends StoppableInstance {
  private why: string | undefined;
  private listeners: (() => void)[] = [];

  get unready(): string | undefined {
    return this.why;
  }

  onUnreadyChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  set(why: string | undefined): void {
    this.why = why;
    for (const l of this.listeners) l();
  }
}

test("an instance's unready is its READY version's, logged once each way; requests are still admitted and the state stays READY", async () => {
  const lines: string[] = [];
  let changes = 0;
  const v = new VersionLifecycle('m', 1, {
    changed: () => void changes++,
    gone: () => undefined,
    log: createLogger({ verbose: 0, info: true, warning: true, error: true, format: 'default', sink: (text) => void lines.push(text) }),
  });
  const a = new UnreadyInstance('m_0');
  const b = new UnreadyInstance('m_1');
  await v.load(async () => ({ instances: [a, b], scheduler: new DefaultScheduler('m', [a, b]) }));
  assert.equal(v.unready, undefined);
  const before = changes;
  b.set("Stub process 'm_1' is not healthy.");
  assert.equal(v.unready, "Stub process 'm_1' is not healthy.");
  assert.equal(v.state, 'READY');
  assert.ok(changes > before, 'the snapshot is told');
  b.set("Stub process 'm_1' is not healthy.");
  const rec = new Recorder();
  v.admit(request('r'), rec.respond('r'));
  assert.equal(a.executions.length + b.executions.length, 1, 'admitted: the request waits for the instance, not refused');
  (a.executions[0] ?? b.executions[0])!.finish();
  b.set(undefined);
  assert.equal(v.unready, undefined);
  const notReady = lines.filter((l) => l.includes("Model 'm' version 1 is not ready: Stub process 'm_1' is not healthy."));
  assert.equal(notReady.length, 1, lines.join('\n'));
  assert.equal(lines.filter((l) => l.includes("model 'm' version 1 is ready again")).length, 1);
  await v.retire();
  a.set('late');
  assert.equal(v.unready, undefined, 'a retired version has no instance readiness');
});
