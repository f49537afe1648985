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
  output(): string;
  /** SIGTERM and wait for the exit code. */
  stop(): Promise<number | null>;
}

export interface ExitedServer {
  code: number | null;
  output: string;
}

function launch(args: string[]): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, [CLI, '--http-port=0', '--allow-grpc=false', '--allow-metrics=false', ...args], {
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
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.stderr!.off('data', onData);
      const port = Number(m[1]);
      resolve({
        child,
        port,
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
