/**
 * OncePerClient (frontend/once-per-client.ts): each reason is logged once
 * per client address, reasons apart, and the memory of a reason is
 * forgotten in one go at its limit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OncePerClient } from '../../src/frontend/once-per-client';

test('first(): true once per reason and client, then false; at the limit a reason starts over', () => {
  const once = new OncePerClient(2);
  const steps: [string, string, boolean][] = [
    ['408', 'a', true],
    ['408', 'a', false],
    ['503', 'a', true],
    ['408', 'b', true],
    ['408', 'b', false],
    ['408', 'c', true], // two were remembered: forgotten, then c
    ['408', 'a', true],
    ['503', 'a', false],
  ];
  for (const [reason, client, want] of steps) assert.equal(once.first(reason, client), want, `${reason} ${client}`);
});
