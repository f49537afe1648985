/**
 * A bounded closed-loop HTTP load generator on node:http keep-alive
 * connections: `concurrency` loops, each sending the same request back to
 * back until `durationMs` has passed. Loopback only. It shares the machine's
 * cores with the server, which the results tables say.
 */
import http from 'node:http';

export interface LoadSpec {
  url: string;
  path: string;
  body: Buffer;
  headers: Record<string, string>;
  concurrency: number;
  durationMs: number;
  warmupMs?: number;
}

export interface LoadResult {
  concurrency: number;
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
}

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const u = new URL(spec.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: spec.concurrency });
  const headers = { ...spec.headers, 'Content-Length': String(spec.body.length) };
  const one = (): Promise<number> =>
    new Promise((resolve) => {
      const req = http.request({ host: u.hostname, port: u.port, path: spec.path, method: 'POST', headers, agent }, (res) => {
        res.on('data', () => undefined);
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', () => resolve(0));
      req.end(spec.body);
    });
  const warmupEnd = Date.now() + (spec.warmupMs ?? 500);
  await Promise.all(
    Array.from({ length: spec.concurrency }, async () => {
      while (Date.now() < warmupEnd) await one();
    }),
  );
  const latencies: number[] = [];
  let errors = 0;
  const start = process.hrtime.bigint();
  const end = Date.now() + spec.durationMs;
  await Promise.all(
    Array.from({ length: spec.concurrency }, async () => {
      while (Date.now() < end) {
        const t0 = process.hrtime.bigint();
        const status = await one();
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        if (status !== 200) errors++;
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const q = (p: number): number => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0;
  return {
    concurrency: spec.concurrency,
    requests: latencies.length,
    errors,
    seconds,
    rps: latencies.length / seconds,
    p50Ms: q(0.5),
    p90Ms: q(0.9),
    p99Ms: q(0.99),
  };
}
