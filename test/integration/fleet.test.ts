/**
 * A fleet of three real nodetron processes behind a real nginx, scraped by a
 * real Prometheus, all on loopback. Under steady load through nginx, a
 * rolling restart replaces every replica one at a time: each one's readiness
 * turns 503 right after SIGTERM, it exits 0 within --exit-timeout-secs, and
 * not one request fails. Prometheus, asked over its HTTP API, counts the
 * fleet's requests across the restarts and sees the pending-request gauge
 * (the HPA's signal) rise under a burst on a slow model and fall back.
 * Bounded: about 30-60 s. Skipped, saying so, where nginx or Prometheus is
 * not installed (.ci/run installs both).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { EXIT_TIMEOUT_SECS, Fleet, percentile } from './fleet-kit';
import { NGINX, PROMETHEUS } from './fleet-proxies';
import { recordSkip } from './needs';

const missing = [NGINX, PROMETHEUS].filter((p) => !fs.existsSync(p));
const skip = missing.length > 0 ? recordSkip(`not installed: ${missing.join(', ')} (apt-get install nginx-light prometheus)`) : false;
let fleet: Fleet;

before(
  async () => {
    if (skip) return;
    fleet = new Fleet();
    await fleet.start(3);
  },
  { timeout: 90_000 },
);

after(async () => {
  await fleet?.stop();
});

test('a rolling restart under steady load through nginx fails no request', { skip, timeout: 120_000 }, async (t) => {
  let endLoad!: () => void;
  const loading = fleet.steadyLoad(new Promise<void>((r) => (endLoad = r)));
  await new Promise((r) => setTimeout(r, 1000));
  const rollStart = Date.now();
  const drains = await fleet.roll().finally(() => setTimeout(endLoad, 1000));
  const rollMs = Date.now() - rollStart;
  const load = await loading;
  const p99 = percentile(load.duringRoll, 99);
  t.diagnostic(
    `sent ${load.sent}, failed ${load.failed}, ${load.duringRoll.length} during the ${rollMs} ms roll, p50 ${percentile(load.duringRoll, 50).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`,
  );
  for (const d of drains)
    t.diagnostic(
      `replica ${d.replica}: readiness 503 after ${d.readinessDownMs} ms, exit ${d.exitCode} after ${d.stopMs} ms, replacement ready in ${d.replaceMs} ms`,
    );

  assert.deepEqual(load.failures, []);
  assert.equal(load.failed, 0);
  assert.ok(load.duringRoll.length >= 100, `only ${load.duringRoll.length} requests during the roll`);
  for (const d of drains) {
    assert.equal(d.exitCode, 0, `replica ${d.replica} exited ${d.exitCode}`);
    assert.ok(d.readinessDownMs >= 0 && d.readinessDownMs < 1000, `replica ${d.replica}: readiness 503 after ${d.readinessDownMs} ms (want < 1000)`);
    assert.ok(d.stopMs <= EXIT_TIMEOUT_SECS * 1000 + 2000, `replica ${d.replica} took ${d.stopMs} ms to stop`);
  }

  // Prometheus counts what the fleet served, across the three counter resets.
  await fleet.waitScrape();
  assert.equal(await fleet.promTargetsUp(), 3);
  const counted = await fleet.promSuccesses('simple');
  t.diagnostic(`Prometheus: nv_inference_request_success{model="simple"} over the fleet's six processes = ${counted} of ${load.sent} answered`);
  // What a replica served after its last scrape is not seen; with a scrape every 250 ms that is a few percent at most.
  assert.ok(counted <= load.sent && counted >= load.sent * 0.9, `Prometheus counted ${counted}, the client had ${load.sent} answered`);
});

test('Prometheus sees the pending-request gauge rise under a burst and fall back', { skip, timeout: 60_000 }, async (t) => {
  await fleet.loadEverywhere('slow');
  await fleet.waitScrape();
  const idle = await fleet.promPendingNow();
  const t0 = Date.now() / 1000;
  const failed = await fleet.burst(120);
  const t1 = Date.now() / 1000;
  await fleet.waitScrape();
  const peak = await fleet.promPendingMax(t0, t1);
  const afterBurst = await fleet.promPendingNow();
  t.diagnostic(
    `sum(nv_inference_pending_request_count): ${idle} idle, peak ${peak} during the ${((t1 - t0) * 1000).toFixed(0)} ms burst of 120, ${afterBurst} after`,
  );
  assert.equal(failed, 0);
  assert.equal(idle, 0);
  assert.ok(peak >= 10, `the pending gauge peaked at ${peak} under a burst of 120 on a 40 ms model (want >= 10)`);
  assert.equal(afterBurst, 0);
});
