import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sequenceKey, SequenceSlots } from '../../src/scheduler/sequence-slots';

/** One step: admit `item` of sequence `seq` (S = start, E = end), take on an instance, or expire. */
type Step =
  | { admit: string; seq: number | string; flags?: 'S' | 'E' | 'SE'; at?: number; expect?: string }
  | { take: number; at?: number; expect: string[] }
  /** `held`: sequences that keep their slot however idle (an iterative sequence whose request runs). */
  | { expire: number; idle: number; held?: (number | string)[]; expect: string[] }
  /** Put `item` back first in sequence `seq`'s queue (a rescheduled request). */
  | { requeue: string; seq: number | string; at?: number; expect?: string }
  /** End sequence `seq` (its iterative request was answered). */
  | { finish: number | string }
  | { cancel: string; expect: string[] };

const cases: { name: string; instances: number; slots: number; steps: Step[] }[] = [
  {
    name: 'interleaved sequences share an instance, one request per slot per execution, in order',
    instances: 1,
    slots: 2,
    steps: [
      { admit: 'a1', seq: 1, flags: 'S' },
      { admit: 'b1', seq: 2, flags: 'S' },
      { admit: 'a2', seq: 1 },
      { admit: 'b2', seq: 2 },
      { admit: 'a3', seq: 1, flags: 'E' },
      { take: 0, expect: ['a1', 'b1'] },
      { take: 0, expect: ['a2', 'b2'] },
      { take: 0, expect: ['a3'] },
      { take: 0, expect: [] },
    ],
  },
  {
    name: 'a request without START for an unknown sequence is refused',
    instances: 1,
    slots: 1,
    steps: [
      { admit: 'x', seq: 7, expect: 'no-start' },
      { take: 0, expect: [] },
    ],
  },
  {
    name: 'after END the id needs a new START',
    instances: 1,
    slots: 1,
    steps: [
      { admit: 'a1', seq: 1, flags: 'SE' },
      { admit: 'a2', seq: 1, expect: 'no-start' },
      { take: 0, expect: ['a1'] },
      { admit: 'a3', seq: 1, flags: 'S', expect: 'queued' },
      { take: 0, expect: ['a3'] },
    ],
  },
  {
    name: 'every slot taken: the next sequence waits in the backlog until END frees one',
    instances: 1,
    slots: 1,
    steps: [
      { admit: 'a1', seq: 1, flags: 'S' },
      { admit: 'b1', seq: 2, flags: 'S', expect: 'backlog' },
      { admit: 'b2', seq: 2, expect: 'backlog' },
      { admit: 'a2', seq: 1, flags: 'E' },
      { take: 0, expect: ['a1'] },
      { take: 0, expect: ['a2'] },
      { take: 0, expect: ['b1'] },
      { take: 0, expect: ['b2'] },
    ],
  },
  {
    name: 'sequences spread over instances, each bound to its own',
    instances: 2,
    slots: 1,
    steps: [
      { admit: 'a1', seq: 'A', flags: 'S' },
      { admit: 'b1', seq: 'B', flags: 'S' },
      { admit: 'a2', seq: 'A' },
      { take: 1, expect: ['b1'] },
      { take: 0, expect: ['a1'] },
      { take: 1, expect: [] },
      { take: 0, expect: ['a2'] },
    ],
  },
  {
    name: 'string and number ids never collide',
    instances: 1,
    slots: 2,
    steps: [
      { admit: 'n', seq: 5, flags: 'S' },
      { admit: 's', seq: '5', expect: 'no-start' },
    ],
  },
  {
    name: 'an idle sequence loses its slot; one with queued requests does not',
    instances: 1,
    slots: 2,
    steps: [
      { admit: 'a1', seq: 1, flags: 'S', at: 0 },
      { admit: 'b1', seq: 2, flags: 'S', at: 0 },
      { take: 0, at: 10, expect: ['a1', 'b1'] },
      { admit: 'b2', seq: 2, at: 20 },
      { expire: 1000, idle: 500, expect: [sequenceKey(1)] },
      { admit: 'a2', seq: 1, at: 1001, expect: 'no-start' },
      { take: 0, expect: ['b2'] },
    ],
  },
  {
    name: 'expiry hands the freed slot to the backlog',
    instances: 1,
    slots: 1,
    steps: [
      { admit: 'a1', seq: 1, flags: 'S', at: 0 },
      { admit: 'b1', seq: 2, flags: 'S', at: 0, expect: 'backlog' },
      { take: 0, at: 0, expect: ['a1'] },
      { expire: 2000, idle: 1000, expect: [sequenceKey(1)] },
      { take: 0, expect: ['b1'] },
    ],
  },
  {
    name: 'a rescheduled request goes back first in its slot, before a later request of its sequence',
    instances: 1,
    slots: 2,
    steps: [
      { admit: 'a1', seq: 1, flags: 'S' },
      { admit: 'b1', seq: 2, flags: 'S' },
      { take: 0, expect: ['a1', 'b1'] },
      { admit: 'a2', seq: 1 },
      { requeue: 'a1', seq: 1, expect: 'queued' },
      { take: 0, expect: ['a1'] },
      { take: 0, expect: ['a2'] },
      { take: 0, expect: [] },
    ],
  },
  {
    name: 'finish ends an idle sequence and hands its slot to the backlog; a sequence with queued requests stays',
    instances: 1,
    slots: 1,
    steps: [
      { admit: 'a1', seq: 1, flags: 'S' },
      { admit: 'b1', seq: 2, flags: 'S', expect: 'backlog' },
      { take: 0, expect: ['a1'] },
      { admit: 'a2', seq: 1 },
      { finish: 1 },
      { take: 0, expect: ['a2'] },
      { finish: 1 },
      { admit: 'a3', seq: 1, expect: 'no-start' },
      { take: 0, expect: ['b1'] },
      { finish: 2 },
      { finish: 2 },
      { finish: 99 },
    ],
  },
  {
    name: 'a rescheduled request whose sequence expired meanwhile starts it again',
    instances: 1,
    slots: 1,
    steps: [
      { admit: 'a1', seq: 1, flags: 'S', at: 0 },
      { take: 0, at: 0, expect: ['a1'] },
      { expire: 5000, idle: 1000, expect: [sequenceKey(1)] },
      { requeue: 'a1', seq: 1, at: 5000, expect: 'queued' },
      { take: 0, expect: ['a1'] },
      { admit: 'a2', seq: 1, expect: 'queued' },
    ],
  },
  {
    name: 'a held sequence keeps its slot past the idle time (its iterative request runs), so its rescheduled request stays on its instance',
    instances: 2,
    slots: 1,
    steps: [
      { admit: 'a1', seq: 1, flags: 'S', at: 0 },
      { take: 0, at: 0, expect: ['a1'] },
      { expire: 5000, idle: 1000, held: [1, 7], expect: [] },
      // The other instance's slot is free: a new sequence takes it, not a1's.
      { admit: 'b1', seq: 2, flags: 'S', at: 5000, expect: 'queued' },
      { take: 1, at: 5000, expect: ['b1'] },
      { requeue: 'a1', seq: 1, at: 5000, expect: 'queued' },
      { take: 0, expect: ['a1'] },
      { expire: 9000, idle: 1000, held: [2], expect: [sequenceKey(1)] },
    ],
  },
  {
    name: 'a rescheduled request of a sequence in the backlog waits first in line',
    instances: 1,
    slots: 1,
    steps: [
      { admit: 'a1', seq: 1, flags: 'S' },
      { admit: 'b1', seq: 2, flags: 'S', expect: 'backlog' },
      { admit: 'b2', seq: 2 },
      { requeue: 'b0', seq: 2, expect: 'backlog' },
      { take: 0, expect: ['a1'] },
      { finish: 1 },
      { take: 0, expect: ['b0'] },
      { take: 0, expect: ['b1'] },
      { take: 0, expect: ['b2'] },
    ],
  },
  {
    name: 'a cancelled queued request ends its sequence: it and the later ones leave, the earlier ones still run, then the slot frees for the backlog',
    instances: 1,
    slots: 1,
    steps: [
      { admit: 'a1', seq: 1, flags: 'S' },
      { admit: 'a2', seq: 1 },
      { admit: 'a3', seq: 1 },
      { admit: 'a4', seq: 1 },
      { admit: 'b1', seq: 2, flags: 'S', expect: 'backlog' },
      { cancel: 'a3', expect: ['a3', 'a4'] },
      { admit: 'a5', seq: 1, expect: 'no-start' },
      { take: 0, expect: ['a1'] },
      { take: 0, expect: ['a2'] },
      { take: 0, expect: ['b1'] },
    ],
  },
  {
    name: 'cancelling the last queued request of a sequence frees its slot at once',
    instances: 1,
    slots: 1,
    steps: [
      { admit: 'a1', seq: 1, flags: 'S' },
      { take: 0, expect: ['a1'] },
      { admit: 'a2', seq: 1 },
      { admit: 'b1', seq: 2, flags: 'S', expect: 'backlog' },
      { cancel: 'a2', expect: ['a2'] },
      { take: 0, expect: ['b1'] },
      { admit: 'a3', seq: 1, expect: 'no-start' },
      { admit: 'a3', seq: 1, flags: 'S', expect: 'backlog' },
    ],
  },
  {
    name: 'a cancelled request of a backlogged sequence takes the whole backlogged sequence with it, earlier requests too',
    instances: 1,
    slots: 1,
    steps: [
      { admit: 'a1', seq: 1, flags: 'S' },
      { admit: 'b1', seq: 2, flags: 'S', expect: 'backlog' },
      { admit: 'b2', seq: 2, expect: 'backlog' },
      { admit: 'c1', seq: 3, flags: 'SE', expect: 'backlog' },
      { cancel: 'b2', expect: ['b1', 'b2'] },
      { admit: 'b3', seq: 2, expect: 'no-start' },
      { admit: 'a2', seq: 1, flags: 'E' },
      { take: 0, expect: ['a1'] },
      { take: 0, expect: ['a2'] },
      { take: 0, expect: ['c1'] },
    ],
  },
  {
    name: 'a request that is not queued (taken, or never admitted) cancels nothing',
    instances: 1,
    slots: 1,
    steps: [
      { admit: 'a1', seq: 1, flags: 'S' },
      { admit: 'a2', seq: 1 },
      { take: 0, expect: ['a1'] },
      { cancel: 'a1', expect: [] },
      { cancel: 'zz', expect: [] },
      { take: 0, expect: ['a2'] },
    ],
  },
];

for (const c of cases) {
  test(`SequenceSlots: ${c.name}`, () => {
    const slots = new SequenceSlots<string>(c.instances, c.slots);
    for (const step of c.steps) {
      if ('admit' in step) {
        const flags = { start: step.flags?.includes('S') === true, end: step.flags?.includes('E') === true };
        const r = slots.admit(sequenceKey(step.seq), flags, step.admit, step.at ?? 0);
        if (step.expect !== undefined) assert.equal(r, step.expect, `admit ${step.admit}`);
      } else if ('take' in step) {
        assert.deepEqual(slots.take(step.take, step.at ?? 0), step.expect);
      } else if ('requeue' in step) {
        const r = slots.requeue(sequenceKey(step.seq), step.requeue, step.at ?? 0);
        if (step.expect !== undefined) assert.equal(r, step.expect, `requeue ${step.requeue}`);
      } else if ('finish' in step) {
        slots.finish(sequenceKey(step.finish));
      } else if ('cancel' in step) {
        assert.deepEqual(slots.cancel(step.cancel), step.expect, `cancel ${step.cancel}`);
      } else {
        const held = step.held === undefined ? undefined : new Set(step.held.map(sequenceKey));
        assert.deepEqual(slots.expireIdle(step.expire, step.idle, held === undefined ? undefined : (k) => held.has(k)), step.expect);
      }
    }
  });
}

test('SequenceSlots: a new sequence takes the lowest free slot position on any instance, so executions stay small', () => {
  const slots = new SequenceSlots<string>(2, 3);
  const flags = (f: string): { start: boolean; end: boolean } => ({ start: true, end: f === 'SE' });
  // Positions fill across instances before going higher: 0 on each, then 1, then 2.
  const seqs: [string, string][] = [
    ['a', 'SE'],
    ['b', 'S'],
    ['c', 'S'],
    ['d', 'SE'],
    ['e', 'S'],
    ['f', 'SE'],
  ];
  for (const [seq, f] of seqs) slots.admit(seq, flags(f), `${seq}1`, 0);
  assert.deepEqual(
    ['b', 'c', 'e'].map((k) => slots.slotOf(k)),
    [
      [1, 0],
      [0, 1],
      [0, 2],
    ],
  );
  assert.deepEqual(slots.take(0, 0), ['a1', 'c1', 'e1']);
  assert.deepEqual(slots.take(1, 0), ['b1', 'd1', 'f1']);
  // Free now: position 0 of instance 0 (which holds two), positions 1 and 2 of instance 1 (which holds one).
  slots.admit('g', flags('S'), 'g1', 0);
  assert.deepEqual(slots.slotOf('g'), [0, 0], 'the lowest position, not the emptier instance');
});

test('SequenceSlots: heads shows each slot position; takeSlots takes only the positions asked for', () => {
  const slots = new SequenceSlots<string>(1, 3);
  slots.admit('a', { start: true, end: false }, 'a1', 0);
  slots.admit('b', { start: true, end: false }, 'b1', 0);
  slots.admit('c', { start: true, end: false }, 'c1', 0);
  slots.admit('b', { start: false, end: false }, 'b2', 0);
  assert.deepEqual(slots.takeSlots(0, [1], 0), ['b1']);
  slots.admit('a', { start: false, end: false }, 'a2', 0);
  assert.deepEqual(slots.heads(0), ['a1', 'b2', 'c1']);
  assert.deepEqual(slots.takeSlots(0, [0, 2], 0), ['a1', 'c1']);
  assert.deepEqual(slots.heads(0), ['a2', 'b2', undefined]);
});

test('SequenceSlots: needs at least one instance and slot', () => {
  assert.throws(() => new SequenceSlots(0, 1), /at least one instance and one slot, got 0 x 1/);
});
