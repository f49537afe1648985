import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DoorbellTally } from '../../src/dataplane/doorbell-tally';
import { Inbox, RingWriter, createRing, doorbellCounters, type DoorbellHandle } from '../../src/dataplane/ring';
import { D_SLEEPING } from '../../src/dataplane/ring-format';

/** A real lost wake-up on `bell`: park an Inbox, hide SLEEPING, send; the safety poll delivers and counts. */
async function loseOneWakeup(bell: DoorbellHandle): Promise<void> {
  const h = createRing(bell, 1024);
  const inbox = new Inbox(bell, { safetyPollMs: 10 });
  let got = 0;
  inbox.add(h, () => got++);
  inbox.start();
  const words = new Int32Array(bell.sab);
  const deadline = Date.now() + 10_000;
  while (Atomics.load(words, D_SLEEPING) !== 1) {
    assert.ok(Date.now() < deadline, 'the inbox parks');
    await new Promise((r) => setTimeout(r, 1));
  }
  await new Promise((r) => setTimeout(r, 5));
  Atomics.store(words, D_SLEEPING, 0);
  RingWriter.attach(h).send('late');
  while (got === 0) {
    assert.ok(Date.now() < deadline, 'the safety poll delivers');
    await new Promise((r) => setTimeout(r, 5));
  }
  inbox.stop();
}

test('the tally sums the wake-up counters of its bells and keeps those of retired bells', async () => {
  const tally = new DoorbellTally();
  const a = tally.create();
  const b = tally.create();
  assert.equal(tally.size, 2);
  assert.deepEqual(tally.totals(), { missedWakeups: 0, safetyPollRecoveries: 0 });
  await loseOneWakeup(a);
  await loseOneWakeup(b);
  assert.deepEqual(doorbellCounters(a), { missedWakeups: 1, safetyPollRecoveries: 1 });
  assert.deepEqual(tally.totals(), { missedWakeups: 2, safetyPollRecoveries: 2 });
  tally.retire(a);
  tally.retire(a); // idempotent
  assert.equal(tally.size, 1);
  assert.deepEqual(tally.totals(), { missedWakeups: 2, safetyPollRecoveries: 2 });
  const c = tally.create();
  await loseOneWakeup(c);
  assert.deepEqual(tally.totals(), { missedWakeups: 3, safetyPollRecoveries: 3 });
  tally.retire(b);
  tally.retire(c);
  assert.equal(tally.size, 0);
  assert.deepEqual(tally.totals(), { missedWakeups: 3, safetyPollRecoveries: 3 });
});
