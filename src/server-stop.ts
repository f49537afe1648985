/**
 * How the server stops: the graceful verb (SIGTERM/SIGINT) runs the timeline
 * of stop-plan.ts, serve → close → unload, within --exit-timeout-secs; the
 * forced verb (a second signal) ends everything now. Both idempotent, and
 * the forced one may interrupt the graceful one. Never process.exit here:
 * cli.ts exits once a verb resolved, when no thread holds a socket and no
 * instance runs, so the process ends with its exit code, not a native abort.
 *
 * Log lines are Triton's (server.cc): "Waiting for in-flight requests to
 * complete.", once a second "Timeout N: Found K model versions that have
 * in-flight inferences" (with one line per version), "All models are
 * stopped, unloading models", then once a second "Timeout N: Found M live
 * models and 0 in-flight non-inference requests" until none is left; one
 * line of ours says why and when the endpoints close.
 */
import type { Logger } from './logging/logger';
import { secondsLeft, serveVerdict, stopTimeline, unloadDeadline } from './stop-plan';

export interface InflightVersion {
  model: string;
  version: number;
  count: number;
}

/** What the stop drives; server.ts gives it the parts. */
export interface StopParts {
  log: Logger;
  timeoutSecs: number;
  /** --exit-quiet-ms: serving ends once nothing was in flight or arriving for this long. */
  quietMs: number;
  /** Readiness turns non-200 now (the snapshot says exiting); inferences are still served. */
  announce(): void;
  inflight(): InflightVersion[];
  /** When the last client inference request reached the server (Date.now() ms; 0: none yet). */
  lastArrivalMs(): number;
  /** The frontends refuse new requests, answer the received ones and close, after graceMs at the latest: resolves with the requests cut. */
  closeFrontends(graceMs: number): Promise<number>;
  /** Every model unloads: schedulers drain, instances finalize. */
  unload(): Promise<void>;
  liveModels(): number;
  /** Every instance killed now. */
  killModels(): Promise<void>;
  /** Last, once: metrics endpoint, main inbox, log flush. */
  finish(): Promise<void>;
}

export interface StopOutcome {
  /** Every request received was answered and every model unloaded in time: exit 0. */
  clean: boolean;
}

/** How often the serve phase looks at the traffic. */
const TICK_MS = 50;
/** How long the drains may take once the instances were killed. */
const KILLED_DRAIN_MS = 2000;

export class ServerStop {
  private graceful: Promise<StopOutcome> | undefined;
  private forced: Promise<void> | undefined;
  private finished: Promise<void> | undefined;
  private forcing = false;

  constructor(private readonly parts: StopParts) {}

  /** The graceful stop; `serve` false (a start that failed: no client yet) skips the grace period. Idempotent. */
  stop(serve = true): Promise<StopOutcome> {
    this.graceful ??= this.run(serve);
    return this.graceful;
  }

  /** The forced stop: endpoints close and instances are killed now. Idempotent. */
  force(): Promise<void> {
    this.forced ??= (async () => {
      this.forcing = true;
      this.parts.log.warn('Stopping now: open connections are closed and model instances killed');
      await Promise.all([this.parts.closeFrontends(0), this.parts.killModels()]);
      await this.finish();
    })();
    return this.forced;
  }

  private finish(): Promise<void> {
    this.finished ??= this.parts.finish();
    return this.finished;
  }

  private async run(serve: boolean): Promise<StopOutcome> {
    const p = this.parts;
    const start = Date.now();
    const timeline = stopTimeline(start, p.timeoutSecs);
    p.announce();
    p.log.info('Waiting for in-flight requests to complete.');

    // Serve: until quiet, or until the timeout keeps only its reserve.
    let logged = -Infinity;
    while (serve) {
      const now = Date.now();
      const versions = p.inflight();
      if (now - logged >= 1000) {
        this.logInflight(secondsLeft(now, timeline.deadline), versions);
        logged = now;
      }
      if (this.forcing) break;
      const inflight = versions.reduce((n, v) => n + v.count, 0);
      const verdict = serveVerdict({ nowMs: now, startMs: start, serveEnd: timeline.serveEnd, inflight, lastArrivalMs: p.lastArrivalMs(), quietMs: p.quietMs });
      if (verdict !== 'serve') {
        p.log.info(
          verdict === 'quiet'
            ? `Closing the endpoints: no inference in flight and none received for ${p.quietMs} ms (--exit-quiet-ms)`
            : `Closing the endpoints: the grace period is over; the last ${((timeline.deadline - now) / 1000).toFixed(1)} s ` +
                'of --exit-timeout-secs are for the requests in flight and the unload',
        );
        break;
      }
      await new Promise((r) => setTimeout(r, TICK_MS));
    }

    // Close: nothing new is taken; what was received is answered.
    const cut = await p.closeFrontends(Math.max(0, timeline.closeEnd - Date.now()));
    if (cut > 0) p.log.error(`${cut} request(s) still in flight when the endpoints had to close were cut (--exit-timeout-secs=${p.timeoutSecs})`);
    this.logInflight(secondsLeft(Date.now(), timeline.deadline), p.inflight());

    // Unload: schedulers drain (ensemble steps, BLS, requests whose client is gone), instances finalize.
    p.log.info('All models are stopped, unloading models');
    const end = unloadDeadline(timeline, Date.now());
    let unloaded = false;
    const unloading = p.unload().then(() => {
      unloaded = true;
    });
    while (!unloaded && !this.forcing) {
      const now = Date.now();
      if (now >= end) break;
      this.logLive(secondsLeft(now, timeline.deadline));
      await Promise.race([unloading, new Promise((r) => setTimeout(r, Math.min(1000, end - now)))]);
    }
    if (!unloaded) {
      await p.killModels();
      // The drains end once the killed instances failed their batches; bounded all the same.
      await Promise.race([unloading, new Promise((r) => setTimeout(r, KILLED_DRAIN_MS))]);
    }
    this.logLive(secondsLeft(Date.now(), timeline.deadline));
    await this.finish();
    return { clean: cut === 0 && unloaded && !this.forcing };
  }

  private logInflight(left: number, versions: InflightVersion[]): void {
    const log = this.parts.log;
    log.info(`Timeout ${left}: Found ${versions.length} model versions that have in-flight inferences`);
    for (const v of versions) log.info(`Model '${v.model}' (version ${v.version}) has ${v.count} in-flight inferences`);
  }

  private logLive(left: number): void {
    this.parts.log.info(`Timeout ${left}: Found ${this.parts.liveModels()} live models and 0 in-flight non-inference requests`);
  }
}
