/**
 * A local fleet, as the fleet test and `bench/fleet.ts` run it: N real
 * nodetron processes (each on fixed loopback ports, so a replacement takes
 * its predecessor's place), nginx in front, Prometheus scraping them; steady
 * load through nginx, a rolling restart one replica at a time, and a burst
 * on a slow model to raise the pending-request gauge the HPA would read.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, promCounterTotal, promQuery, promRangeMax, startNginx, startPrometheus, type Helper } from './fleet-proxies';
import { SIMPLE_BODY } from './repo-kit';
import { MODEL_REPOSITORY, REPO_ROOT, startServer, type ServerProcess } from './server-process';

/** The drain each replica runs: serve 1.5 s, close by 2.25 s, exit by 3 s (stop-plan.ts). */
export const EXIT_TIMEOUT_SECS = 3;

export interface Replica {
  httpPort: number;
  metricsPort: number;
  server: ServerProcess;
}

export interface DrainRecord {
  replica: number;
  /** ms from SIGTERM to the first 503 of the replica's own /v2/health/ready. */
  readinessDownMs: number;
  exitCode: number | null;
  /** ms from SIGTERM to exit. */
  stopMs: number;
  /** ms from the replacement's start to its ready 200. */
  replaceMs: number;
}

export interface LoadResult {
  sent: number;
  failed: number;
  failures: string[];
  /** Latencies (ms) of the requests that started while a roll was on. */
  duringRoll: number[];
}

export class Fleet {
  readonly replicas: Replica[] = [];
  nginx!: Helper;
  prometheus!: Helper;
  private readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-fleet-'));
  readonly repo = path.join(this.dir, 'models');
  private rolling = false;
  private startedAt = Date.now();

  /** Start `count` replicas (in parallel), then nginx and Prometheus before them. */
  async start(count: number): Promise<void> {
    this.startedAt = Date.now();
    fs.mkdirSync(this.repo);
    fs.cpSync(path.join(MODEL_REPOSITORY, 'simple'), path.join(this.repo, 'simple'), { recursive: true });
    fs.cpSync(path.join(REPO_ROOT, 'test/integration/fixtures/fleet_models/slow'), path.join(this.repo, 'slow'), { recursive: true });
    const ports: { http: number; metrics: number }[] = [];
    for (let i = 0; i < count; i++) ports.push({ http: await freePort(), metrics: await freePort() });
    const servers = await Promise.all(ports.map((p) => this.launch(p.http, p.metrics)));
    servers.forEach((server, i) => this.replicas.push({ httpPort: ports[i].http, metricsPort: ports[i].metrics, server }));
    this.nginx = await startNginx(
      this.dir,
      ports.map((p) => p.http),
    );
    this.prometheus = await startPrometheus(
      this.dir,
      ports.map((p) => p.metrics),
    );
  }

  get url(): string {
    return `http://127.0.0.1:${this.nginx.port}`;
  }

  private launch(httpPort: number, metricsPort: number): Promise<ServerProcess> {
    return startServer([
      `--model-repository=${this.repo}`,
      `--http-port=${httpPort}`,
      '--http-address=127.0.0.1',
      `--metrics-port=${metricsPort}`,
      '--http-thread-count=1',
      `--exit-timeout-secs=${EXIT_TIMEOUT_SECS}`,
      // `slow` (a Python stub) only when a burst asks for it: a replacement starts faster without it.
      '--model-control-mode=explicit',
      '--load-model=simple',
    ]);
  }

  /** Load `model` on every replica through its repository API (a rollout by explicit load, one replica at a time). */
  async loadEverywhere(model: string): Promise<void> {
    for (const r of this.replicas) {
      const res = await fetch(`http://127.0.0.1:${r.httpPort}/v2/repository/models/${model}/load`, { method: 'POST' });
      if (res.status !== 200) throw new Error(`load ${model} on replica ${r.httpPort}: ${res.status} ${await res.text()}`);
    }
  }

  /**
   * Steady load through nginx until `stop` resolves: `workers` loops, each
   * sending one inference on `simple` every `everyMs`; a non-200 answer, a
   * wrong sum or a transport error is a failure.
   */
  async steadyLoad(stop: Promise<void>, workers = 4, everyMs = 20): Promise<LoadResult> {
    const result: LoadResult = { sent: 0, failed: 0, failures: [], duringRoll: [] };
    let done = false;
    void stop.then(() => (done = true));
    const loop = async (): Promise<void> => {
      while (!done) {
        const t0 = performance.now();
        const inRoll = this.rolling;
        result.sent++;
        const problem = await fetch(`${this.url}/v2/models/simple/infer`, {
          method: 'POST',
          body: SIMPLE_BODY,
          headers: { 'Content-Type': 'application/json' },
        }).then(
          async (res) => {
            const text = await res.text();
            if (res.status !== 200) return `${res.status} ${text.slice(0, 200)}`;
            const out = (JSON.parse(text) as { outputs: { name: string; data: number[] }[] }).outputs.find((o) => o.name === 'OUTPUT0');
            return out?.data[3] === 4 ? '' : `wrong answer ${text.slice(0, 200)}`;
          },
          (err: Error & { cause?: Error }) => `transport: ${err.message} ${err.cause?.message ?? ''}`,
        );
        const ms = performance.now() - t0;
        if (inRoll || this.rolling) result.duringRoll.push(ms);
        if (problem) {
          result.failed++;
          if (result.failures.length < 20) result.failures.push(problem);
        }
        await new Promise((r) => setTimeout(r, Math.max(0, everyMs - ms)));
      }
    };
    await Promise.all(Array.from({ length: workers }, loop));
    return result;
  }

  /** Replace every replica, one at a time: SIGTERM, watch readiness drop, wait for exit, start a new one on the same ports, wait for ready. */
  async roll(): Promise<DrainRecord[]> {
    const records: DrainRecord[] = [];
    this.rolling = true;
    try {
      for (let i = 0; i < this.replicas.length; i++) {
        const r = this.replicas[i];
        const t0 = Date.now();
        let readinessDownMs = -1;
        let watching = true;
        const watch = (async () => {
          while (watching && readinessDownMs < 0) {
            const status = await fetch(`http://127.0.0.1:${r.httpPort}/v2/health/ready`).then(
              (res) => res.status,
              () => 0,
            );
            if (status === 503) readinessDownMs = Date.now() - t0;
            await new Promise((res) => setTimeout(res, 20));
          }
        })();
        const exitCode = await r.server.stop({ checkArena: false });
        watching = false;
        await watch;
        const stopMs = Date.now() - t0;
        const t1 = Date.now();
        r.server = await this.launch(r.httpPort, r.metricsPort);
        await waitReady(r.httpPort);
        records.push({ replica: i, readinessDownMs, exitCode, stopMs, replaceMs: Date.now() - t1 });
      }
    } finally {
      this.rolling = false;
    }
    return records;
  }

  /** `count` concurrent inferences on `slow` through nginx; how many did not answer 200. */
  async burst(count: number): Promise<number> {
    const body = JSON.stringify({ inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [7] }] });
    const statuses = await Promise.all(
      Array.from({ length: count }, () =>
        fetch(`${this.url}/v2/models/slow/infer`, { method: 'POST', body, headers: { 'Content-Type': 'application/json' } }).then(
          async (res) => {
            await res.arrayBuffer();
            return res.status;
          },
          () => 0,
        ),
      ),
    );
    return statuses.filter((s) => s !== 200).length;
  }

  /** The fleet's successful requests on a model since it started, as Prometheus's samples count them across the restarts. */
  promSuccesses(model: string): Promise<number> {
    const windowS = Math.ceil((Date.now() - this.startedAt) / 1000) + 5;
    return promCounterTotal(this.prometheus.port, `nv_inference_request_success{model="${model}"}`, windowS);
  }

  /** The highest fleet-wide pending-request count Prometheus saw between start and end (seconds). */
  promPendingMax(startS: number, endS: number): Promise<number> {
    return promRangeMax(this.prometheus.port, 'sum(nv_inference_pending_request_count)', startS, endS, 0.25);
  }

  /** The fleet-wide pending-request count in Prometheus's newest scrapes. */
  async promPendingNow(): Promise<number> {
    const rows = await promQuery(this.prometheus.port, 'sum(nv_inference_pending_request_count)');
    return rows[0]?.value ?? NaN;
  }

  /** Targets Prometheus scrapes successfully now. */
  async promTargetsUp(): Promise<number> {
    const rows = await promQuery(this.prometheus.port, 'sum(up{job="nodetron"})');
    return rows[0]?.value ?? 0;
  }

  /** Until a scrape newer than now reached every target (so a query sees what happened until now). */
  async waitScrape(timeoutMs = 10_000): Promise<void> {
    const since = Date.now() / 1000;
    const end = Date.now() + timeoutMs;
    for (;;) {
      const rows = await promQuery(this.prometheus.port, 'min(timestamp(up{job="nodetron"}))');
      if ((rows[0]?.value ?? 0) > since) return;
      if (Date.now() > end) throw new Error(`Prometheus did not scrape every replica within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.replicas.map((r) => r.server.stop({ checkArena: false }).catch(() => undefined)));
    await Promise.all([this.nginx?.stop(), this.prometheus?.stop()]);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

async function waitReady(port: number, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (
    (await fetch(`http://127.0.0.1:${port}/v2/health/ready`).then(
      (r) => r.status,
      () => 0,
    )) !== 200
  ) {
    if (Date.now() > end) throw new Error(`replica on ${port} not ready within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The p-th percentile (0..100) of `xs`, nearest rank; NaN when empty. */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
