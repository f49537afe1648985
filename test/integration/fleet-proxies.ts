/**
 * The two real parts in front of and beside a local fleet: Debian's nginx
 * (nginx-light) balancing the replicas' HTTP ports, and Debian's Prometheus
 * scraping their metrics ports. Each runs as our own child process on a free
 * loopback port, with its config, pid, logs and data in a temp dir, and is
 * stopped by its PID.
 *
 * nginx-light has no active health checks, so it never reads readiness:
 * what keeps a roll free of failed requests is the server's drain (it keeps
 * serving through the grace period, then answers what arrives with 503
 * "Server exiting" and closes) and nginx passing a request on to the next
 * replica when one refuses the connection or answers that 503. A refused
 * connection or that 503 means the request never ran, so passing a POST on
 * (`non_idempotent`) cannot run an inference twice.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const NGINX = '/usr/sbin/nginx';
export const PROMETHEUS = '/usr/bin/prometheus';

/** A free loopback TCP port (bound, read, released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** SIGTERM to a child this test started, SIGKILL if it has not exited 5 s later; resolves once it is gone. */
export function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export interface Helper {
  child: ChildProcess;
  port: number;
  output(): string;
  stop(): Promise<void>;
}

function spawnHelper(cmd: string, args: string[], port: number): Helper {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  return {
    child,
    port,
    output: () => out,
    stop: () => stopChild(child),
  };
}

/** Poll `url` until it answers 200 (bounded), or the helper exits. */
async function waitReady(h: Helper, url: string, what: string, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (h.child.exitCode !== null) throw new Error(`${what} exited with ${h.child.exitCode}:\n${h.output()}`);
    const ok = await fetch(url).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return;
    if (Date.now() > end) throw new Error(`${what} did not answer ${url} within ${timeoutMs} ms:\n${h.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** nginx's config: one upstream of the replicas, retries on what a draining replica answers. */
export function nginxConfig(dir: string, port: number, upstreams: number[]): string {
  const servers = upstreams.map((p) => `    server 127.0.0.1:${p} max_fails=1 fail_timeout=1s;`).join('\n');
  return `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 2048; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream nodetron {
${servers}
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://nodetron;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_connect_timeout 1s;
      # A draining replica closes its port (connect refused) or answers 503
      # "Server exiting" with Connection: close; neither ran the request.
      proxy_next_upstream error timeout http_503 non_idempotent;
      proxy_next_upstream_tries 3;
      proxy_next_upstream_timeout 10s;
    }
    location = /nginx-health { return 200 "ok"; }
  }
}
`;
}

export async function startNginx(dir: string, upstreams: number[]): Promise<Helper> {
  const port = await freePort();
  const conf = path.join(dir, 'nginx.conf');
  fs.writeFileSync(conf, nginxConfig(dir, port, upstreams));
  // -e: the error log before the config is read (else /var/log/nginx); -p: the prefix for relative paths.
  const h = spawnHelper(NGINX, ['-e', path.join(dir, 'error.log'), '-p', dir, '-c', conf], port);
  await waitReady(h, `http://127.0.0.1:${port}/nginx-health`, 'nginx');
  return h;
}

/** Prometheus scraping every metrics port, often enough to see a short burst. */
export function prometheusConfig(metricsPorts: number[], intervalMs: number): string {
  const targets = metricsPorts.map((p) => `'127.0.0.1:${p}'`).join(', ');
  return `global:
  scrape_interval: ${intervalMs}ms
  scrape_timeout: ${intervalMs}ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: nodetron
    metrics_path: /metrics
    static_configs:
      - targets: [${targets}]
`;
}

export async function startPrometheus(dir: string, metricsPorts: number[], intervalMs = 250): Promise<Helper> {
  const port = await freePort();
  const conf = path.join(dir, 'prometheus.yml');
  fs.writeFileSync(conf, prometheusConfig(metricsPorts, intervalMs));
  const h = spawnHelper(
    PROMETHEUS,
    [`--config.file=${conf}`, `--storage.tsdb.path=${path.join(dir, 'tsdb')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    port,
  );
  await waitReady(h, `http://127.0.0.1:${port}/-/ready`, 'prometheus');
  return h;
}

interface PromAnswer {
  status: string;
  error?: string;
  data: { resultType: string; result: { metric: Record<string, string>; value?: [number, string]; values?: [number, string][] }[] };
}

async function promApi(port: number, p: string, params: Record<string, string>): Promise<PromAnswer['data']> {
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/${p}?${new URLSearchParams(params).toString()}`);
  const body = (await res.json()) as PromAnswer;
  if (body.status !== 'success') throw new Error(`prometheus ${p} ${JSON.stringify(params)}: ${body.error ?? res.status}`);
  return body.data;
}

/** An instant query's values, by the series' labels. */
export async function promQuery(port: number, query: string): Promise<{ metric: Record<string, string>; value: number }[]> {
  const data = await promApi(port, 'query', { query });
  return data.result.map((r) => ({ metric: r.metric, value: Number(r.value![1]) }));
}

/**
 * What a counter counted over the last `windowS` seconds, summed over its
 * series, from the raw samples: each process's run of samples (a drop is a
 * restart) adds its last value. Exact where increase() extrapolates; it
 * misses only what a process counted after its last scrape.
 */
export async function promCounterTotal(port: number, selector: string, windowS: number): Promise<number> {
  const data = await promApi(port, 'query', { query: `${selector}[${windowS}s]` });
  let total = 0;
  for (const r of data.result) {
    let prev = 0;
    for (const [, v] of r.values ?? []) {
      const x = Number(v);
      if (x < prev) total += prev;
      prev = x;
    }
    total += prev;
  }
  return total;
}

/** The highest value any series of a range query reached between start and end (seconds). */
export async function promRangeMax(port: number, query: string, startS: number, endS: number, stepS: number): Promise<number> {
  const data = await promApi(port, 'query_range', { query, start: String(startS), end: String(endS), step: String(stepS) });
  let max = -Infinity;
  for (const r of data.result) for (const [, v] of r.values ?? []) max = Math.max(max, Number(v));
  return max;
}
