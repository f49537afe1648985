/**
 * One Python model instance as the main thread sees it (the Backend's
 * ProcessChild, supervised by instances/process-instance.ts): a host thread
 * (python-host-thread.ts, `nt:py-<instance>`) that owns the stub process and
 * does all per-execution work for it. This side only moves batches and
 * results over the SAB rings, adopting the outputs the thread allocated
 * (dataplane/protocol.ts), and serves what the stub asks of the server over
 * the thread's port: BLS requests into the gateway (the main thread's
 * route), custom-metric operations, model-control calls (the repository
 * API), log records (host-thread-protocol.ts).
 *
 * A thread lives as long as its stub. When the stub dies on its own (or the
 * thread does), the batches in flight fail with Triton's "not healthy" text,
 * the death is reported once (onDeath) and the thread is ended;
 * ProcessInstance then starts a new host (thread and stub), and says the
 * instance is not ready meanwhile (`deadText`). What the model's is_ready()
 * says comes from the thread as `unready` (readiness-checks.ts).
 */
import path from 'node:path';
import { MessageChannel, Worker } from 'node:worker_threads';
import type { BackendInstanceArgs, CancelInfer, ProcessChild, ProcessHostServices } from '../backends/backend';
import { fromErrorInfo, toErrorInfo, type ErrorInfo } from '../core/errors';
import { nowNs } from '../core/clock';
import type { ExecuteResult, InferRequest, InferResponse, ReplyAddress, StreamResponse } from '../core/request';
import { adoptOutputs } from '../dataplane/adopt-outputs';
import { RingWriter, createRing, type RingHandle } from '../dataplane/ring';
import type { CustomMetricsOwner } from '../metrics/custom-metrics';
import type { MainToPyHost, PyBls, PyHostPortIn, PyHostPortOut, PyHostThreadData, PyHostToMain, PyLog, PyMetric, PyModelControl } from './host-thread-protocol';
import { notHealthy, type BuiltinModel } from './stub-process';
import { warnIfSmallShm } from './shm-space';
import { workerResourceLimits } from '../core/young-generation';

interface Pending {
  requests: InferRequest[];
  stream: StreamResponse | undefined;
  resolve: (r: ExecuteResult) => void;
}

export class PythonHost implements ProcessChild {
  private stubPid = -1;
  private readonly pending = new Map<number, Pending>();
  private nextBatchId = 1;
  /** The stub's BLS calls still open (by the thread's id for them): how to cancel each. */
  private readonly blsOpen = new Map<number, CancelInfer>();
  /** Why the stub is gone (set once; batches fail from then on). */
  private gone: string | undefined;
  private threadExited = false;
  private stopping: Promise<void> | undefined;
  private killing: Promise<void> | undefined;
  private onStopped: (() => void) | undefined;
  private deathListeners: ((why: string) => void)[] = [];
  private unreadyReason: string | undefined;
  private readonly unreadyListeners: (() => void)[] = [];
  private readonly metrics: CustomMetricsOwner | undefined;
  private readonly worker: Worker;
  private readonly threadId: number;
  private readonly out: RingWriter;
  private readonly fromHost: RingHandle;
  private readonly exited: Promise<void>;

  private constructor(
    private readonly args: BackendInstanceArgs,
    private readonly services: ProcessHostServices,
    builtin: BuiltinModel | undefined,
  ) {
    this.metrics = services.customMetrics?.owner();
    const { port } = services;
    const toHost = createRing(port.bells.create());
    const toMain = createRing(port.bell);
    this.out = RingWriter.attach(toHost);
    // Reply-ring changes: posted first, then announced on the ring, so the
    // thread reads them before any execute that names a new frontend.
    const peersChannel = new MessageChannel();
    const replies = port.replies.addInstance((update) => {
      peersChannel.port1.postMessage(update);
      this.out.send({ t: 'peers' } satisfies MainToPyHost);
    });
    const data: PyHostThreadData = {
      arena: services.arena.handle,
      toHost,
      toMain,
      args,
      peers: replies.peers,
      peersPort: peersChannel.port2,
      ...(builtin !== undefined ? { builtin } : {}),
    };
    this.worker = new Worker(path.join(__dirname, 'python-host-thread.js'), {
      workerData: data,
      name: `py-${args.instanceName}`,
      transferList: [peersChannel.port2],
      resourceLimits: workerResourceLimits(),
    });
    this.threadId = this.worker.threadId;
    this.fromHost = toMain;
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    // A new host gets a new bell; the old one's wake-up counters stay in the server's totals.
    // Its reply rings go too: each frontend drains what it sent and drops them.
    this.worker.once('exit', () => {
      port.bells.retire(toHost.bell);
      port.replies.removeInstance(replies.id);
      peersChannel.port1.close();
    });
    this.worker.on('message', (m: PyHostPortOut) => this.onPort(m));
    this.worker.on('error', (err) => services.log.error(`python host thread of instance ${args.instanceName} failed: ${err.message}`));
    this.worker.on('exit', (code) => this.onThreadExit(code));
  }

  /**
   * Start the thread, which spawns the stub and initializes the model; rejects with the model's error.
   * `builtin`: the stub runs that model nodetron ships on args.modelPath (the pytorch backend).
   */
  static start(args: BackendInstanceArgs, services: ProcessHostServices, builtin?: BuiltinModel): Promise<PythonHost> {
    warnIfSmallShm((msg) => services.log.warn(msg)); // once per server, at the first Python instance
    const host = new PythonHost(args, services, builtin);
    return new Promise((resolve, reject) => {
      let settled = false;
      host.services.port.inbox.add(host.fromHost, (msg: PyHostToMain) => {
        if (msg.t === 'ready') {
          settled = true;
          host.stubPid = msg.pid;
          host.unreadyReason = msg.unready;
          resolve(host);
        } else if (msg.t === 'init_failed') {
          settled = true;
          void host.end().then(() => reject(fromErrorInfo(msg.error)));
        } else {
          host.onRing(msg);
        }
      });
      void host.exited.then(() => {
        if (!settled) reject(fromErrorInfo({ code: 'INTERNAL', message: `python host thread of instance ${args.instanceName} exited while starting` }));
      });
    });
  }

  get pid(): number {
    return this.stubPid;
  }

  onDeath(listener: (why: string) => void): void {
    this.deathListeners.push(listener);
  }

  /** Triton's text for a dead stub: what the instance reports until its restart succeeds. */
  get deadText(): string {
    return notHealthy(this.args.instanceName).message;
  }

  get unready(): string | undefined {
    return this.gone === undefined ? this.unreadyReason : undefined;
  }

  onUnreadyChange(listener: () => void): void {
    this.unreadyListeners.push(listener);
  }

  execute(requests: InferRequest[], stream?: StreamResponse, replyTo?: (ReplyAddress | null)[]): Promise<ExecuteResult> {
    if (this.gone !== undefined || this.stopping) return Promise.resolve(failAll(requests, toErrorInfo(notHealthy(this.args.instanceName))));
    const batchId = this.nextBatchId++;
    return new Promise((resolve) => {
      this.pending.set(batchId, { requests, stream, resolve });
      const msg: MainToPyHost =
        replyTo === undefined
          ? { t: 'execute', batchId, requests, stream: stream !== undefined }
          : { t: 'execute', batchId, requests, stream: stream !== undefined, replyTo };
      this.out.send(msg);
    });
  }

  /** Tells the host thread, which answers the stub's `is_cancelled()` for that request with true from now on. */
  cancel(request: InferRequest): boolean {
    for (const [batchId, p] of this.pending) {
      const index = p.requests.indexOf(request);
      if (index < 0) continue;
      if (this.gone === undefined) this.out.send({ t: 'cancel_in_batch', batchId, index } satisfies MainToPyHost);
      return true;
    }
    return false;
  }

  stop(): Promise<void> {
    this.stopping ??= new Promise<void>((resolve) => {
      this.onStopped = resolve;
      if (this.gone !== undefined || this.threadExited) resolve();
      else this.out.send({ t: 'stop' } satisfies MainToPyHost);
    }).then(() => this.end());
    return this.stopping;
  }

  kill(): Promise<void> {
    this.killing ??= (async () => {
      this.stopping ??= Promise.resolve(); // its death is not reported as one to restart
      if (this.stubPid > 0 && this.gone === undefined) {
        try {
          process.kill(this.stubPid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      this.stubGone('killed: the server is exiting');
      this.onStopped?.();
      await this.end();
    })();
    return this.killing;
  }

  private onRing(msg: PyHostToMain): void {
    switch (msg.t) {
      case 'streamed': {
        const p = this.pending.get(msg.batchId);
        const [response] = adoptOutputs(this.services.arena, [msg.response], this.args.instanceName);
        if (p?.stream !== undefined) p.stream(msg.index, response!);
        else for (const o of response!.outputs) this.services.arena.free(o);
        return;
      }
      case 'executed': {
        const p = this.pending.get(msg.batchId);
        const responses = adoptOutputs(this.services.arena, msg.responses, this.args.instanceName);
        if (p === undefined) {
          for (const r of responses) for (const o of r.outputs) this.services.arena.free(o);
          return;
        }
        this.pending.delete(msg.batchId);
        p.resolve({ responses, timings: msg.timings });
        return;
      }
      case 'stub_exited':
        this.stubGone(msg.why);
        void this.end();
        return;
      case 'stopped':
        this.onStopped?.();
        return;
      case 'unready':
        if (this.unreadyReason === msg.reason) return;
        this.unreadyReason = msg.reason;
        for (const l of this.unreadyListeners) l();
        return;
      default:
        return;
    }
  }

  private onPort(m: PyHostPortOut): void {
    switch (m.t) {
      case 'log':
        this.log(m);
        return;
      case 'bls':
        this.bls(m);
        return;
      case 'metric':
        this.metric(m);
        return;
      case 'bls_cancel':
        this.blsOpen.get(m.id)?.();
        return;
      case 'model_control':
        this.modelControl(m);
        return;
      default:
        return;
    }
  }

  /** pb_utils.load_model, unload_model, is_model_ready, on the repository (main). */
  private modelControl(m: PyModelControl): void {
    const answer = (value: boolean | undefined, error: string | undefined): void => {
      const r: PyHostPortIn = { t: 'model_control_result', id: m.id };
      if (value !== undefined) r.value = value;
      if (error !== undefined) r.error = error;
      this.post(r);
    };
    const control = this.services.modelControl;
    if (control === undefined) {
      answer(undefined, 'model control is not available in this server');
      return;
    }
    const c = m.call;
    let done: Promise<boolean | undefined>;
    try {
      if (c.op === 'ready') done = Promise.resolve(control.isReady(c.model, c.version));
      else if (c.op === 'load')
        done = control.load(c.model, c.config === undefined ? { files: c.files } : { config: c.config, files: c.files }).then(() => undefined);
      else done = control.unload(c.model, c.unloadDependents).then(() => undefined);
    } catch (err) {
      done = Promise.reject(err);
    }
    done.then(
      (v) => answer(v, undefined),
      (err: unknown) => answer(undefined, toErrorInfo(err).message),
    );
  }

  private log(m: PyLog): void {
    // Bound to the model: its lines are also the console's model log (logging/model-log-book.ts).
    const log = this.services.log.child(m.source === undefined ? { model: this.args.config.name } : { source: m.source, model: this.args.config.name });
    if (m.level === 'verbose') log.verbose(m.verbose ?? 1, m.message);
    else log[m.level](m.message);
  }

  /** A BLS request of the stub: into the server's route; each response's outputs go to the host thread. */
  private bls(m: PyBls): void {
    const arena = this.services.arena;
    let finished = false;
    const reply = (response: InferResponse): void => {
      if (response.final) {
        finished = true;
        this.blsOpen.delete(m.id);
      }
      // give refuses only a thread reported dead, so either every output is given or none.
      if (!this.threadExited && response.outputs.every((o) => arena.give(o, this.threadId))) {
        this.post({ t: 'bls_response', id: m.id, response });
        return;
      }
      for (const o of response.outputs) if (arena.ownerOf(o) === arena.threadId) arena.free(o);
    };
    const gateway = this.services.gateway;
    if (gateway === undefined) {
      reply({ outputs: [], error: { code: 'UNSUPPORTED', message: 'BLS is not available in this server' }, final: true });
      return;
    }
    const cancel = gateway.infer(m.request, reply);
    if (!finished) this.blsOpen.set(m.id, cancel);
  }

  private metric(m: PyMetric): void {
    let value: number | undefined;
    let error: string | undefined;
    try {
      if (this.metrics === undefined) throw new Error('custom metrics are not available in this server');
      value = this.metrics.apply(m.op);
    } catch (err) {
      error = (err as Error).message;
    }
    if (m.op.id !== undefined) this.post({ t: 'metric_result', id: m.op.id, value, error });
    else if (error !== undefined) this.services.log.warn(`custom metric operation '${m.op.op}' of ${this.args.instanceName}: ${error}`);
  }

  private post(m: PyHostPortIn): void {
    if (!this.threadExited) this.worker.postMessage(m);
  }

  /** The stub is gone: fail what it had, report the death once (unless stopping). */
  private stubGone(why: string): void {
    if (this.gone !== undefined) return;
    this.gone = why;
    const err = toErrorInfo(notHealthy(this.args.instanceName));
    for (const p of this.pending.values()) p.resolve(failAll(p.requests, err));
    this.pending.clear();
    this.metrics?.close();
    if (this.stopping) return;
    const listeners = this.deathListeners;
    this.deathListeners = [];
    for (const l of listeners) l(why);
  }

  private onThreadExit(code: number): void {
    const port = this.services.port;
    // Results it sent before it ended are good: deliver them before its blocks are reclaimed.
    port.inbox.drain();
    port.inbox.remove(this.fromHost);
    this.threadExited = true;
    this.services.arena.threadDied(this.threadId);
    this.stubGone(`python host thread exited (code ${code})`);
    this.onStopped?.();
  }

  /** End the thread (its stub goes with its pipes) and wait for it. */
  private async end(): Promise<void> {
    if (!this.threadExited) await this.worker.terminate();
    await this.exited;
  }
}

function failAll(requests: InferRequest[], error: ErrorInfo): ExecuteResult {
  const t = nowNs();
  return {
    responses: requests.map(() => ({ outputs: [], error, final: true })),
    timings: { computeStartNs: t, computeInputEndNs: t, computeInferEndNs: t, computeEndNs: t },
  };
}
