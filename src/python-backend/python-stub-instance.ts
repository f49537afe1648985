/**
 * One Python model instance on the host side: spawn the stub, initialize the
 * model, run batches. In the server this runs in the instance's host thread
 * (python-host-thread.ts); the main thread sees python-host.ts. Each
 * request of a batch is a slot that ends with its final response; the stub
 * may answer slots in any order and from any thread (response senders,
 * decoupled models), and says when execute() returned (`execute_done`,
 * carrying the batch error if it raised). The batch resolves when every slot
 * has its final response; non-final responses are streamed as they come.
 * A slot can be cancelled (`cancel`): the stub's `is_cancelled()` for that
 * request, which asks here, answers true from then on, and a batch still
 * waiting in the stub's pipe runs without it (answered `skipped`).
 * A model with is_ready() is checked about once a second from here
 * (readiness-checks.ts); the verdict is `unready`.
 */
import type { BackendInstanceArgs } from '../backends/backend';
import { ServerError, toErrorInfo, type ErrorCode, type ErrorInfo } from '../core/errors';
import type { ExecuteResult, ExecuteTimings, StreamResponse } from '../core/request';
import { modelConfigToJson } from '../repository/config/to-json';
import { nowNs } from '../core/clock';
import { skippedResponse, type InferRequest, type InferResponse } from '../core/request';
import { parsePythonBackendOptions } from './backend-options';
import { BlsClient } from './bls-client';
import { BlobBuilder, type WithBlob } from './ipc-framing';
import type { CallMsg, MetricMsg, ResponseMsg, StubRequest, StubToHost } from './ipc-protocol';
import { controlFailure, modelControlCall, type ModelControlCall } from './model-control';
import { initArgs, readTensors, writeRequest } from './request-wire';
import { StubProcess, notHealthy, type BuiltinModel } from './stub-process';
import { stubRuntime } from './execution-env';
import { logHooks } from './requirements-env';
import type { StubHostServices } from './host-services';
import { ReadinessChecks } from './readiness-checks';
import { paramsFromWire } from './wire-int';

const FINALIZE_WAIT_MS = 30_000;
const ERROR_CODES = new Set<ErrorCode>(['UNKNOWN', 'INTERNAL', 'NOT_FOUND', 'INVALID_ARG', 'UNAVAILABLE', 'UNSUPPORTED', 'ALREADY_EXISTS', 'CANCELLED']);

interface Batch {
  requests: InferRequest[];
  finals: (InferResponse | undefined)[];
  open: number;
  h2sOffsets: number[];
  stream: StreamResponse | undefined;
  timings: ExecuteTimings;
  resolve: (r: ExecuteResult) => void;
  /** Indexes of the requests that were cancelled (created on the first). */
  cancelled?: Set<number>;
}

export class PythonStubInstance {
  private readonly batches = new Map<number, Batch>();
  private nextBatch = 1;
  /** When the last batch completed: a batch queued behind it started no earlier. */
  private busyUntilNs = 0;
  private stopping: Promise<void> | undefined;
  private deathListeners: ((why: string) => void)[] = [];
  private releases: number[] = [];
  private releaseQueued = false;
  private readonly bls: BlsClient;
  /** Present when model.py defines is_ready(). */
  private readiness: ReadinessChecks | undefined;
  private readonly unreadyListeners: ((reason: string | undefined) => void)[] = [];

  private constructor(
    private readonly stub: StubProcess,
    private readonly args: BackendInstanceArgs,
    private readonly services: StubHostServices,
  ) {
    this.bls = new BlsClient(stub, services);
    stub.onMessage((m) => this.onMessage(m));
    stub.onExit((why) => this.onExit(why));
  }

  /** `builtin`: the stub runs that shipped model on args.modelPath (the pytorch backend) instead of a model.py. */
  static async start(args: BackendInstanceArgs, services: StubHostServices, builtin?: BuiltinModel): Promise<PythonStubInstance> {
    const opts = parsePythonBackendOptions(args.backendConfig);
    const runtime = await stubRuntime(
      args.config,
      args.modelDir,
      opts.interpreter,
      builtin !== undefined
        ? undefined
        : {
            version: args.version,
            options: opts.env,
            hooks: logHooks(services.log),
          },
    );
    const stub = await StubProcess.spawn({
      interpreter: runtime.interpreter,
      env: runtime.env,
      mode: 'model',
      modelPath: args.modelPath,
      name: args.instanceName,
      model: args.config.name,
      shmDefaultBytes: opts.shmDefaultBytes,
      shmGrowthBytes: opts.shmGrowthBytes,
      startTimeoutMs: opts.stubTimeoutMs,
      log: services.log,
      builtin,
    });
    services.log.info(`python stub process for instance ${args.instanceName} started (pid ${stub.pid})`);
    const instance = new PythonStubInstance(stub, args, services);
    const c = args.config;
    stub.send({
      t: 'init',
      args: initArgs(modelConfigToJson(c), args.kind, args.instanceName, args.deviceId, args.modelDir, args.version, c.name),
      decoupled: c.model_transaction_policy?.decoupled === true,
      reschedulable: c.sequence_batching?.['iterative_sequence'] === true,
    });
    let done;
    try {
      done = await stub.waitFor('init_done');
    } catch (err) {
      stub.kill();
      throw err;
    }
    if (done.error !== undefined) {
      stub.kill();
      await stub.whenExited();
      throw new ServerError('INTERNAL', done.error);
    }
    if (done.is_ready === true) {
      const checks = new ReadinessChecks(stub, args.instanceName, (reason) => {
        for (const l of instance.unreadyListeners) l(reason);
      });
      instance.readiness = checks;
      await checks.start();
      // Died during the first check: nobody listens for its death yet, so the start fails instead.
      if (stub.exited) throw notHealthy(args.instanceName);
    }
    return instance;
  }

  /** What the model's is_ready() last said, as a reason (undefined: ready, or no is_ready()). */
  get unready(): string | undefined {
    return this.readiness?.unready;
  }

  onUnreadyChange(listener: (reason: string | undefined) => void): void {
    this.unreadyListeners.push(listener);
  }

  get pid(): number {
    return this.stub.pid;
  }

  onDeath(listener: (why: string) => void): void {
    this.deathListeners.push(listener);
  }

  execute(requests: InferRequest[], stream?: StreamResponse): Promise<ExecuteResult> {
    const start = nowNs();
    const timings: ExecuteTimings = { computeStartNs: start, computeInputEndNs: start, computeInferEndNs: start, computeEndNs: start };
    if (this.stub.exited || this.stopping) return Promise.resolve(failAll(requests, toErrorInfo(notHealthy(this.args.instanceName)), timings));
    const batchId = this.nextBatch++;
    const wire: StubRequest[] = [];
    const h2sOffsets: number[] = [];
    const blob = new BlobBuilder();
    try {
      for (const r of requests) {
        const { wire: w, offsets } = writeRequest(r, this.args.config, this.services.arena, this.stub.h2s, blob);
        wire.push(w);
        for (const o of offsets) h2sOffsets.push(o);
      }
    } catch (err) {
      for (const o of h2sOffsets) this.stub.h2s.release(o);
      return Promise.resolve(failAll(requests, toErrorInfo(err), timings));
    }
    timings.computeInputEndNs = nowNs();
    return new Promise((resolve) => {
      this.batches.set(batchId, {
        requests,
        finals: new Array(requests.length).fill(undefined),
        open: requests.length,
        h2sOffsets,
        stream,
        timings,
        resolve,
      });
      this.stub.send({ t: 'execute', batch: batchId, requests: wire }, blob);
    });
  }

  /**
   * Request `index` of the batch whose requests are `requests` (the array
   * given to execute) was cancelled. A running model asks (`is_cancelled()`),
   * as Triton's stub asks its parent; the stub is also told (`cancel`), so
   * that a batch still waiting in its pipe leaves the request out of
   * execute() and answers it `skipped`.
   */
  cancel(requests: InferRequest[], index: number): void {
    for (const [id, b] of this.batches) {
      if (b.requests !== requests) continue;
      (b.cancelled ??= new Set()).add(index);
      this.stub.send({ t: 'cancel', batch: id, index });
      return;
    }
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.readiness?.stop();
      if (this.stub.exited) return;
      this.stub.send({ t: 'finalize' });
      const timer = setTimeout(() => this.stub.kill(), FINALIZE_WAIT_MS);
      await this.stub.whenExited();
      clearTimeout(timer);
    })();
    return this.stopping;
  }

  private onMessage(m: StubToHost): void {
    switch (m.t) {
      case 'response':
        this.onResponse(m, (m as WithBlob).blob);
        return;
      case 'execute_done': {
        const blob = (m as WithBlob).blob;
        if (m.responses !== undefined) for (const r of m.responses) this.onResponse(r, blob);
        const b = this.batches.get(m.batch);
        if (!b) return;
        b.timings.computeInferEndNs = nowNs();
        if (m.error !== undefined) this.failOpen(m.batch, b, { code: 'INTERNAL', message: m.error });
        return;
      }
      case 'release_h2s':
        for (const o of m.offsets) this.stub.h2s.release(o);
        return;
      case 'ready_check_result':
        this.readiness?.onResult(m);
        return;
      case 'bls':
        this.bls.run(m);
        return;
      case 'bls_cancel':
        this.bls.cancel(m.id);
        return;
      case 'is_cancelled': {
        const value = this.batches.get(m.batch)?.cancelled?.has(m.index) === true;
        this.stub.send({ t: 'call_result', id: m.id, value });
        return;
      }
      case 'metric':
        this.onMetric(m);
        return;
      case 'call':
        this.onCall(m);
        return;
      default:
        return;
    }
  }

  /** pb_utils.load_model, unload_model, is_model_ready: the server's repository answers. */
  private onCall(m: CallMsg): void {
    const reply = (value: boolean | undefined, error: string | undefined): void => {
      if (!this.stub.exited) this.stub.send({ t: 'call_result', id: m.id, value, error });
    };
    let call: ModelControlCall;
    try {
      call = modelControlCall(m.name, m.args);
    } catch (err) {
      reply(undefined, controlFailure(m.name, toErrorInfo(err).message));
      return;
    }
    const control = this.services.modelControl;
    if (control === undefined) {
      reply(undefined, controlFailure(m.name, 'model control is not available in this server'));
      return;
    }
    control(call).then(
      (value) => reply(value, undefined),
      (err: unknown) => reply(undefined, controlFailure(m.name, toErrorInfo(err).message)),
    );
  }

  private onMetric(m: MetricMsg): void {
    const id = m.id;
    const reply =
      id === undefined
        ? undefined
        : (value: number | undefined, error: string | undefined): void => {
            this.stub.send({ t: 'call_result', id, value, error });
          };
    if (this.services.metric !== undefined) {
      this.services.metric(m, reply);
      return;
    }
    const error = 'custom metrics are not available in this server';
    if (reply !== undefined) reply(undefined, error);
    else this.services.log.warn(`custom metric operation '${m.op}' of ${this.args.instanceName}: ${error}`);
  }

  /** One response; `blob` is its frame's blob (inline outputs). */
  private onResponse(m: ResponseMsg, blob: Buffer | undefined): void {
    const b = this.batches.get(m.batch);
    const slotOpen = b !== undefined && b.finals[m.index] === undefined && m.index < b.requests.length;
    let response: InferResponse | undefined;
    if (slotOpen && m.skipped === true) {
      response = skippedResponse(b.requests[m.index]!);
    } else if (slotOpen) {
      try {
        response =
          m.rescheduled === true
            ? { outputs: [], final: true, rescheduled: true }
            : m.error !== undefined
              ? { outputs: [], error: wireError(m.error), final: m.final }
              : { outputs: readTensors(m.outputs, this.services.arena, this.stub.s2h, blob, this.stub.h2s), final: m.final };
        if (m.parameters !== undefined && response.error === undefined) response.parameters = paramsFromWire(m.parameters);
      } catch (err) {
        response = { outputs: [], error: toErrorInfo(err), final: true };
      }
    }
    this.release(m.outputs);
    if (!slotOpen || response === undefined) return;
    if (!response.final) {
      b.stream?.(m.index, response);
      if (b.stream === undefined) for (const o of response.outputs) this.services.arena.free(o);
      return;
    }
    b.finals[m.index] = response;
    if (--b.open === 0) this.complete(m.batch, b);
  }

  private failOpen(batchId: number, b: Batch, error: ErrorInfo): void {
    for (let i = 0; i < b.finals.length; i++) {
      if (b.finals[i] !== undefined) continue;
      b.finals[i] = { outputs: [], error: { code: error.code, message: error.message }, final: true };
    }
    b.open = 0;
    this.complete(batchId, b);
  }

  private complete(batchId: number, b: Batch): void {
    this.batches.delete(batchId);
    if (!this.stub.exited) for (const o of b.h2sOffsets) this.stub.h2s.release(o);
    const t = b.timings;
    t.computeEndNs = nowNs();
    // A batch sent while the previous one ran (pipelineDepth > 1) waited in the
    // stub's pipe until then: that wait is queue time, not compute.
    if (this.busyUntilNs > t.computeStartNs) t.computeStartNs = Math.min(this.busyUntilNs, t.computeEndNs);
    if (t.computeInputEndNs < t.computeStartNs) t.computeInputEndNs = t.computeStartNs;
    if (t.computeInferEndNs < t.computeInputEndNs) t.computeInferEndNs = t.computeEndNs;
    this.busyUntilNs = t.computeEndNs;
    b.resolve({ responses: b.finals as InferResponse[], timings: t });
  }

  /** s2h blocks the host has copied out: tell the stub, a few at a time (inline tensors have none). */
  private release(outputs: ResponseMsg['outputs']): void {
    let any = false;
    for (const o of outputs) {
      if (o.inline === true || o.region !== undefined) continue;
      this.releases.push(o.offset);
      any = true;
    }
    if (!any || this.releaseQueued) return;
    this.releaseQueued = true;
    setImmediate(() => {
      this.releaseQueued = false;
      const offsets = this.releases;
      this.releases = [];
      this.stub.send({ t: 'release', offsets });
    });
  }

  private onExit(why: string): void {
    this.readiness?.stop();
    const err = toErrorInfo(notHealthy(this.args.instanceName));
    for (const [id, b] of [...this.batches]) this.failOpen(id, b, err);
    this.bls.stubGone();
    if (this.stopping) return;
    const listeners = this.deathListeners;
    this.deathListeners = [];
    for (const l of listeners) l(why);
  }
}

function wireError(e: { code: string; message: string }): ErrorInfo {
  const code = ERROR_CODES.has(e.code as ErrorCode) ? (e.code as ErrorCode) : 'INTERNAL';
  return { code, message: e.message };
}

function failAll(requests: InferRequest[], error: ErrorInfo, timings: ExecuteTimings): ExecuteResult {
  return { responses: requests.map(() => ({ outputs: [], error, final: true })), timings };
}
