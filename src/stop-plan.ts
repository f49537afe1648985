/**
 * The timeline of a graceful stop (SIGTERM/SIGINT), as pure arithmetic over
 * `--exit-timeout-secs` (T) so it can be table-tested; server-stop.ts runs it.
 *
 *   0 ─ serve ─┬─ close ─────────┬─ unload ─┬─ T
 *    readiness │ listeners closed│ models   │ what is still running is
 *    non-200,  │ new requests    │ finalize │ killed: exit 1 with
 *    requests  │ refused, the    │          │ Triton's "Exit timeout
 *    served    │ received ones   │          │ expired"
 *              │ answered        │          │
 *        serveEnd            closeEnd     deadline
 *
 * Serve: from the signal, readiness answers non-200 and every request is
 * still served, so a load balancer has time to take the replica out. It
 * ends early once the replica is quiet: nothing in flight and no inference
 * request for `--exit-quiet-ms` (default 1 s; counted from the signal too, so even an idle
 * server keeps its port open that long for the balancer's last requests).
 * Readiness probes and other non-inference requests do not count: a
 * balancer probing every 100 ms must not hold the stop. Under steady
 * traffic serving goes on until T less the reserve (RESERVE_MAX_MS, or half
 * of T when T is short), which is kept for the rest.
 * Close: the frontends refuse what arrives from now on (503 "Server
 * exiting" with `Connection: close`; gRPC's shutdown text) and close once
 * every request they received has been answered, at closeEnd at the latest.
 * Unload: models stop (their schedulers drain what ensembles and BLS still
 * run) and their instances finalize, by the deadline; at least
 * MIN_UNLOAD_MS, so that `--exit-timeout-secs=0` still unloads idle models
 * cleanly.
 */

/** The most of T kept after serving, for the requests in flight to finish and the models to unload. */
export const RESERVE_MAX_MS = 5000;
/** What unloading always gets, whatever T is. */
export const MIN_UNLOAD_MS = 1000;

export interface StopTimeline {
  /** When serving ends at the latest (ms, the clock of `startMs`). */
  serveEnd: number;
  /** When the frontends close whatever they still hold. */
  closeEnd: number;
  /** When whatever still runs is killed. */
  deadline: number;
}

export function stopTimeline(startMs: number, timeoutSecs: number): StopTimeline {
  const t = Math.max(0, timeoutSecs) * 1000;
  const reserve = Math.min(RESERVE_MAX_MS, t / 2);
  return { serveEnd: startMs + t - reserve, closeEnd: startMs + t - reserve / 2, deadline: startMs + t };
}

export type ServeVerdict = 'serve' | 'quiet' | 'time';

/** Whether serving goes on at `nowMs`: 'quiet' and 'time' end it (the log says which). */
/**
 * `quietMs` (--exit-quiet-ms): nothing in flight and no inference request for
 * this long, and the balancer has let the replica go.
 */
export function serveVerdict(o: { nowMs: number; startMs: number; serveEnd: number; inflight: number; lastArrivalMs: number; quietMs: number }): ServeVerdict {
  if (o.nowMs >= o.serveEnd) return 'time';
  const quietSince = Math.max(o.startMs, o.lastArrivalMs);
  if (o.inflight === 0 && o.nowMs - quietSince >= o.quietMs) return 'quiet';
  return 'serve';
}

/** When unloading must be over: the deadline, but never less than MIN_UNLOAD_MS from its start. */
export function unloadDeadline(timeline: StopTimeline, unloadStartMs: number): number {
  return Math.max(timeline.deadline, unloadStartMs + MIN_UNLOAD_MS);
}

/** Triton's countdown in the stop's log lines: whole seconds left until the deadline. */
export function secondsLeft(nowMs: number, deadline: number): number {
  return Math.max(0, Math.ceil((deadline - nowMs) / 1000));
}
