import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ModelDynamicBatching } from '../../src/core/model-config';
import { compilePriorityPlan, levelOf, PriorityQueue, timeoutOf, type QueuePolicy } from '../../src/scheduler/priority-queue';

const db = (x: Partial<ModelDynamicBatching>): ModelDynamicBatching => ({
  preferred_batch_size: [],
  max_queue_delay_microseconds: 0,
  preserve_ordering: false,
  priority_levels: 0,
  default_priority_level: 0,
  priority_queue_policy: {},
  ...x,
});
const policy = (x: Partial<QueuePolicy>): QueuePolicy => ({ timeoutAction: 'REJECT', defaultTimeoutUs: 0, allowTimeoutOverride: false, maxQueueSize: 0, ...x });

test('levelOf: the priority parameter picks a level; 0, absent, odd or too high values get the default', () => {
  const three = compilePriorityPlan(db({ priority_levels: 3, default_priority_level: 2 }));
  const none = compilePriorityPlan(db({}));
  const cases: [typeof three, unknown, number][] = [
    [three, undefined, 1],
    [three, 0, 1],
    [three, 1, 0],
    [three, 3, 2],
    [three, 4, 1],
    [three, 99, 1],
    [three, '1', 1],
    [three, 1.5, 1],
    [three, true, 1],
    [none, 1, 0],
    [none, 5, 0],
    [none, undefined, 0],
  ];
  for (const [plan, p, want] of cases) assert.equal(levelOf(plan, p as never), want, `priority ${String(p)}`);
});

test('compilePriorityPlan: per-level policies fall back to default_queue_policy', () => {
  const plan = compilePriorityPlan(
    db({
      priority_levels: 2,
      default_priority_level: 2,
      default_queue_policy: { timeout_action: 'DELAY', default_timeout_microseconds: 5, allow_timeout_override: true, max_queue_size: 7 },
      priority_queue_policy: { '1': { timeout_action: 'REJECT', default_timeout_microseconds: 0, allow_timeout_override: false, max_queue_size: 1 } },
    }),
  );
  assert.equal(plan.defaultLevel, 1);
  assert.deepEqual(plan.levels, [
    policy({ maxQueueSize: 1 }),
    policy({ timeoutAction: 'DELAY', defaultTimeoutUs: 5, allowTimeoutOverride: true, maxQueueSize: 7 }),
  ]);
});

test('timeoutOf: a request may only shorten the default, and only when allowed', () => {
  const cases: [Partial<QueuePolicy>, unknown, number][] = [
    [{}, undefined, 0],
    [{}, 100, 0],
    [{ defaultTimeoutUs: 50 }, 10, 50],
    [{ defaultTimeoutUs: 50, allowTimeoutOverride: true }, 10, 10],
    [{ defaultTimeoutUs: 50, allowTimeoutOverride: true }, 100, 50],
    [{ defaultTimeoutUs: 50, allowTimeoutOverride: true }, 0, 50],
    [{ allowTimeoutOverride: true }, 100, 100],
    [{ allowTimeoutOverride: true }, 'x', 0],
  ];
  for (const [p, t, want] of cases) assert.equal(timeoutOf(policy(p), t as never), want, `${JSON.stringify(p)} timeout ${String(t)}`);
});

test('service order: level by level, FIFO within a level; take removes across levels', () => {
  const q = new PriorityQueue<string>(compilePriorityPlan(db({ priority_levels: 3, default_priority_level: 3 })));
  const pushes: [string, number][] = [
    ['a', 2],
    ['b', 2],
    ['c', 0],
    ['d', 1],
    ['e', 0],
  ];
  for (const [item, level] of pushes) assert.ok(q.push(item, level, 0, 0));
  assert.equal(q.size, 5);
  assert.deepEqual(q.peek(10), ['c', 'e', 'd', 'a', 'b']);
  assert.deepEqual(q.peek(2), ['c', 'e']);
  assert.deepEqual(q.take(3), ['c', 'e', 'd']);
  assert.deepEqual(q.peek(10), ['a', 'b']);
  assert.equal(q.size, 2);
});

test('max_queue_size is per level', () => {
  const q = new PriorityQueue<string>(
    compilePriorityPlan(
      db({
        priority_levels: 2,
        default_priority_level: 2,
        priority_queue_policy: { '2': { timeout_action: 'REJECT', default_timeout_microseconds: 0, allow_timeout_override: false, max_queue_size: 2 } },
      }),
    ),
  );
  const results = [
    ['a', 1],
    ['b', 1],
    ['c', 1],
    ['h', 0],
    ['i', 0],
  ].map(([x, l]) => q.push(x as string, l as number, 0, 0));
  assert.deepEqual(results, [true, true, false, true, true]);
  q.take(3);
  assert.equal(q.push('d', 1, 0, 0), true, 'room again once taken');
});

test('expire: REJECT hands timed-out requests back, DELAY moves them behind their level', () => {
  const plan = { levels: [policy({}), policy({ timeoutAction: 'DELAY' })], defaultLevel: 0 };
  const q = new PriorityQueue<string>(plan);
  q.push('r1', 0, 10, 0); // deadline 10
  q.push('r2', 0, 0, 0);
  q.push('r3', 0, 30, 0); // deadline 30
  q.push('d1', 1, 5, 0); // deadline 5
  q.push('d2', 1, 0, 0);
  assert.equal(q.nextDeadlineUs(), 5);
  const rejected: string[] = [];
  q.expire(4, (x) => rejected.push(x));
  assert.equal(rejected.length, 0, 'nothing is due yet');
  q.expire(10, (x) => rejected.push(x));
  assert.deepEqual(rejected, ['r1']);
  assert.deepEqual(q.peek(10), ['r2', 'r3', 'd2', 'd1'], 'd1 delayed behind d2');
  assert.equal(q.size, 4);
  assert.equal(q.nextDeadlineUs(), 30);
  q.expire(100, (x) => rejected.push(x));
  assert.deepEqual(rejected, ['r1', 'r3']);
  assert.equal(q.nextDeadlineUs(), Infinity, 'delayed requests never time out again');
  assert.deepEqual(q.take(10), ['r2', 'd2', 'd1']);
  assert.equal(q.size, 0);
});

test('remove: a cancelled request leaves its level (on time or delayed), its deadline with it', () => {
  const plan = { levels: [policy({}), policy({ timeoutAction: 'DELAY' })], defaultLevel: 0 };
  const fill = (): PriorityQueue<string> => {
    const q = new PriorityQueue<string>(plan);
    q.push('a', 0, 10, 0); // deadline 10
    q.push('b', 0, 20, 0); // deadline 20
    q.push('c', 0, 0, 0);
    q.push('d', 1, 5, 0); // deadline 5: delayed at t=5
    q.push('e', 1, 0, 0);
    q.expire(5, () => assert.fail('nothing is rejected at t=5'));
    return q;
  };
  const cases: { remove: string; got: string | undefined; left: string[]; rejectedAt15: string[] }[] = [
    { remove: 'a', got: 'a', left: ['b', 'c', 'e', 'd'], rejectedAt15: [] },
    { remove: 'b', got: 'b', left: ['a', 'c', 'e', 'd'], rejectedAt15: ['a'] },
    { remove: 'd', got: 'd', left: ['a', 'b', 'c', 'e'], rejectedAt15: ['a'] },
    { remove: 'e', got: 'e', left: ['a', 'b', 'c', 'd'], rejectedAt15: ['a'] },
    { remove: 'zz', got: undefined, left: ['a', 'b', 'c', 'e', 'd'], rejectedAt15: ['a'] },
  ];
  for (const c of cases) {
    const q = fill();
    assert.equal(
      q.remove((x) => x === c.remove),
      c.got,
      `remove ${c.remove}`,
    );
    assert.deepEqual(q.peek(10), c.left, `left after removing ${c.remove}`);
    assert.equal(q.size, c.left.length);
    // The deadlines stay with their requests: 'b' (deadline 20) is not rejected in a's place.
    const rejected: string[] = [];
    q.expire(15, (x) => rejected.push(x));
    assert.deepEqual(rejected, c.rejectedAt15, `expired at 15 after removing ${c.remove}`);
  }
});
