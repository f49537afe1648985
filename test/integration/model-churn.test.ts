/**
 * Bounded model churn (bench/model-churn.ts with 20 cycles): steady traffic
 * to A while B is loaded and unloaded repeatedly and A moves to new versions
 * twice. No request to A fails and the server's thread count comes back.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { churnServer, runChurn } from '../../bench/model-churn';

test('model churn under load: zero failed requests to A, no leaked threads', async () => {
  const s = await churnServer();
  try {
    const r = await runChurn(s.url, s.pid, s.repo, 20);
    assert.deepEqual(r.failures, []);
    assert.equal(r.failedA, 0);
    assert.ok(r.requestsA > 0);
    assert.ok(r.versionsA.includes('3'), `A served versions ${r.versionsA.join(',')}`);
    assert.ok(r.threadsAfter <= r.threadsBefore, `threads before ${r.threadsBefore}, after ${r.threadsAfter}`);
  } finally {
    await s.stop();
  }
});
