/**
 * The restart delays of a frontend thread that keeps dying
 * (src/frontend/thread-restarts.ts RestartBackoff): 0 for the first death in
 * the window, then 100 ms doubling to the 5 s cap; deaths older than 60 s
 * are forgotten.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RestartBackoff } from '../../src/frontend/thread-restarts';

const cases: { what: string; deathsAt: number[]; delays: number[] }[] = [
  { what: 'one death: restart at once', deathsAt: [0], delays: [0] },
  { what: 'repeated deaths double from 100 ms', deathsAt: [0, 10, 20, 30, 40], delays: [0, 100, 200, 400, 800] },
  { what: 'the cap is 5 s', deathsAt: [0, 1, 2, 3, 4, 5, 6, 7, 8], delays: [0, 100, 200, 400, 800, 1600, 3200, 5000, 5000] },
  { what: 'deaths older than the 60 s window are forgotten', deathsAt: [0, 1000, 61_500], delays: [0, 100, 0] },
  { what: 'a death just inside the window still counts', deathsAt: [0, 59_999], delays: [0, 100] },
];

for (const c of cases) {
  test(`restart backoff: ${c.what}`, () => {
    const b = new RestartBackoff();
    assert.deepEqual(
      c.deathsAt.map((t) => b.next(t)),
      c.delays,
    );
  });
}
