/**
 * One Python stub child process: spawn it with its two shared-memory regions
 * and control pipes, wait for its "alive" message, exchange framed control
 * messages, forward its Logger records to the server log, and report its
 * exit. What the stub writes to stdout and stderr (a model's print(), a
 * library's warnings) goes to the server log a line at a time, at info and
 * warn, prefixed with the model and instance; control traffic uses fds 3/4
 * and the regions are fds 5/6.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { ServerError } from '../core/errors';
import type { HostLog } from './host-services';
import { FrameDecoder, encodeFrame, type BlobBuilder } from './ipc-framing';
import type { HostToStub, LogMsg, StubToHost } from './ipc-protocol';
import { HostRegion, StubRegion, regionBaseName } from './shm-region';

export interface StubSpawnOptions {
  interpreter: string;
  mode: 'model' | 'auto_complete';
  /** <repo>/<model>/<version>/model.py */
  modelPath: string;
  /** Instance name (`<model>_<group>_<i>`), or the model name for auto-complete. */
  name: string;
  /** The model's name, for the prefix of the stub's output lines. */
  model: string;
  shmDefaultBytes: number;
  shmGrowthBytes: number;
  /** How long the stub may take to report alive (stub-timeout-seconds). */
  startTimeoutMs: number;
  log: HostLog;
  /** The stub's environment (EXECUTION_ENV_PATH); the server's own when absent. */
  env?: NodeJS.ProcessEnv;
  /** Run this model nodetron ships on `modelPath` (the model file of a backend that is not Python) instead of importing a model.py. */
  builtin?: BuiltinModel;
}

/**
 * The models the stub ships (stub/_nt_runner.py BUILTIN_MODELS): 'pytorch'
 * runs a TorchScript model.pt or an AOTInductor model.pt2 (stub/_nt_torch_model.py);
 * 'repeat' and 'square' are Triton's decoupled test backends (backends/decoupled-test/).
 */
export type BuiltinModel = 'pytorch' | 'repeat' | 'square';

/** The directory holding stub_main.py and triton_python_backend_utils.py. */
export function stubDir(): string {
  const candidates = [path.join(__dirname, 'stub'), path.resolve(__dirname, '../../../src/python-backend/stub')];
  for (const c of candidates) if (fs.existsSync(path.join(c, 'stub_main.py'))) return c;
  throw new ServerError('INTERNAL', `python backend stub files not found (looked in ${candidates.join(', ')})`);
}

/** Triton's text for a stub that died or stopped answering. */
export function notHealthy(name: string): ServerError {
  return new ServerError('INTERNAL', `Stub process '${name}' is not healthy.`);
}

/**
 * A stub that did not report alive in time: it may still be starting (a
 * loaded machine, many stubs at once), so the text says it is a timeout and
 * which settings give it more time or fewer rivals.
 */
export function startTimedOut(name: string, pid: number, timeoutMs: number): ServerError {
  const s = timeoutMs / 1000;
  return new ServerError(
    'INTERNAL',
    `Timed out after ${s} s waiting for the Python stub process of '${name}' (pid ${pid}) to start: it did not report alive ` +
      `within stub-timeout-seconds (${s}). A busy machine can start stubs this slowly; give them more time with ` +
      '--backend-config=python,stub-timeout-seconds=<seconds>, or start fewer at once with a lower --model-load-thread-count.',
  );
}

/** Triton's text for a stub that ended before it was up, with how it ended. */
export function exitedWhileStarting(name: string, why: string): ServerError {
  return new ServerError(
    'INTERNAL',
    `Failed to initialize stub, stub process exited unexpectedly: ${name} (it ${why} before it reported alive; its own output is in the server log)`,
  );
}

type Waiter = { t: string; resolve: (m: StubToHost) => void; reject: (e: Error) => void };

export class StubProcess {
  readonly name: string;
  readonly h2s: HostRegion;
  readonly s2h: StubRegion;
  private readonly child: ChildProcess;
  private readonly out: Writable;
  private readonly decoder = new FrameDecoder();
  private readonly log: HostLog;
  private waiters: Waiter[] = [];
  private handler: ((m: StubToHost) => void) | undefined;
  private exitListeners: ((why: string) => void)[] = [];
  private exitedWith: string | undefined;

  private constructor(opts: StubSpawnOptions) {
    this.name = opts.name;
    this.log = opts.log;
    const base = regionBaseName(opts.name);
    this.h2s = new HostRegion(base, opts.shmDefaultBytes, opts.shmGrowthBytes);
    let s2h: StubRegion;
    try {
      s2h = new StubRegion(base, opts.shmDefaultBytes);
    } catch (err) {
      this.h2s.close();
      throw err;
    }
    this.s2h = s2h;
    const argv = JSON.stringify({
      mode: opts.mode,
      model_path: opts.modelPath,
      name: opts.name,
      growth: opts.shmGrowthBytes,
      parent_pid: process.pid,
      ...(opts.builtin !== undefined ? { builtin: opts.builtin } : {}),
    });
    try {
      this.child = spawn(opts.interpreter, [path.join(stubDir(), 'stub_main.py'), argv], {
        stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe', this.h2s.fd, this.s2h.fd],
        env: { ...(opts.env ?? process.env), PYTHONUNBUFFERED: '1' },
      });
    } finally {
      // The child has its descriptors (or never will): the names can go now.
      this.h2s.unlink();
      this.s2h.unlink();
    }
    const prefix = opts.mode === 'auto_complete' ? `model '${opts.model}' (auto_complete_config)` : `model '${opts.model}' instance '${opts.name}'`;
    const log = opts.log;
    readline.createInterface({ input: this.child.stdio[1] as Readable }).on('line', (line) => log.info(`${prefix}: ${line}`));
    readline.createInterface({ input: this.child.stdio[2] as Readable }).on('line', (line) => log.warn(`${prefix}: ${line}`));
    this.out = this.child.stdio[3] as Writable;
    const input = this.child.stdio[4] as Readable;
    this.out.on('error', () => {}); // EPIPE after the stub died: the exit event reports it
    input.on('data', (chunk: Buffer) => this.onData(chunk));
    this.child.on('error', (err) => this.onExit(`could not be started: ${err.message}`));
    this.child.on('exit', (code, signal) => this.onExit(signal !== null ? `killed by ${signal}` : `exited with code ${code}`));
  }

  /** Spawn and wait (at most opts.startTimeoutMs) for the stub's "alive" message. */
  static async spawn(opts: StubSpawnOptions): Promise<StubProcess> {
    const stub = new StubProcess(opts);
    const t0 = performance.now();
    try {
      await stub.waitFor('alive', opts.startTimeoutMs, () => startTimedOut(opts.name, stub.pid, opts.startTimeoutMs));
      opts.log.verbose(
        1,
        `python stub '${opts.name}' (pid ${stub.pid}) reported alive after ${Math.round(performance.now() - t0)} ms ` +
          `(stub-timeout-seconds: ${opts.startTimeoutMs / 1000})`,
      );
    } catch (err) {
      const why = stub.exitedWith;
      stub.kill();
      throw why !== undefined ? exitedWhileStarting(opts.name, why) : err;
    }
    return stub;
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get exited(): boolean {
    return this.exitedWith !== undefined;
  }

  /** Every message that is not a reply somebody waits for, and not a log record. */
  onMessage(handler: (m: StubToHost) => void): void {
    this.handler = handler;
  }

  onExit(listener: (why: string) => void): void;
  onExit(why: string): void;
  onExit(arg: string | ((why: string) => void)): void {
    if (typeof arg === 'function') {
      if (this.exitedWith !== undefined) arg(this.exitedWith);
      else this.exitListeners.push(arg);
      return;
    }
    if (this.exitedWith !== undefined) return;
    this.exitedWith = arg;
    this.h2s.close();
    this.s2h.close();
    const err = notHealthy(this.name);
    for (const w of this.waiters) w.reject(err);
    this.waiters = [];
    const listeners = this.exitListeners;
    this.exitListeners = [];
    for (const l of listeners) l(arg);
  }

  /** One frame; `blob` holds the bytes of the message's inline tensors. */
  send(msg: HostToStub, blob?: BlobBuilder): void {
    if (this.exitedWith !== undefined) return;
    this.out.write(encodeFrame(msg, blob));
  }

  /**
   * The next message of type `t`; rejects with "not healthy" if the stub
   * exits first, or with `timedOut()` (default: "not healthy") after
   * `timeoutMs` (0: no limit).
   */
  waitFor<T extends StubToHost['t']>(t: T, timeoutMs = 0, timedOut: () => Error = () => notHealthy(this.name)): Promise<Extract<StubToHost, { t: T }>> {
    if (this.exitedWith !== undefined) return Promise.reject(notHealthy(this.name));
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const w: Waiter = {
        t,
        resolve: (m) => {
          if (timer) clearTimeout(timer);
          resolve(m as Extract<StubToHost, { t: T }>);
        },
        reject: (e) => {
          if (timer) clearTimeout(timer);
          reject(e);
        },
      };
      if (timeoutMs > 0) {
        timer = setTimeout(() => {
          this.waiters = this.waiters.filter((x) => x !== w);
          reject(timedOut());
        }, timeoutMs);
      }
      this.waiters.push(w);
    });
  }

  /** SIGKILL (for a stub that failed or would not finalize). */
  kill(): void {
    if (this.exitedWith === undefined) this.child.kill('SIGKILL');
  }

  /** Resolves once the process has exited. */
  whenExited(): Promise<void> {
    return new Promise((resolve) => this.onExit(() => resolve()));
  }

  private onData(chunk: Buffer): void {
    let messages: unknown[];
    try {
      messages = this.decoder.push(chunk);
    } catch (err) {
      this.log.error(`python stub '${this.name}': ${(err as Error).message}; killing it`);
      this.kill();
      return;
    }
    for (const raw of messages) this.dispatch(raw as StubToHost);
  }

  private dispatch(m: StubToHost): void {
    if (m.t === 'log') {
      this.logRecord(m);
      return;
    }
    const i = this.waiters.findIndex((w) => w.t === m.t);
    if (i >= 0) {
      const [w] = this.waiters.splice(i, 1);
      w!.resolve(m);
      return;
    }
    this.handler?.(m);
  }

  private logRecord(m: LogMsg): void {
    const log = this.log.child({ source: `${path.basename(m.file)}:${m.line}` });
    switch (m.level) {
      case 'ERROR':
        log.error(m.message);
        return;
      case 'WARNING':
        log.warn(m.message);
        return;
      case 'VERBOSE':
        log.verbose(1, m.message);
        return;
      default:
        log.info(m.message);
    }
  }
}
