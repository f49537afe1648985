import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LruBytes } from '../../src/scheduler/lru-bytes';

type Op = ['set', string, number] | ['get', string];

const cases: { name: string; capacity: number; ops: Op[]; keys: string[]; bytes: number; evictions: number }[] = [
  {
    name: 'fits: nothing evicted',
    capacity: 100,
    ops: [
      ['set', 'a', 40],
      ['set', 'b', 60],
    ],
    keys: ['a', 'b'],
    bytes: 100,
    evictions: 0,
  },
  {
    name: 'over capacity: the least recently used goes',
    capacity: 100,
    ops: [
      ['set', 'a', 40],
      ['set', 'b', 40],
      ['set', 'c', 40],
    ],
    keys: ['b', 'c'],
    bytes: 80,
    evictions: 1,
  },
  {
    name: 'a get makes an entry most recently used',
    capacity: 100,
    ops: [
      ['set', 'a', 40],
      ['set', 'b', 40],
      ['get', 'a'],
      ['set', 'c', 40],
    ],
    keys: ['a', 'c'],
    bytes: 80,
    evictions: 1,
  },
  {
    name: 'several evicted for one big entry',
    capacity: 100,
    ops: [
      ['set', 'a', 30],
      ['set', 'b', 30],
      ['set', 'c', 30],
      ['set', 'd', 90],
    ],
    keys: ['d'],
    bytes: 90,
    evictions: 3,
  },
  {
    name: 'an entry larger than the capacity is not stored',
    capacity: 100,
    ops: [
      ['set', 'a', 30],
      ['set', 'big', 101],
    ],
    keys: ['a'],
    bytes: 30,
    evictions: 0,
  },
  {
    name: 'replacing a key re-counts its bytes',
    capacity: 100,
    ops: [
      ['set', 'a', 30],
      ['set', 'a', 70],
    ],
    keys: ['a'],
    bytes: 70,
    evictions: 0,
  },
  {
    name: 'capacity 0 stores nothing but empty entries',
    capacity: 0,
    ops: [
      ['set', 'a', 1],
      ['set', 'z', 0],
    ],
    keys: ['z'],
    bytes: 0,
    evictions: 0,
  },
];

for (const c of cases) {
  test(`LruBytes: ${c.name}`, () => {
    const lru = new LruBytes<string>(c.capacity);
    for (const op of c.ops) {
      if (op[0] === 'set') lru.set(op[1], `v${op[1]}`, op[2]);
      else lru.get(op[1]);
    }
    assert.deepEqual(lru.keys().sort(), [...c.keys].sort());
    const s = lru.stats();
    assert.equal(s.bytes, c.bytes);
    assert.equal(s.evictions, c.evictions);
    assert.equal(s.entries, c.keys.length);
  });
}

test('LruBytes: get returns the value, undefined on a miss', () => {
  const lru = new LruBytes<number>(10);
  lru.set('k', 42, 5);
  assert.equal(lru.get('k'), 42);
  assert.equal(lru.get('nope'), undefined);
  assert.equal(lru.delete('k'), true);
  assert.equal(lru.stats().bytes, 0);
});

test('LruBytes: a negative capacity is refused', () => {
  assert.throws(() => new LruBytes(-1), /capacity must be a byte count >= 0, got -1/);
});
