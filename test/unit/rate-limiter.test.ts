import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ModelConfig } from '../../src/core/model-config';
import {
  RateLimiter,
  asksOf,
  availableCount,
  fits,
  grantable,
  resourceKey,
  scaledPriority,
  type RateLimitOverride,
  type ResourceAsk,
} from '../../src/scheduler/rate-limiter';
import { FakeInstance, config, request } from './scheduler-test-kit';

const G = (name: string): string => resourceKey(name, true, 0);
const D = (device: number, name: string): string => resourceKey(name, false, device);

test('asksOf: global resources ignore the device; zero counts ask for nothing', () => {
  const limiter = {
    priority: 0,
    resources: [
      { name: 'R', global: true, count: 2 },
      { name: 'S', global: false, count: 1 },
      { name: 'Z', global: false, count: 0 },
    ],
  };
  assert.deepEqual(asksOf(limiter, 3), [
    { key: 'global:R', count: 2 },
    { key: 'device:3:S', count: 1 },
  ]);
  assert.deepEqual(asksOf(undefined, 0), []);
});

const availabilityCases: { name: string; key: string; overrides: RateLimitOverride[]; registered: ResourceAsk[][]; want: number }[] = [
  {
    name: 'default: the largest ask of any instance',
    key: G('R'),
    overrides: [],
    registered: [[{ key: G('R'), count: 2 }], [{ key: G('R'), count: 5 }]],
    want: 5,
  },
  {
    name: 'per device defaults are per device',
    key: D(1, 'R'),
    overrides: [],
    registered: [[{ key: D(0, 'R'), count: 7 }], [{ key: D(1, 'R'), count: 3 }]],
    want: 3,
  },
  {
    name: 'an override without device sets the global resource',
    key: G('R'),
    overrides: [{ name: 'R', count: 1 }],
    registered: [[{ key: G('R'), count: 1 }]],
    want: 1,
  },
  { name: 'an override without device sets every device', key: D(2, 'R'), overrides: [{ name: 'R', count: 4 }], registered: [], want: 4 },
  {
    name: 'a device override wins over the all-devices one',
    key: D(2, 'R'),
    overrides: [
      { name: 'R', count: 4 },
      { name: 'R', count: 9, device: 2 },
    ],
    registered: [],
    want: 9,
  },
  {
    name: "another device's override does not apply",
    key: D(1, 'R'),
    overrides: [{ name: 'R', count: 9, device: 2 }],
    registered: [[{ key: D(1, 'R'), count: 2 }]],
    want: 2,
  },
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
  {
    name: 'all resources must fit',
    asks: [
      { key: 'a', count: 1 },
      { key: 'b', count: 1 },
    ],
    used: [['b', 1]],
    avail: { a: 1, b: 1 },
    want: false,
  },
];

for (const c of fitCases) {
  test(`fits: ${c.name}`, () => {
    assert.equal(
      fits(c.asks, new Map(c.used), (k) => c.avail[k] ?? 0),
      c.want,
    );
  });
}

function limitedConfig(name: string, count: number, resources: { name: string; global: boolean; count: number }[], priority = 0): ModelConfig {
  const c = config(0);
  c.name = name;
  c.instance_group = [
    { name, kind: 'KIND_CPU', count, gpus: [], secondary_devices: [], profile: [], passive: false, host_policy: '', rate_limiter: { resources, priority } },
  ];
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

const scaledCases: { executions: number; priority: number; want: number }[] = [
  { executions: 0, priority: 5, want: 0 },
  { executions: 3, priority: 0, want: 3 },
  { executions: 3, priority: 1, want: 3 },
  { executions: 3, priority: 2, want: 6 },
];

for (const c of scaledCases) {
  test(`scaledPriority: ${c.executions} executions at priority ${c.priority} weigh ${c.want}`, () => {
    assert.equal(scaledPriority(c.executions, c.priority), c.want);
  });
}

const ask = (key: string, count = 1): ResourceAsk => ({ key, count });
const grantCases: { name: string; waiting: ResourceAsk[][]; used: [string, number][]; avail: Record<string, number>; want: number[] }[] = [
  { name: 'every waiter that fits starts, in order', waiting: [[ask('a')], [ask('b')]], used: [], avail: { a: 1, b: 1 }, want: [0, 1] },
  { name: 'two that fit alone but not together: the first', waiting: [[ask('a')], [ask('a')]], used: [], avail: { a: 1 }, want: [0] },
  { name: 'a blocked waiter keeps its resource from later ones', waiting: [[ask('a', 2)], [ask('a')]], used: [['a', 1]], avail: { a: 2 }, want: [] },
  { name: 'a later waiter on other resources goes ahead', waiting: [[ask('a', 2)], [ask('b')]], used: [['a', 1]], avail: { a: 2, b: 1 }, want: [1] },
  {
    name: 'a later waiter sharing one of its resources waits',
    waiting: [[ask('a', 2)], [ask('b'), ask('a')]],
    used: [['a', 1]],
    avail: { a: 2, b: 1 },
    want: [],
  },
  { name: 'a waiter that asks for nothing always starts', waiting: [[ask('a', 2)], []], used: [['a', 2]], avail: { a: 2 }, want: [1] },
];

for (const c of grantCases) {
  test(`grantable: ${c.name}`, () => {
    const waiting = c.waiting.map((asks, seq) => ({ asks, rank: 0, seq }));
    assert.deepEqual(
      grantable(waiting, new Map(c.used), (k) => c.avail[k] ?? 0),
      c.want,
    );
  });
}

test('RateLimiter: priority is a weight (executions done × priority), not a level: priority 2 gets every few turns, not none', async () => {
  const limiter = new RateLimiter([{ name: 'R', count: 1 }], []);
  const mk = (name: string, priority: number): [FakeInstance, ReturnType<RateLimiter['wrap']>[number]] => {
    const i = new FakeInstance(`${name}_0`);
    return [i, limiter.wrap(limitedConfig(name, 1, [{ name: 'R', global: true, count: 1 }], priority), [i])[0]!];
  };
  const contenders = [mk('a0', 1), mk('a1', 1), mk('b', 2)];
  const order: string[] = [];
  // Every contender always has its next execution waiting: it asks again as soon as one ends.
  const again = (k: number): void => {
    const [inst, wrapped] = contenders[k]!;
    void wrapped.execute([request(inst.name)]).then(() => again(k));
  };
  contenders.forEach((_, k) => again(k));
  for (let n = 0; n < 12; n++) {
    await tick();
    const running = contenders.filter(([i]) => i.running === 1);
    assert.equal(running.length, 1, 'one unit of R: one execution at a time');
    order.push(running[0]![0].name);
    running[0]![0].current().finish();
  }
  // a0 first (nothing waited), then lowest executions × priority, ties by arrival:
  // b (priority 2) runs once for every two turns of each priority-1 instance.
  assert.deepEqual(order, ['a0_0', 'a1_0', 'b_0', 'a0_0', 'a1_0', 'b_0', 'a0_0', 'a1_0', 'a0_0', 'a1_0', 'b_0', 'a0_0']);
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
  assert.deepEqual(
    insts.map((i) => i.running),
    [1, 1, 0, 0],
    'D has 2 units (the largest ask)',
  );
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

test('RateLimiter: a request cancelled while its batch waits for resources leaves the batch unrun; the rest of the batch runs', async () => {
  const limiter = new RateLimiter([], []);
  const a = new FakeInstance('a_0');
  const b = new FakeInstance('b_0');
  const [wa] = limiter.wrap(limitedConfig('a', 1, [{ name: 'R', global: true, count: 1 }]), [a]);
  const [wb] = limiter.wrap(limitedConfig('b', 1, [{ name: 'R', global: true, count: 1 }]), [b]);
  const pa = wa!.execute([request('busy')]);
  const waiting = [request('x'), request('y'), request('z')];
  const pb = wb!.execute(waiting);
  await tick();
  assert.equal(b.running, 0, 'b waits for R');
  wb!.cancel!(waiting[1]!);
  assert.deepEqual(b.cancelled, [], 'not told to the instance: the request never reaches it');
  a.current().finish();
  await pa;
  await tick();
  assert.deepEqual(b.batches(), [['x', 'z']], 'the cancelled request left the batch');
  b.current().finish();
  const result = await pb;
  assert.deepEqual(
    result.responses.map((r) => r.parameters?.['echo'] ?? r.error?.code),
    ['x', 'CANCELLED', 'z'],
    'answers stay in request order',
  );
  assert.equal(result.responses[1]!.skipped, true);
  assert.equal(
    result.responses[1]!.error?.message,
    "[request id: y] request for model 'm' version 3 was cancelled before it ran (its client cancelled it or went away)",
  );
});

test('RateLimiter: a batch whose every request is cancelled while it waits stops waiting: nothing runs, nothing is held', async () => {
  const limiter = new RateLimiter([], []);
  const a = new FakeInstance('a_0');
  const b = new FakeInstance('b_0');
  const c = new FakeInstance('c_0');
  const [wa] = limiter.wrap(limitedConfig('a', 1, [{ name: 'R', global: true, count: 1 }]), [a]);
  const [wb] = limiter.wrap(limitedConfig('b', 1, [{ name: 'R', global: true, count: 1 }]), [b]);
  const [wc] = limiter.wrap(limitedConfig('c', 1, [{ name: 'R', global: true, count: 1 }]), [c]);
  const pa = wa!.execute([request('busy')]);
  const gone = request('gone');
  const pb = wb!.execute([gone]);
  const pc = wc!.execute([request('next')]);
  await tick();
  assert.equal(limiter.waitingCount(), 2);
  wb!.cancel!(gone);
  const result = await pb;
  assert.equal(result.responses[0]!.error?.code, 'CANCELLED');
  assert.equal(result.responses[0]!.skipped, true);
  assert.equal(limiter.waitingCount(), 1, 'the cancelled batch left the line');
  a.current().finish();
  await pa;
  await tick();
  assert.equal(b.executions.length, 0, 'b never ran');
  assert.equal(c.running, 1, 'the next waiter got R');
  c.current().finish();
  await pc;
});
