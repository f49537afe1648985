/**
 * Data-plane families on /metrics, read only when scraped (prom-client
 * collect callbacks: the rings and the arena do nothing extra):
 *  - nodetron_dataplane_missed_wakeups_total, _safety_poll_recoveries_total:
 *    the doorbells' wake-up counters summed over every bell the server made
 *    (retired bells included); both stay 0 unless something is wrong.
 *  - nodetron_arena_used_bytes: bytes held in the shared tensor arena.
 *  - nodetron_dataplane_direct_responses_total: responses an instance thread
 *    sent straight to the HTTP or gRPC thread of the client's connection
 *    (the rest go through the main thread: Python models, response cache,
 *    ensembles, BLS, sequence batching, preserve_ordering).
 * The composition root provides the source; metrics/ does not import the
 * data plane.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export interface DataplaneSource {
  wakeups(): { missedWakeups: number; safetyPollRecoveries: number };
  arenaUsedBytes(): number;
  directResponses(): number;
  /**
   * Deliver what the rings into main hold now (the statistics of requests
   * run inline on the HTTP threads come on rings rung lazily): called before
   * the statistics are read.
   */
  settle(): void;
}

export function registerDataplaneMetrics(registry: Registry, source: DataplaneSource): void {
  const registers = [registry];
  // A counter's value is the running total read at scrape time.
  const total = (c: Counter, value: number): void => {
    c.reset();
    c.inc(value);
  };
  new Counter({
    name: 'nodetron_dataplane_missed_wakeups_total',
    help: 'Doorbell wake-ups no producer rang, delivered late by the safety poll (a bug if not 0)',
    registers,
    collect() {
      total(this, source.wakeups().missedWakeups);
    },
  });
  new Counter({
    name: 'nodetron_dataplane_safety_poll_recoveries_total',
    help: "Times a ring consumer's safety poll delivered messages a wake-up should have (any cause)",
    registers,
    collect() {
      total(this, source.wakeups().safetyPollRecoveries);
    },
  });
  new Counter({
    name: 'nodetron_dataplane_direct_responses_total',
    help: 'Responses sent by an instance thread straight to the frontend thread of the connection, not through the main thread',
    registers,
    collect() {
      total(this, source.directResponses());
    },
  });
  new Gauge({
    name: 'nodetron_arena_used_bytes',
    help: 'Bytes held by allocated blocks of the shared tensor arena',
    registers,
    collect() {
      this.set(source.arenaUsedBytes());
    },
  });
}
