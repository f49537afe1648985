/**
 * The server `nodetron tune` measures on: one it starts (this package's own
 * CLI as a child process, explicit mode, HTTP on a free loopback port,
 * nothing else) or a running one at a URL. Either way it is driven through
 * Triton's repository API: a load with a `config` override per candidate, a
 * load without one to go back to the repository's config.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { MAIN_NODE_FLAG } from '../core/young-generation';

export interface TuneServer {
  /** http://host:port */
  base: string;
  /** host:port, as nodetron perf takes it. */
  address: string;
  /** The process whose CPU is counted (with its children), when it is ours. */
  pid: number | undefined;
  /** Loads the model with this config (JSON text), or with its repository config when undefined; rejects with the server's error. */
  load(model: string, configJson: string | undefined): Promise<void>;
  /** GET /v2/models/<m>/config: the config the server runs the model with. */
  config(model: string): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

async function call(method: 'GET' | 'POST', url: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  } catch {
    json = { error: text };
  }
  if (res.status !== 200) throw new Error(typeof json.error === 'string' ? json.error : `${method} ${url}: HTTP ${res.status}`);
  return json;
}

function driver(base: string, pid: number | undefined, stop: () => Promise<void>): TuneServer {
  const model = (m: string): string => `${base}/v2/repository/models/${encodeURIComponent(m)}/load`;
  return {
    base,
    address: base.replace(/^https?:\/\//, ''),
    pid,
    load: async (m, configJson) => {
      await call('POST', model(m), configJson === undefined ? {} : { parameters: { config: configJson } });
    },
    config: (m) => call('GET', `${base}/v2/models/${encodeURIComponent(m)}/config`),
    stop,
  };
}

/** A running server: checked to be live and in explicit mode (the index answers, a load is allowed). */
export async function remoteServer(url: string): Promise<TuneServer> {
  const base = /^https?:\/\//.test(url) ? url.replace(/\/+$/, '') : `http://${url}`;
  try {
    await call('GET', `${base}/v2/health/live`);
  } catch (err) {
    throw new Error(
      `no server answers at ${base} (${(err as Error).message}): start one with --model-control-mode=explicit, or give --model-repository to let tune start one`,
    );
  }
  return driver(base, undefined, async () => undefined);
}

/** How long the server started here may take to serve. */
const START_TIMEOUT_MS = 60_000;

/** Starts `nodetron --model-repository DIR --model-control-mode=explicit` on a free loopback port. */
export function startServer(repository: string, extraArgs: string[]): Promise<TuneServer> {
  const cli = path.join(__dirname, '..', 'cli.js');
  const args = [
    MAIN_NODE_FLAG,
    cli,
    `--model-repository=${repository}`,
    '--model-control-mode=explicit',
    '--http-address=127.0.0.1',
    '--http-port=0',
    '--allow-grpc=false',
    '--allow-metrics=false',
    ...extraArgs,
  ];
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const take = (d: Buffer): void => {
    // Only the start is needed (the port, or why it failed); a long run must not grow this.
    if (output.length < 200_000) output += d.toString();
  };
  child.stdout!.on('data', take);
  child.stderr!.on('data', take);
  const stop = (): Promise<void> =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const kill = setTimeout(() => child.kill('SIGKILL'), 20_000);
      child.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      child.kill('SIGTERM');
    });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the server tune started did not serve within ${START_TIMEOUT_MS / 1000} s:\n${output.slice(-4000)}`));
    }, START_TIMEOUT_MS);
    const onData = (): void => {
      const m = /Started HTTPService at [^:\s]+:(\d+)/.exec(output);
      if (m === null) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.stderr!.off('data', onData);
      child.off('exit', onExit);
      resolve(driver(`http://127.0.0.1:${m[1]}`, child.pid, stop));
    };
    const onExit = (code: number | null): void => {
      clearTimeout(timer);
      reject(new Error(`the server tune started exited with ${code} before serving:\n${output.slice(-4000)}`));
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', onExit);
  });
}
