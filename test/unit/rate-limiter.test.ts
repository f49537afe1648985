import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ModelConfig } from '../../src/core/model-config';
import { RateLimiter, asksOf, availableCount, fits, resourceKey, type RateLimitOverride, type ResourceAsk } from '../../src/scheduler/rate-limiter';
import { FakeInstance, config, request } from './scheduler-test-kit';

const G = (name: string): string => resourceKey(name, true, 0);
const D = (device: number, name: string): string => resourceKey(name, false, device);

test('asksOf: global resources ignore the device; zero counts ask for nothing', () => {
  const limiter = { priority: 0, resources: [{ name: 'R', global: true, count: 2 }, { name: 'S', global: false, count: 1 }, { name: 'Z', global: false, count: 0 }] };
  assert.deepEqual(asksOf(limiter, 3), [{ key: 'global:R', count: 2 }, { key: 'device:3:S', count: 1 }]);
  assert.deepEqual(asksOf(undefined, 0), []);
});

const availabilityCases: { name: string; key: string; overrides: RateLimitOverride[]; registered: ResourceAsk[][]; want: number }[] = [
  { name: 'default: the largest ask of any instance', key: G('R'), overrides: [], registered: [[{ key: G('R'), count: 2 }], [{ key: G('R'), count: 5 }]], want: 5 },
  { name: 'per device defaults are per device', key: D(1, 'R'), overrides: [], registered: [[{ key: D(0, 'R'), count: 7 }], [{ key: D(1, 'R'), count: 3 }]], want: 3 },
  { name: 'an override without device sets the global resource', key: G('R'), overrides: [{ name: 'R', count: 1 }], registered: [[{ key: G('R'), count: 1 }]], want: 1 },
  { name: 'an override without device sets every device', key: D(2, 'R'), overrides: [{ name: 'R', count: 4 }], registered: [], want: 4 },
  { name: 'a device override wins over the all-devices one', key: D(2, 'R'), overrides: [{ name: 'R', count: 4 }, { name: 'R', count: 9, device: 2 }], registered: [], want: 9 },
  { name: "another device's override does not apply", key: D(1, 'R'), overrides: [{ name: 'R', count: 9, device: 2 }], registered: [[{ key: D(1, 'R'), count: 2 }]], want: 2 },
  { name: 'another name does not apply', key: G('R'), overrides: [{ name: 'S', count: 9 }], registered: [], want: 0 },
];

for (const c of availabilityCases) {
  test(`availableCount: ${c.name}`, () => {
    assert.equal(availableCount(c.key, c.overrides, c.registered), c.want);
  });
}

const fitCases: { name: string; asks: ResourceAsk[]; used: [string, number][]; avail: Record<string, number>; want: boolean }[] = [
  { name: 'nothing asked', asks: [], used: [], avail: {}, want: true },
  { name: 'exactly what is left', asks: [{ key: 'a', count: 2 }], used: [['a', 1]], avail: { a: 3 }, want: true },
  { name: 'one more than left', asks: [{ key: 'a', count: 3 }], used: [['a', 1]], avail: { a: 3 }, want: false },
  { name: 'all resources must fit', asks: [{ key: 'a', count: 1 }, { key: 'b', count: 1 }], used: [['b', 1]], avail: { a: 1, b: 1 }, want: false },
];

for (const c of fitCases) {
  test(`fits: ${c.name}`, () => {
    assert.equal(fits(c.asks, new Map(c.used), (k) => c.avail[k] ?? 0), c.want);
  });
}

function limitedConfig(name: string, count: number, resources: { name: string; global: boolean; count: number }[], priority = 0): ModelConfig {
  const c = config(0);
  c.name = name;
  c.instance_group = [{ name, kind: 'KIND_CPU', count, gpus: [], secondary_devices: [], profile: [], passive: false, host_policy: '', rate_limiter: { resources, priority } }];
  return c;
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

test('RateLimiter: one global unit shared by two models runs one execution at a time, in arrival order', async () => {
  const limiter = new RateLimiter([{ name: 'R', count: 1 }], []);
  const a = new FakeInstance('a_0');
  const b = new FakeInstance('b_0');
  const [wa] = limiter.wrap(limitedConfig('a', 1, [{ name: 'R', global: true, count: 1 }]), [a]);
  const [wb] = limiter.wrap(limitedConfig('b', 1, [{ name: 'R', global: true, count: 1 }]), [b]);
  const done: string[] = [];
  const pa = wa!.execute([request('1')]).then(() => done.push('a'));
  const pb = wb!.execute([request('2')]).then(() => done.push('b'));
  await tick();
  assert.equal(a.running, 1);
  assert.equal(b.running, 0, 'b waits for R');
  assert.equal(limiter.waitingCount(), 1);
  a.current().finish();
  await pa;
  await tick();
  assert.equal(b.running, 1, 'b starts once a released R');
  b.current().finish();
  await pb;
  assert.deepEqual(done, ['a', 'b']);
});

test('RateLimiter: waiting executions start by priority (lower first), then arrival', async () => {
  const limiter = new RateLimiter([{ name: 'R', count: 1 }], []);
  const mk = (name: string, priority: number): [FakeInstance, ReturnType<RateLimiter['wrap']>[number]] => {
    const i = new FakeInstance(`${name}_0`);
    return [i, limiter.wrap(limitedConfig(name, 1, [{ name: 'R', global: true, count: 1 }], priority), [i])[0]!];
  };
  const [hold, wHold] = mk('hold', 1);
  const [low, wLow] = mk('low', 5);
  const [high1, wHigh1] = mk('high1', 1);
  const [high2, wHigh2] = mk('high2', 1);
  const order: string[] = [];
  const run = (inst: FakeInstance, w: typeof wHold, tag: string): Promise<unknown> => {
    const p = w.execute([request(tag)]).then(() => order.push(tag));
    void inst;
    return p;
  };
  const ps = [run(hold, wHold, 'hold')];
  await tick();
  ps.push(run(low, wLow, 'low'), run(high1, wHigh1, 'high1'), run(high2, wHigh2, 'high2'));
  await tick();
  assert.equal(limiter.waitingCount(), 3);
  for (const inst of [hold, high1, high2, low]) {
    await tick();
    assert.equal(inst.running, 1, `${inst.name} runs next`);
    inst.current().finish();
    await tick();
  }
  await Promise.all(ps);
  assert.deepEqual(order, ['hold', 'high1', 'high2', 'low']);
});

test('RateLimiter: per-device resources default to the largest ask, so two instances asking 1 of 2 run together', async () => {
  const limiter = new RateLimiter([], []);
  const c = limitedConfig('m', 3, [{ name: 'D', global: false, count: 1 }]);
  c.instance_group.push({ ...c.instance_group[0]!, name: 'big', count: 1, rate_limiter: { resources: [{ name: 'D', global: false, count: 2 }], priority: 0 } });
  const insts = ['m_0', 'm_1', 'm_2', 'big_0'].map((n) => new FakeInstance(n));
  const wrapped = limiter.wrap(c, insts);
  void wrapped[0]!.execute([request('1')]);
  void wrapped[1]!.execute([request('2')]);
  void wrapped[2]!.execute([request('3')]);
  await tick();
  assert.deepEqual(insts.map((i) => i.running), [1, 1, 0, 0], 'D has 2 units (the largest ask)');
  insts[0]!.current().finish();
  await tick();
  assert.equal(insts[2]!.running, 1);
});

test('RateLimiter: an instance asking more than --rate-limit-resource allows fails the load; no rate_limiter: not wrapped', () => {
  const limiter = new RateLimiter([{ name: 'R', count: 1 }], []);
  assert.throws(
    () => limiter.wrap(limitedConfig('m', 1, [{ name: 'R', global: true, count: 2 }]), [new FakeInstance('m_0')]),
    /instance m_0 of model 'm' asks for 2 of resource 'R' but only 1 are available/,
  );
  const plain = config(0);
  plain.instance_group = [{ name: 'p', kind: 'KIND_CPU', count: 1, gpus: [], secondary_devices: [], profile: [], passive: false, host_policy: '' }];
  const inst = new FakeInstance('p_0');
  assert.equal(limiter.wrap(plain, [inst])[0], inst);
});
