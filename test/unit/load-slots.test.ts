import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LoadSlots } from '../../src/repository/load-slots';

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

for (const threads of [1, 2, 4]) {
  test(`LoadSlots: at most ${threads} builds at once, all finish`, async () => {
    const slots = new LoadSlots(threads, 0);
    let now = 0;
    let most = 0;
    const build = async (i: number): Promise<number> => {
      now++;
      most = Math.max(most, now);
      await tick();
      await tick();
      now--;
      return i;
    };
    const out = await Promise.all(Array.from({ length: 9 }, (_, i) => slots.run(() => build(i))));
    assert.deepEqual(out, [0, 1, 2, 3, 4, 5, 6, 7, 8]);
    assert.equal(most, threads);
    assert.equal(slots.running(), 0);
  });
}

const retryCases: { retries: number; failures: number; ok: boolean; attempts: number }[] = [
  { retries: 0, failures: 0, ok: true, attempts: 1 },
  { retries: 0, failures: 1, ok: false, attempts: 1 },
  { retries: 2, failures: 2, ok: true, attempts: 3 },
  { retries: 2, failures: 5, ok: false, attempts: 3 },
];
for (const c of retryCases) {
  test(`LoadSlots: retries ${c.retries}, ${c.failures} failures → ${c.ok ? 'loads' : 'fails'} after ${c.attempts} attempts`, async () => {
    const retried: number[] = [];
    const slots = new LoadSlots(1, c.retries);
    let attempts = 0;
    const p = slots.run(
      async () => {
        attempts++;
        if (attempts <= c.failures) throw new Error(`failure ${attempts}`);
        return 'ok';
      },
      (n) => retried.push(n),
    );
    if (c.ok) assert.equal(await p, 'ok');
    else await assert.rejects(p, { message: `failure ${c.attempts}` });
    assert.equal(attempts, c.attempts);
    assert.deepEqual(
      retried,
      Array.from({ length: c.attempts - 1 }, (_, i) => i + 1),
    );
    assert.equal(slots.running(), 0);
  });
}
