/**
 * Host side of an in-process backend instance: a worker thread running the
 * backend (instance-thread.ts). Batches go out and results come back over
 * SharedArrayBuffer rings; tensors stay in the shared arena.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { ServerError, fromErrorInfo, toErrorInfo } from '../errors';
import type { BackendInstanceArgs } from '../backends/backend';
import type { InferRequest } from '../scheduler/request';
import { nowNs } from '../scheduler/clock';
import type { Arena } from './arena';
import type { ExecuteResult, ModelInstance } from './instance';
import type { MainPort } from './main-port';
import type { InstanceToMain, MainToInstance } from './protocol';
import { Doorbell, RingWriter, createRing } from './ring';
import type { RingHandle } from './ring';

export interface InstanceThreadData {
  arena: Arena['handle'];
  toInstance: RingHandle;
  toMain: RingHandle;
  backendModule: string;
  args: BackendInstanceArgs;
}

interface Pending {
  requests: InferRequest[];
  resolve: (r: ExecuteResult) => void;
}

export class WorkerInstance implements ModelInstance {
  readonly name: string;
  /** The thread drains its ring in order, so one batch can wait there (see ModelInstance). */
  readonly pipelineDepth = 2;
  private readonly worker: Worker;
  private readonly out: RingWriter;
  private readonly fromInstance: RingHandle;
  private readonly port: MainPort;
  private readonly pending = new Map<number, Pending>();
  private nextBatchId = 1;
  private dead: ServerError | undefined;
  private stopping: Promise<void> | undefined;
  private onStopped: (() => void) | undefined;

  private constructor(name: string, worker: Worker, out: RingWriter, fromInstance: RingHandle, port: MainPort) {
    this.name = name;
    this.worker = worker;
    this.out = out;
    this.fromInstance = fromInstance;
    this.port = port;
  }

  /** Start the thread and wait until the backend instance is initialized (or failed). */
  static start(port: MainPort, arena: Arena, backendModule: string, args: BackendInstanceArgs): Promise<WorkerInstance> {
    const toInstance = createRing(Doorbell.create().handle);
    const toMain = createRing(port.bell);
    const data: InstanceThreadData = { arena: arena.handle, toInstance, toMain, backendModule, args };
    const worker = new Worker(path.join(__dirname, 'instance-thread.js'), { workerData: data, name: args.instanceName });
    const instance = new WorkerInstance(args.instanceName, worker, RingWriter.attach(toInstance), toMain, port);
    return new Promise((resolve, reject) => {
      let settled = false;
      port.inbox.add(toMain, (msg: InstanceToMain) => {
        if (!settled && (msg.t === 'ready' || msg.t === 'init_failed')) {
          settled = true;
          if (msg.t === 'ready') {
            resolve(instance);
          } else {
            void instance.terminate();
            reject(fromErrorInfo(msg.error));
          }
          return;
        }
        instance.onMessage(msg);
      });
      worker.on('error', (err) => {
        const e = new ServerError('INTERNAL', `instance ${args.instanceName} of model '${args.config.name}' failed: ${err.message}`);
        if (!settled) {
          settled = true;
          reject(e);
        }
        instance.fail(e);
      });
      worker.on('exit', (code) => {
        const e = new ServerError('INTERNAL', `instance ${args.instanceName} of model '${args.config.name}' exited (code ${code})`);
        if (!settled) {
          settled = true;
          reject(e);
        }
        instance.fail(e);
      });
    });
  }

  execute(requests: InferRequest[]): Promise<ExecuteResult> {
    if (this.dead) return Promise.resolve(failedResult(requests, this.dead));
    const batchId = this.nextBatchId++;
    return new Promise((resolve) => {
      this.pending.set(batchId, { requests, resolve });
      this.send({ t: 'execute', batchId, requests });
    });
  }

  stop(): Promise<void> {
    if (!this.stopping) {
      this.stopping = new Promise<void>((resolve) => {
        this.onStopped = resolve;
        if (this.dead) {
          resolve();
          return;
        }
        this.send({ t: 'stop' });
      }).then(() => this.terminate());
    }
    return this.stopping;
  }

  private send(msg: MainToInstance): void {
    this.out.send(msg);
  }

  private onMessage(msg: InstanceToMain): void {
    switch (msg.t) {
      case 'executed': {
        const p = this.pending.get(msg.batchId);
        if (!p) return;
        this.pending.delete(msg.batchId);
        p.resolve({ responses: msg.responses, timings: msg.timings });
        return;
      }
      case 'execute_failed': {
        const p = this.pending.get(msg.batchId);
        if (!p) return;
        this.pending.delete(msg.batchId);
        const result = failedResult(p.requests, fromErrorInfo(msg.error));
        if (msg.timings) result.timings = msg.timings;
        p.resolve(result);
        return;
      }
      case 'stopped':
        this.onStopped?.();
        return;
      default:
        return;
    }
  }

  /** The thread died: fail what it was running, refuse what comes next. */
  private fail(err: ServerError): void {
    if (this.dead) return;
    this.dead = err;
    for (const p of this.pending.values()) p.resolve(failedResult(p.requests, err));
    this.pending.clear();
    this.onStopped?.();
    this.port.inbox.remove(this.fromInstance);
  }

  private async terminate(): Promise<void> {
    this.port.inbox.remove(this.fromInstance);
    this.dead ??= new ServerError('UNAVAILABLE', `instance ${this.name} is stopped`);
    await this.worker.terminate();
  }
}

function failedResult(requests: InferRequest[], err: ServerError): ExecuteResult {
  const t = nowNs();
  const error = toErrorInfo(err);
  return {
    responses: requests.map(() => ({ outputs: [], error, final: true })),
    timings: { computeStartNs: t, computeInputEndNs: t, computeInferEndNs: t, computeEndNs: t },
  };
}
