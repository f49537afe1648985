/**
 * Bounded model churn (bench/model-churn.ts with 8 cycles): steady traffic
 * to A while B (ONNX) and C (Python, one stub process) are loaded and
 * unloaded repeatedly and A moves to new versions twice. No request to A or
 * C fails; the server's threads, child processes, /dev/shm files and fds on
 * them come back to where they were.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { churnServer, runChurn } from '../../bench/model-churn';

test('model churn under load: zero failed requests, no leaked threads, processes or /dev/shm files', async () => {
  const s = await churnServer();
  try {
    const r = await runChurn(s.url, s.pid, s.repo, 8);
    assert.deepEqual(r.failures, []);
    assert.equal(r.failedA, 0);
    assert.ok(r.requestsA > 0);
    assert.ok(r.versionsA.includes('3'), `A served versions ${r.versionsA.join(',')}`);
    assert.ok(r.threadsAfter <= r.threadsBefore, `threads before ${r.threadsBefore}, after ${r.threadsAfter}`);
    assert.equal(r.failedC, 0);
    assert.ok(r.childrenPeak > r.childrenBefore, `C's stub was seen (children ${r.childrenBefore} → peak ${r.childrenPeak})`);
    assert.ok(r.childrenAfter <= r.childrenBefore, `child processes before ${r.childrenBefore}, after ${r.childrenAfter}`);
    assert.ok(r.shmFilesAfter <= r.shmFilesBefore, `/dev/shm files before ${r.shmFilesBefore}, after ${r.shmFilesAfter}`);
    assert.ok(r.shmFdsAfter <= r.shmFdsBefore, `fds on /dev/shm files before ${r.shmFdsBefore}, after ${r.shmFdsAfter}`);
  } finally {
    await s.stop();
  }
});
