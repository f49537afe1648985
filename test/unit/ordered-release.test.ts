/**
 * OrderedRelease (preserve_ordering): responses leave in dispatch order; a
 * request that gives up its place (`leave`: a rescheduled request that runs
 * on in another pool's line) releases what it holds at once and lets the
 * requests behind it move up.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InferResponse } from '../../src/core/request';
import { OrderedRelease, type OrderSlot } from '../../src/scheduler/ordered-release';

interface Slot extends OrderSlot {
  name: string;
}

/** A step: deliver a response (f = final, n = not final) to a request, or let a request leave. */
type Step = { deliver: string; final: boolean } | { leave: string };

const cases: { name: string; steps: Step[]; released: string[] }[] = [
  {
    name: 'answers wait for the earlier requests',
    steps: [
      { deliver: 'b', final: true },
      { deliver: 'c', final: false },
      { deliver: 'a', final: true },
      { deliver: 'c', final: true },
    ],
    released: ['a:f', 'b:f', 'c:n', 'c:f'],
  },
  {
    name: 'the head leaves: the finished requests behind it go out',
    steps: [{ deliver: 'b', final: true }, { deliver: 'a', final: false }, { leave: 'a' }, { deliver: 'c', final: true }],
    released: ['a:n', 'b:f', 'c:f'],
  },
  {
    name: 'a request in the middle leaves: what it holds goes out at once, the head still holds the rest back',
    steps: [{ deliver: 'b', final: false }, { deliver: 'c', final: true }, { leave: 'b' }, { deliver: 'a', final: true }],
    released: ['b:n', 'a:f', 'c:f'],
  },
  {
    name: 'leave after its final response, or a second time, changes nothing',
    steps: [{ deliver: 'a', final: true }, { leave: 'a' }, { leave: 'b' }, { leave: 'b' }, { deliver: 'c', final: true }],
    released: ['a:f', 'c:f'],
  },
];

for (const c of cases) {
  test(`OrderedRelease: ${c.name}`, () => {
    const released: string[] = [];
    const order = new OrderedRelease<Slot>((s, r) => released.push(`${s.name}:${r.final ? 'f' : 'n'}`));
    const slots = new Map(['a', 'b', 'c'].map((name) => [name, { name, held: null, finalSeen: false } as Slot]));
    for (const s of slots.values()) order.register(s);
    for (const step of c.steps) {
      const slot = slots.get('deliver' in step ? step.deliver : step.leave)!;
      if ('deliver' in step) order.deliver(slot, { outputs: [], final: step.final } as InferResponse);
      else order.leave(slot);
    }
    assert.deepEqual(released, c.released);
  });
}
