/**
 * Main-thread side of the gRPC frontend: starts the gRPC thread
 * (grpc-thread.ts, `nt:grpc`), which owns the grpc-js server and its port,
 * links it to the scheduler over its ring pair (grpc-link.ts), keeps its
 * server snapshot current, answers the control rpcs it forwards
 * (control-answer.ts), restarts it on the same port when it dies, and stops
 * it: graceful (refuse new inferences, end idle streams, wait for calls in
 * flight), forced after a timeout.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { ServerOptions } from '../../cli-options';
import { toErrorInfo } from '../../core/errors';
import type { Arena } from '../../dataplane/arena';
import type { MainPort } from '../../dataplane/main-port';
import type { Logger } from '../../logging/logger';
import type { ServerSnapshot } from '../../request/server-snapshot';
import { ControlAnswers } from './control-answer';
import type { GrpcControlContext } from './grpc-context';
import type { RefusedRequest } from '../../core/request';
import type { FrontendCanceller } from '../../dataplane/frontend-requests';
import { GrpcLink, type GrpcRouter } from './grpc-link';
import type { GrpcThreadData, GrpcToMain, MainToGrpc } from './grpc-thread-protocol';
import { RestartBackoff, whenListening } from '../thread-restarts';
import { workerResourceLimits } from '../../core/young-generation';

/** What server.ts hands the gRPC frontend. */
export interface GrpcFrontendDeps extends Omit<GrpcControlContext, 'options' | 'snapshot'> {
  options: ServerOptions;
  log: Logger;
  serverName: string;
  serverVersion: string;
  extensions: readonly string[];
  /** Test-only fault injection (NODETRON_TEST_FAULTS; GrpcThreadData.faults). */
  faults?: readonly string[];
  /** --log-access: the thread reads client addresses and reports what it refuses itself here. */
  onRefused?: (r: RefusedRequest) => void;
}

interface GrpcThread {
  worker: Worker;
  link: GrpcLink;
  /** Why it died (its uncaught error), when it said so before exiting. */
  fatal?: string;
  exited: Promise<void>;
}

/** How long after its stop timeout a thread that has not said `stopped` is terminated. */
const STOP_GRACE_MS = 2000;

export class GrpcFrontend {
  private thread: GrpcThread | undefined;
  private readonly control: ControlAnswers;
  private snapshot: ServerSnapshot | undefined;
  private boundPort = 0;
  private stopping: Promise<number> | undefined;
  private guard: NodeJS.Timeout | undefined;
  private readonly restarts = new RestartBackoff();

  constructor(
    private readonly deps: GrpcFrontendDeps,
    private readonly port: MainPort,
    private readonly arena: Arena,
    private readonly router: GrpcRouter,
    /** Where a request the thread's client cancelled (or whose deadline passed) is cancelled. */
    private readonly canceller: FrontendCanceller,
    /** The main thread's live snapshot, for the control rpcs answered here. */
    mainSnapshot: () => ServerSnapshot,
  ) {
    this.control = new ControlAnswers({ ...deps, snapshot: mainSnapshot });
  }

  /** Starts the thread and binds the port (0 = any free port); resolves with the bound port. */
  async start(snapshot: ServerSnapshot): Promise<number> {
    this.snapshot = snapshot;
    const t = this.spawn(snapshot);
    this.thread = t;
    try {
      this.boundPort = await this.listen(t, this.deps.options.grpcPort);
    } catch (err) {
      this.thread = undefined; // not a death: nothing to restart
      await this.terminate(t);
      throw err;
    }
    return this.boundPort;
  }

  broadcast(snapshot: ServerSnapshot): void {
    this.snapshot = snapshot;
    this.thread?.worker.postMessage({ t: 'snapshot', snapshot } satisfies MainToGrpc);
  }

  /**
   * Graceful stop, forced after `timeoutMs`; resolves once the thread is
   * gone, with the inferences the force cut. Idempotent; a later call with a
   * shorter timeout (a forced stop: 0) brings the force forward.
   */
  stop(timeoutMs: number): Promise<number> {
    const t = this.thread;
    if (this.stopping !== undefined) {
      if (t !== undefined) {
        this.armGuard(t, timeoutMs);
        t.worker.postMessage({ t: 'stop', timeoutMs } satisfies MainToGrpc);
      }
      return this.stopping;
    }
    this.stopping = new Promise<number>((resolve) => {
      if (t === undefined) return resolve(0); // died, replacement not started: nothing to close
      let cut = 0;
      void t.exited.then(() => {
        if (this.guard !== undefined) clearTimeout(this.guard);
        resolve(cut);
      });
      t.worker.on('message', (m: GrpcToMain) => {
        if (m.t !== 'stopped') return;
        cut = m.cut;
        void this.terminate(t);
      });
      this.armGuard(t, timeoutMs);
      t.worker.postMessage({ t: 'stop', timeoutMs } satisfies MainToGrpc);
    });
    return this.stopping;
  }

  /** The thread forces its shutdown at timeoutMs; one that cannot even do that (stuck) is terminated. */
  private armGuard(t: GrpcThread, timeoutMs: number): void {
    if (this.guard !== undefined) clearTimeout(this.guard);
    this.guard = setTimeout(() => void this.terminate(t), Math.max(0, timeoutMs) + STOP_GRACE_MS);
  }

  private spawn(snapshot: ServerSnapshot): GrpcThread {
    const link = new GrpcLink(this.port, this.arena, this.router, this.canceller);
    const data: GrpcThreadData = {
      arena: this.arena.handle,
      toMain: link.toMain,
      fromMain: link.fromMain,
      options: this.deps.options,
      serverName: this.deps.serverName,
      serverVersion: this.deps.serverVersion,
      extensions: this.deps.extensions,
      forwarded: this.control.rpcs,
    };
    if (this.deps.faults?.length) data.faults = this.deps.faults;
    if (this.deps.onRefused !== undefined) data.accessLog = true;
    const worker = new Worker(path.join(__dirname, 'grpc-thread.js'), { workerData: data, name: 'grpc', resourceLimits: workerResourceLimits() });
    const t: GrpcThread = { worker, link, exited: new Promise((resolve) => worker.once('exit', () => resolve())) };
    link.attach(worker.threadId, (notice) => worker.postMessage(notice satisfies MainToGrpc));
    worker.postMessage({ t: 'snapshot', snapshot } satisfies MainToGrpc);
    worker.on('exit', () => {
      link.gone();
      if (this.thread === t && this.stopping === undefined) this.onDeath(t);
    });
    worker.on('message', (m: GrpcToMain) => {
      if (m.t === 'fatal') t.fatal = m.reason;
      if (m.t === 'access') this.deps.onRefused?.(m.entry);
      if (m.t === 'warn') this.deps.log.warn(m.message);
      // A repository load answers once the load finished; the answer waits
      // one setImmediate so the snapshot broadcast the load queued
      // (server.ts) reaches the thread first: a client sees what it loaded.
      if (m.t === 'control_call') {
        this.port.settle(); // inline runs' statistics, rung lazily, in before the answer reads them
        void this.control.answer(m).then((a) => setImmediate(() => worker.postMessage(a satisfies MainToGrpc)));
      }
    });
    worker.on('error', (err) => {
      t.fatal ??= err.stack ?? err.message;
    });
    return t;
  }

  /** The thread died; its link swept what it owned. A replacement binds the same port. */
  private onDeath(t: GrpcThread): void {
    this.thread = undefined;
    const reason = t.fatal ?? 'it exited without saying why';
    const delay = this.restarts.next();
    this.deps.log.error(
      `GRPC thread died: ${reason}\n${t.link.inflight.size} request(s) it had in flight fail with it ` +
        `(their calls ended UNAVAILABLE); restarting it${delay > 0 ? ` in ${delay} ms` : ''}`,
    );
    setTimeout(() => this.restart(), delay).unref();
  }

  private restart(): void {
    if (this.stopping !== undefined || this.snapshot === undefined) return;
    const t = this.spawn(this.snapshot);
    this.thread = t;
    this.listen(t, this.boundPort).then(
      () => this.deps.log.info(`GRPC thread restarted, listening on port ${this.boundPort}`),
      (err) => this.deps.log.error(`GRPC thread could not listen again: ${toErrorInfo(err).message}`),
    );
  }

  private terminate(t: GrpcThread): Promise<void> {
    void t.worker.terminate();
    return t.exited;
  }

  private listen(t: GrpcThread, port: number): Promise<number> {
    const listening = whenListening(t.worker, { done: t.exited, why: () => `the GRPC thread exited before it listened: ${t.fatal ?? 'no reason given'}` });
    t.worker.postMessage({ t: 'listen', address: this.deps.options.grpcAddress, port } satisfies MainToGrpc);
    return listening;
  }
}
