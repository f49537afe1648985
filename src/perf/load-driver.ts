/**
 * Drives one step of a sweep: a closed loop at a concurrency, or an open loop
 * at a request rate, measured in windows of `intervalMs` until three in a row
 * are stable (perf_analyzer's rule) or `maxTrials` windows have run. Server
 * statistics are read at each window boundary, so the server-side split is
 * the delta over exactly the windows reported.
 */
import { isStable, parseServerStats, serverSplit, summarize, type LatencySummary, type ServerSplit, type ServerStatsSnapshot, type Window } from './perf-math';

/** One connection (HTTP) or one stream slot on a shared channel (gRPC). */
export interface Sender {
  /** Resolves true for a successful inference. */
  send(): Promise<boolean>;
}

export interface Transport {
  open(): Promise<Sender>;
  close(): void;
}

export interface StepSpec {
  mode: 'concurrency' | 'rate';
  value: number;
  intervalMs: number;
  stabilityPct: number;
  maxTrials: number;
  percentile: number | undefined;
  batchSize: number;
  maxConnections: number;
  warmupMs?: number;
  /** count_windows: a window ends once this many requests completed (perf_analyzer --measurement-request-count), else after intervalMs. */
  windowRequests?: number;
  /** -v: called with each window as it closes. */
  onWindow?: (w: Window, index: number) => void;
}

export interface StepResult {
  mode: 'concurrency' | 'rate';
  value: number;
  stable: boolean;
  windows: number;
  requestsPerSec: number;
  inferencesPerSec: number;
  requests: number;
  errors: number;
  latency: LatencySummary;
  server: ServerSplit | undefined;
  /** Rate mode: sends that waited for a free connection. */
  delayed: number;
}

class WindowRecorder {
  latencies: number[] = [];
  errors = 0;
  readonly startNs = process.hrtime.bigint();
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** count_windows: until the window holds `n` requests, at most `capMs` (a stalled server still ends the window). */
async function untilCount(rec: WindowRecorder, n: number, capMs: number): Promise<void> {
  const end = Date.now() + capMs;
  while (rec.latencies.length < n && Date.now() < end) await sleep(2);
}

/** Keeps connections across steps: a sweep reuses what the previous step opened. */
export class SenderPool {
  readonly senders: Sender[] = [];
  constructor(private readonly transport: Transport) {}
  async ensure(n: number): Promise<void> {
    while (this.senders.length < n) await this.openOne();
  }
  async openOne(): Promise<Sender> {
    const s = await this.transport.open();
    this.senders.push(s);
    return s;
  }
}

export async function runStep(pool: SenderPool, spec: StepSpec, stats: (() => Promise<unknown>) | undefined, model: string): Promise<StepResult> {
  let rec = new WindowRecorder();
  let running = true;
  let delayed = 0;
  const timed = async (s: Sender): Promise<void> => {
    const t0 = process.hrtime.bigint();
    let ok = false;
    try {
      ok = await s.send();
    } catch {
      ok = false;
    }
    const r = rec;
    r.latencies.push(Number(process.hrtime.bigint() - t0) / 1000);
    if (!ok) {
      r.errors++;
      // A send that fails at once (a dead connection) must not starve the event loop: the window timers run on it.
      await new Promise((resolve) => setImmediate(resolve));
    }
  };

  let loops: Promise<void>;
  if (spec.mode === 'concurrency') {
    await pool.ensure(spec.value);
    loops = Promise.all(
      pool.senders.slice(0, spec.value).map(async (s) => {
        while (running) await timed(s);
      }),
    ).then(() => undefined);
  } else {
    loops = openLoop(
      pool,
      spec,
      () => running,
      timed,
      () => delayed++,
    );
  }

  const snapshot = async (): Promise<ServerStatsSnapshot | undefined> => {
    if (stats === undefined) return undefined;
    try {
      return parseServerStats(await stats(), model);
    } catch {
      return undefined;
    }
  };

  await sleep(spec.warmupMs ?? Math.min(500, spec.intervalMs / 2));
  const windows: Window[] = [];
  const snaps: (ServerStatsSnapshot | undefined)[] = [];
  rec = new WindowRecorder();
  snaps.push(await snapshot());
  while (windows.length < spec.maxTrials) {
    if (spec.windowRequests === undefined) await sleep(spec.intervalMs);
    else await untilCount(rec, spec.windowRequests, spec.intervalMs * 10);
    const done = rec;
    rec = new WindowRecorder();
    const seconds = Number(process.hrtime.bigint() - done.startNs) / 1e9;
    windows.push({ count: done.latencies.length, errors: done.errors, seconds, latenciesUs: done.latencies });
    spec.onWindow?.(windows[windows.length - 1]!, windows.length);
    snaps.push(await snapshot());
    if (isStable(windows, spec.stabilityPct, spec.percentile)) break;
  }
  running = false;
  await loops;

  const used = windows.slice(-3);
  const count = used.reduce((n, w) => n + w.count, 0);
  const seconds = used.reduce((n, w) => n + w.seconds, 0);
  const all: number[] = [];
  for (const w of used) for (const l of w.latenciesUs) all.push(l);
  const before = snaps[snaps.length - 1 - used.length];
  const after = snaps[snaps.length - 1];
  const rps = count / seconds;
  return {
    mode: spec.mode,
    value: spec.value,
    stable: isStable(windows, spec.stabilityPct, spec.percentile),
    windows: windows.length,
    requestsPerSec: rps,
    inferencesPerSec: rps * spec.batchSize,
    requests: count,
    errors: used.reduce((n, w) => n + w.errors, 0),
    latency: summarize(all, spec.percentile),
    server: before !== undefined && after !== undefined ? serverSplit(before, after) : undefined,
    delayed,
  };
}

/**
 * Open loop: sends are due at a constant rate (`value` per second); each goes
 * to an idle sender, opening more up to `maxConnections`; when none is free it
 * waits (counted as delayed) and goes out as soon as one frees up. Ends once
 * `running()` is false and the sends in flight are answered. Also the soak
 * bench's pacer (bench/soak-traffic.ts).
 */
export async function openLoop(
  pool: SenderPool,
  spec: Pick<StepSpec, 'value' | 'maxConnections'>,
  running: () => boolean,
  timed: (s: Sender) => Promise<void>,
  onDelayed: () => void,
): Promise<void> {
  await pool.ensure(Math.min(spec.maxConnections, Math.max(1, Math.ceil(spec.value / 1000))));
  const idle = [...pool.senders];
  let backlog = 0;
  let opening = 0;
  const inflight = new Set<Promise<void>>();
  const fire = (s: Sender): void => {
    const p = timed(s).then(() => {
      inflight.delete(p);
      if (backlog > 0 && running()) {
        backlog--;
        fire(s);
      } else {
        idle.push(s);
      }
    });
    inflight.add(p);
  };
  const start = process.hrtime.bigint();
  let sent = 0;
  while (running()) {
    const due = Math.floor((Number(process.hrtime.bigint() - start) / 1e9) * spec.value) - sent;
    for (let i = 0; i < due; i++) {
      sent++;
      const s = idle.pop();
      if (s !== undefined) {
        fire(s);
        continue;
      }
      backlog++;
      onDelayed();
      if (pool.senders.length + opening < spec.maxConnections) {
        opening++;
        void pool.openOne().then(
          (fresh) => {
            opening--;
            if (backlog > 0 && running()) {
              backlog--;
              fire(fresh);
            } else {
              idle.push(fresh);
            }
          },
          () => opening--,
        );
      }
    }
    await sleep(1);
  }
  await Promise.all(inflight);
}
