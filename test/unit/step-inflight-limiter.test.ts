import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StepInflightLimiter } from '../../src/scheduler/step-inflight-limiter';

type Op = ['acquire', string] | ['release'];

test('StepInflightLimiter: starts at most `max` at once, the rest in arrival order as slots are released; 0 = no limit', () => {
  const table: { max: number; ops: Op[]; started: string[]; inflight: number; waiting: number }[] = [
    {
      max: 1,
      ops: [
        ['acquire', 'a'],
        ['acquire', 'b'],
        ['acquire', 'c'],
      ],
      started: ['a'],
      inflight: 1,
      waiting: 2,
    },
    { max: 1, ops: [['acquire', 'a'], ['acquire', 'b'], ['release'], ['acquire', 'c']], started: ['a', 'b'], inflight: 1, waiting: 1 },
    { max: 2, ops: [['acquire', 'a'], ['acquire', 'b'], ['acquire', 'c'], ['release'], ['release']], started: ['a', 'b', 'c'], inflight: 1, waiting: 0 },
    {
      max: 2,
      ops: [['acquire', 'a'], ['release'], ['release'], ['acquire', 'b'], ['acquire', 'c'], ['acquire', 'd']],
      started: ['a', 'b', 'c'],
      inflight: 2,
      waiting: 1,
    },
    {
      max: 0,
      ops: [
        ['acquire', 'a'],
        ['acquire', 'b'],
        ['acquire', 'c'],
      ],
      started: ['a', 'b', 'c'],
      inflight: 3,
      waiting: 0,
    },
  ];
  for (const row of table) {
    const l = new StepInflightLimiter(row.max);
    const started: string[] = [];
    for (const op of row.ops) {
      if (op[0] === 'acquire') {
        const name = op[1];
        l.acquire(() => started.push(name));
      } else l.release();
    }
    const what = `max ${row.max}: ${row.ops.map((o) => o.join(' ')).join(', ')}`;
    assert.deepEqual(started, row.started, what);
    assert.equal(l.inflightCount(), row.inflight, what);
    assert.equal(l.waitingCount(), row.waiting, what);
  }
});

test('StepInflightLimiter: starts that end at once release from inside without growing the stack', () => {
  const l = new StepInflightLimiter(1);
  let ran = 0;
  l.acquire(() => ran++); // holds the slot
  for (let i = 0; i < 100_000; i++) {
    l.acquire(() => {
      ran++;
      l.release(); // refused on the spot: the slot goes straight on
    });
  }
  l.release();
  assert.equal(ran, 100_001);
  assert.equal(l.inflightCount(), 0);
  assert.equal(l.waitingCount(), 0);
});
