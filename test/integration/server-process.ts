/**
 * Start the real server (the compiled CLI) as a child process on free ports,
 * wait until it says it serves, and stop it by its PID. Used by every
 * integration test: nothing here is a stand-in for a real part.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';

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
  /** SIGTERM and wait for the exit code. */
  stop(): Promise<number | null>;
}

export interface ExitedServer {
  code: number | null;
  output: string;
}

/** True when the args turn metrics on; give `--metrics-port=0` too for a free port. */
function wantsMetrics(args: string[]): boolean {
  return args.includes('--allow-metrics=true');
}

function launch(args: string[]): { child: ChildProcess; output: () => string } {
  // A default the args set themselves is left out (metrics on, for one).
  const defaults = ['--http-port=0', '--allow-grpc=false', '--allow-metrics=false']
    .filter((d) => !args.some((a) => a.startsWith(d.slice(0, d.indexOf('=') + 1))));
  const child = spawn(process.execPath, [CLI, ...defaults, ...args], {
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
      resolve({
        child,
        port,
        metricsPort: mm ? Number(mm[1]) : 0,
        // gRPC starts before HTTP (as in Triton), so its line is already there.
        grpcPort: Number(/Started GRPCInferenceService at \S*:(\d+)/.exec(output())?.[1] ?? 0),
        url: `http://127.0.0.1:${port}`,
        output,
        stop: () =>
          new Promise((res) => {
            if (child.exitCode !== null) return res(child.exitCode);
            const kill = setTimeout(() => child.kill('SIGKILL'), 20_000);
            child.once('exit', (code) => {
              clearTimeout(kill);
              res(code);
            });
            child.kill('SIGTERM');
          }),
      });
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
