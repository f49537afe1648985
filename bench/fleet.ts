/**
 * `npm run bench:fleet`: the fleet test's run, with its figures printed:
 * three nodetron replicas behind nginx, Prometheus scraping them, steady
 * load through nginx, a rolling restart one replica at a time, then a burst
 * on a slow model. Prints requests sent, failed, latency percentiles during
 * the roll, each replica's drain, what Prometheus counted and the pending
 * gauge's peak. Needs nginx-light and prometheus (Debian packages).
 *
 *   node dist/bench/fleet.js [--replicas=3] [--workers=4] [--every-ms=20] [--burst=120]
 */
import { Fleet, percentile } from '../test/integration/fleet-kit';

function arg(name: string, dflt: number): number {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a ? Number(a.slice(name.length + 3)) : dflt;
}

async function main(): Promise<void> {
  const replicas = arg('replicas', 3);
  const fleet = new Fleet();
  try {
    await fleet.start(replicas);
    console.log(`fleet: ${replicas} replicas behind nginx at ${fleet.url}, Prometheus at http://127.0.0.1:${fleet.prometheus.port}`);
    let endLoad!: () => void;
    const loading = fleet.steadyLoad(new Promise<void>((r) => (endLoad = r)), arg('workers', 4), arg('every-ms', 20));
    await new Promise((r) => setTimeout(r, 1000));
    const t0 = Date.now();
    const drains = await fleet.roll().finally(() => setTimeout(endLoad, 1000));
    const rollMs = Date.now() - t0;
    const load = await loading;
    const roll = load.duringRoll;
    console.log(
      `rolling restart: ${rollMs} ms; requests sent ${load.sent}, failed ${load.failed}; during the roll ${roll.length}, ` +
        `p50 ${percentile(roll, 50).toFixed(1)} ms, p99 ${percentile(roll, 99).toFixed(1)} ms, max ${Math.max(...roll).toFixed(1)} ms`,
    );
    for (const f of load.failures) console.log(`  failed: ${f}`);
    for (const d of drains) {
      console.log(
        `  replica ${d.replica}: readiness 503 after ${d.readinessDownMs} ms, exit ${d.exitCode} after ${d.stopMs} ms, replacement ready in ${d.replaceMs} ms`,
      );
    }
    await fleet.waitScrape();
    console.log(
      `Prometheus: ${await fleet.promSuccesses('simple')} successful requests counted over the fleet's processes, ${await fleet.promTargetsUp()} targets up`,
    );
    await fleet.loadEverywhere('slow');
    await fleet.waitScrape();
    const n = arg('burst', 120);
    const b0 = Date.now() / 1000;
    const failed = await fleet.burst(n);
    const b1 = Date.now() / 1000;
    await fleet.waitScrape();
    console.log(
      `burst of ${n} on 'slow' (40 ms each, one instance per replica): ${failed} failed in ${((b1 - b0) * 1000).toFixed(0)} ms; ` +
        `sum(nv_inference_pending_request_count) peaked at ${await fleet.promPendingMax(b0, b1)}, now ${await fleet.promPendingNow()}`,
    );
  } finally {
    await fleet.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
