/**
 * Process plumbing of the side-by-side bench: free ports, start a server and
 * time it until /v2/health/ready answers 200, RSS of a process tree, stop by
 * PID, CPU of a process tree and of each of its threads (by name), a
 * model's success count from its statistics, and wrk as an independent
 * generator when it is installed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { processTreeCpuSeconds } from '../src/tune/process-cpu';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** Requests a server answered with success for `model`, over all its versions (its statistics); `url` is `http://host:port`. */
export async function successCount(url: string, model: string): Promise<number> {
  const res = await fetch(`${url}/v2/models/${model}/stats`);
  const body = (await res.json()) as { model_stats: { inference_stats: { success: { count: number } } }[] };
  return body.model_stats.reduce((n, s) => n + s.inference_stats.success.count, 0);
}

export interface Proc {
  child: ChildProcess;
  port: number;
  readyMs: number;
  output(): string;
  stop(): Promise<void>;
}

/** `onStdout`: every chunk of its standard output, for a caller that reads more than output()'s last 20,000 characters. */
export async function startProc(cmd: string, args: string[], port: number, timeoutMs = 120_000, onStdout?: (chunk: Buffer) => void): Promise<Proc> {
  const t0 = performance.now();
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    onStdout?.(d);
    out = (out + d.toString()).slice(-20_000);
  });
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  };
  while (performance.now() - t0 < timeoutMs) {
    if (child.exitCode !== null) throw new Error(`${cmd} ${args.join(' ')} exited ${child.exitCode}:\n${out}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/v2/health/ready`);
      if (res.status === 200) return { child, port, readyMs: performance.now() - t0, output: () => out, stop };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  await stop();
  throw new Error(`${cmd} not ready within ${timeoutMs} ms:\n${out}`);
}

/** Pids of a process and all its descendants. */
function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
    } catch {
      // exited meanwhile
    }
  }
  const out: number[] = [];
  const visit = (p: number): void => {
    out.push(p);
    for (const c of children.get(p) ?? []) visit(c);
  };
  visit(pid);
  return out;
}

/** RSS of one process (all its threads), in MB; 0 once it exited. */
export function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return Number(m?.[1] ?? 0) / 1024;
  } catch {
    return 0; // exited meanwhile
  }
}

/** RSS of a process and all its descendants (threads share their process's RSS), in MB. */
export function treeRssMb(pid: number): number {
  let mb = 0;
  for (const p of processTree(pid)) mb += rssMb(p);
  return mb;
}

/** CPU seconds (user + system, all threads) used so far by a process and its descendants; 0 once it exited. */
export function treeCpuSeconds(pid: number): number {
  return processTreeCpuSeconds(pid) ?? 0;
}

export function hasWrk(): boolean {
  return spawnSync('wrk', ['--version']).error === undefined;
}

/** wrk closed loop with the same body; returns req/s (undefined if wrk is missing or failed). */
export function wrkRps(url: string, body: Buffer, headers: Record<string, string>, connections: number, seconds: number): number | undefined {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-wrk-'));
  const bodyFile = path.join(dir, 'body.bin');
  fs.writeFileSync(bodyFile, body);
  const lua = [
    'wrk.method = "POST"',
    `local f = io.open("${bodyFile}", "rb"); wrk.body = f:read("*all"); f:close()`,
    ...Object.entries(headers).map(([k, v]) => `wrk.headers["${k}"] = "${v}"`),
  ].join('\n');
  fs.writeFileSync(path.join(dir, 's.lua'), lua);
  const r = spawnSync('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '-s', path.join(dir, 's.lua'), url], { encoding: 'utf8' });
  fs.rmSync(dir, { recursive: true, force: true });
  // wrk counts every response; a rate of error answers is no rate at all.
  if (/Non-2xx or 3xx responses/.test(r.stdout ?? '')) return undefined;
  const m = /Requests\/sec:\s+([\d.]+)/.exec(r.stdout ?? '');
  return m ? Number(m[1]) : undefined;
}

export interface ThreadSample {
  /** `main`, the thread's name without `nt:` (src/dataplane/thread-name.ts), or `other (V8, libuv)`. */
  name: string;
  userTicks: number;
  sysTicks: number;
  switches: number;
}

export const TICK_US = 1e6 / 100; // USER_HZ

/** CPU ticks and context switches of every thread of a process so far, by thread id. */
export function sampleThreads(pid: number): Map<number, ThreadSample> {
  const out = new Map<number, ThreadSample>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const dir = `/proc/${pid}/task/${tid}`;
      const stat = fs.readFileSync(`${dir}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const status = fs.readFileSync(`${dir}/status`, 'utf8');
      const sw = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
      const comm = fs.readFileSync(`${dir}/comm`, 'utf8').trim();
      const name = Number(tid) === pid ? 'main' : comm.startsWith('nt:') ? comm.slice(3) : 'other (V8, libuv)';
      out.set(Number(tid), {
        name,
        userTicks: Number(f[11]),
        sysTicks: Number(f[12]),
        switches: sw('voluntary_ctxt_switches') + sw('nonvoluntary_ctxt_switches'),
      });
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** CPU µs per thread name between two samples (threads born in between count from 0). */
export function threadCpuUs(before: Map<number, ThreadSample>, after: Map<number, ThreadSample>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [tid, a] of after) {
    const b = before.get(tid);
    const ticks = a.userTicks + a.sysTicks - (b ? b.userTicks + b.sysTicks : 0);
    out.set(a.name, (out.get(a.name) ?? 0) + ticks * TICK_US);
  }
  return out;
}

/** SIGTERM a child process and wait for it to exit (SIGKILL after 30 s). */
export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
