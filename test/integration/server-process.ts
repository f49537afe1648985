/**
 * Start the real server (the compiled CLI) as a child process on free ports,
 * wait until it says it serves, and stop it by its PID. Used by every
 * integration test: nothing here is a stand-in for a real part.
 *
 * Metrics are on by default (a free port on 127.0.0.1): right after startup
 * the tensor arena's used bytes are read from /metrics
 * (nodetron_arena_used_bytes), and stop() first waits for them to come back
 * to that value and rejects when they do not, so every server's lifetime
 * ends with no arena block leaked. A test that stops a server under load on
 * purpose passes { checkArena: false }.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { MAIN_NODE_FLAG } from '../../src/core/young-generation';

export const REPO_ROOT = path.resolve(__dirname, '../../..');
export const MODEL_REPOSITORY = path.join(REPO_ROOT, 'model_repository');
const CLI = path.join(REPO_ROOT, 'dist/src/cli.js');

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  port: number;
  /** Bound metrics port when the args enable metrics (`--allow-metrics=true`), else 0. */
  metricsPort: number;
  /** Bound gRPC port when the args enable gRPC (`--allow-grpc=true --grpc-port=0`), else 0. */
  grpcPort: number;
  output(): string;
  /** The tensor arena's used bytes seen right after startup (metrics on), else undefined. */
  arenaBaseline: number | undefined;
  /** The arena's used bytes now, read from /metrics. */
  arenaUsedBytes(): Promise<number>;
  /**
   * Unless told not to (or metrics are off, or the process already exited),
   * wait (bounded) for the arena's used bytes to be back at the baseline;
   * then SIGTERM and wait for the exit code. Rejects, after the process is
   * gone, when the arena did not come back.
   */
  stop(opts?: { checkArena?: boolean }): Promise<number | null>;
}

export interface ExitedServer {
  code: number | null;
  output: string;
}

/** Metrics are on unless the args turn them off (the default args turn them on). */
function wantsMetrics(args: string[]): boolean {
  return !args.includes('--allow-metrics=false');
}

/** How long stop() waits for responses in flight to free their arena blocks. */
const ARENA_SETTLE_MS = 5000;

/** nodetron_arena_used_bytes from the metrics endpoint. */
async function scrapeArena(metricsPort: number): Promise<number> {
  const url = `http://127.0.0.1:${metricsPort}/metrics`;
  // A test that blocks this process (spawnSync of the perf CLI) keeps
  // undici from retiring an idle keep-alive socket before the server's
  // 5 s timeout closes it; the next fetch then fails on that socket with
  // 'other side closed'. One retry opens a fresh connection.
  const res = await fetch(url).catch((err: { cause?: { code?: string } }) => {
    if (err.cause?.code === 'UND_ERR_SOCKET') return fetch(url);
    throw err;
  });
  const text = await res.text();
  const m = /^nodetron_arena_used_bytes (\d+)$/m.exec(text);
  if (!m) throw new Error(`nodetron_arena_used_bytes is not on /metrics:\n${text.slice(0, 2000)}`);
  return Number(m[1]);
}

/** The server's `nv_inference_pending_request_count` for version 1 of `model` (metrics on); -1 when it has no such series. */
export async function pendingRequests(server: { metricsPort: number }, model: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  const m = new RegExp(`^nv_inference_pending_request_count\\{model="${model}",version="1"\\} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : -1;
}

/** Bounded wait (10 s) until the server (metrics on) has admitted `n` requests of `model`. */
export async function untilPending(server: { metricsPort: number }, model: string, n: number): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if ((await pendingRequests(server, model)) === n) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`pending requests of ${model} never reached ${n} (now ${await pendingRequests(server, model)})`);
}

/** The server's `nodetron_dataplane_direct_responses_total` (metrics on): responses sent straight from an instance or host thread. */
export async function directResponses(server: { metricsPort: number }): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  const m = /^nodetron_dataplane_direct_responses_total (\d+)$/m.exec(text);
  if (!m) throw new Error(`nodetron_dataplane_direct_responses_total is not on /metrics:\n${text.slice(0, 2000)}`);
  return Number(m[1]);
}

/**
 * The direct-response count once it reached `want` (or what it is after
 * 5 s). A response reaches its client straight from the instance or host
 * thread, which tells main right after: the client may read /metrics first.
 */
export async function directResponsesReaching(server: { metricsPort: number }, want: number): Promise<number> {
  const end = Date.now() + 5000;
  let n = await directResponses(server);
  while (n < want && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 20));
    n = await directResponses(server);
  }
  return n;
}

function launch(args: string[]): { child: ChildProcess; output: () => string } {
  // A default the args set themselves is left out (metrics off, for one).
  const defaults = ['--http-port=0', '--allow-grpc=false', '--allow-metrics=true', '--metrics-port=0', '--metrics-address=127.0.0.1'].filter(
    (d) => !args.some((a) => a.startsWith(d.slice(0, d.indexOf('=') + 1))),
  );
  // Node's flags as the executable's shebang and `npm start` pass them (core/young-generation.ts).
  const child = spawn(process.execPath, [MAIN_NODE_FLAG, CLI, ...defaults, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TRITON_SERVER_ESCAPE_LOG_MESSAGES: '1' },
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, output: () => out };
}

/** Start a server that is expected to come up; rejects with its output if it exits first. */
export function startServer(args: string[] = [`--model-repository=${MODEL_REPOSITORY}`], timeoutMs = 60_000): Promise<ServerProcess> {
  const { child, output } = launch(args);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start within ${timeoutMs} ms:\n${output()}`));
    }, timeoutMs);
    const onData = (): void => {
      const m = /Started HTTPService at [^:\s]+:(\d+)/.exec(output());
      if (!m) return;
      // The metrics endpoint starts after HTTP, as in Triton.
      const mm = /Started Metrics Service at [^:\s]+:(\d+)/.exec(output());
      if (wantsMetrics(args) && !mm) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.stderr!.off('data', onData);
      const port = Number(m[1]);
      const metricsPort = mm ? Number(mm[1]) : 0;
      const arenaUsedBytes = (): Promise<number> => scrapeArena(metricsPort);
      const sigterm = (): Promise<number | null> =>
        new Promise((res) => {
          if (child.exitCode !== null) return res(child.exitCode);
          const kill = setTimeout(() => child.kill('SIGKILL'), 20_000);
          child.once('exit', (code) => {
            clearTimeout(kill);
            res(code);
          });
          child.kill('SIGTERM');
        });
      const server: ServerProcess = {
        child,
        port,
        metricsPort,
        arenaBaseline: undefined,
        arenaUsedBytes,
        // gRPC starts before HTTP (as in Triton), so its line is already there.
        grpcPort: Number(/Started GRPCInferenceService at \S*:(\d+)/.exec(output())?.[1] ?? 0),
        url: `http://127.0.0.1:${port}`,
        output,
        stop: async (opts = {}) => {
          const baseline = server.arenaBaseline;
          if (opts.checkArena === false || baseline === undefined || child.exitCode !== null) return sigterm();
          let used = -1;
          let failure: unknown;
          try {
            const end = Date.now() + ARENA_SETTLE_MS;
            while ((used = await arenaUsedBytes()) !== baseline && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
          } catch (err) {
            failure = err;
          }
          const code = await sigterm();
          if (failure !== undefined) throw failure;
          if (used !== baseline) {
            throw new Error(`tensor arena: ${used} bytes still in use after waiting ${ARENA_SETTLE_MS} ms, ${baseline} right after startup (a leaked block?)`);
          }
          return code;
        },
      };
      if (metricsPort === 0) return resolve(server);
      arenaUsedBytes().then(
        (b) => {
          server.arenaBaseline = b;
          resolve(server);
        },
        (err: unknown) => {
          child.kill('SIGKILL');
          reject(err);
        },
      );
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before serving:\n${output()}`));
    });
  });
}

/** Run a server that is expected to exit by itself (bad flags, failed models). */
export function runToExit(args: string[], timeoutMs = 60_000): Promise<ExitedServer> {
  const { child, output } = launch(args);
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output: output() });
    });
  });
}

/** Wait (bounded) until the server's output matches: log lines reach us through a pipe, after the HTTP answer. */
export async function waitForOutput(server: { output(): string }, re: RegExp, timeoutMs = 5000): Promise<string> {
  const end = Date.now() + timeoutMs;
  while (!re.test(server.output())) {
    if (Date.now() > end) throw new Error(`server output did not match ${re} within ${timeoutMs} ms:\n${server.output().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return server.output();
}

/**
 * The startup tables with each row on one line: cells wrapped over several
 * lines (80-column tables, logging/table.ts) are joined back, a space between
 * fragments unless the fragment filled its column (a long word was cut
 * there). Lets a test match a row with one regex.
 */
export function unwrapTables(output: string): string {
  const out: string[] = [];
  let row: string[] | undefined;
  let widths: number[] = [];
  const flush = (): void => {
    if (row !== undefined) out.push(`| ${row.join(' | ')} |`);
    row = undefined;
  };
  for (const line of output.split('\n')) {
    if (!/^\|.*\|$/.test(line)) {
      flush();
      out.push(line);
      continue;
    }
    const raw = line.slice(2, -2).split(' | ');
    const cells = raw.map((c) => c.trimEnd());
    if (row !== undefined && cells[0] === '') {
      row = row.map((prev, i) => {
        const add = cells[i] ?? '';
        if (add === '') return prev;
        const lastFragment = prev.split(' ').pop() ?? '';
        return prev + (lastFragment.length >= (widths[i] ?? Infinity) || prev === '' ? '' : ' ') + add;
      });
      continue;
    }
    flush();
    row = cells;
    widths = raw.map((c) => c.length);
  }
  flush();
  return out.join('\n');
}
