/**
 * Host side of an in-process backend instance: a worker thread running the
 * backend (instance-thread.ts). Batches go out and results come back over
 * SharedArrayBuffer rings; tensors stay in the shared arena.
 *
 * Arena ownership (protocol.ts): the thread allocates its outputs; on
 * `executed` this (main) thread adopts them, one compareExchange per block.
 * When the thread exits, the results it had already sent are taken first,
 * then Arena.threadDied frees what it still owned (outputs of the batch it
 * died in) and takes the arena lock over if it died holding it.
 */
import path from 'node:path';
import { MessageChannel, Worker } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { ServerError, fromErrorInfo, toErrorInfo } from '../core/errors';
import type { BackendInstanceArgs } from '../backends/backend';
import type { ExecuteResult, InferRequest, ReplyAddress, StreamResponse } from '../core/request';
import type { Arena } from '../dataplane/arena';
import type { ModelInstance } from './instance';
import type { MainPort } from '../dataplane/main-port';
import type { InstanceToMain, MainToInstance } from '../dataplane/protocol';
import type { ReplyPeer } from '../dataplane/reply-rings';
import { PendingBatches } from './pending-batches';
import { failedResult } from './failed-result';
import { RingWriter, createRing } from '../dataplane/ring';
import type { RingHandle } from '../dataplane/ring';
import { workerResourceLimits } from '../core/young-generation';

export interface InstanceThreadData {
  arena: Arena['handle'];
  toInstance: RingHandle;
  toMain: RingHandle;
  backendModule: string;
  args: BackendInstanceArgs;
  /** Its rings to the frontend threads there are now (reply-rings.ts) ... */
  peers: ReplyPeer[];
  /** ... and where later changes wait (read on a `peers` ring message). */
  peersPort: MessagePort;
}

/** One running thread of the instance; replaced when the thread dies. */
interface ThreadLink {
  worker: Worker;
  /** worker.threadId, kept: it reads -1 once the thread has exited. */
  threadId: number;
  out: RingWriter;
  fromInstance: RingHandle;
}

/** Where restarts are reported (the server's logger). */
export interface InstanceLog {
  info(msg: string): void;
  error(msg: string): void;
}

export class WorkerInstance implements ModelInstance {
  readonly name: string;
  /** The thread drains its ring in order, so one batch can wait there (see ModelInstance). */
  readonly pipelineDepth = 2;
  /** Deaths of the thread that began a restart (ModelInstance.restarts). */
  restarts = 0;
  private link: ThreadLink | undefined;
  private readonly pending: PendingBatches;
  /** Why batches cannot run now: starting, restarting, failed to restart, or stopped. */
  private unavailable: ServerError | undefined;
  private stopping: Promise<void> | undefined;
  private killing: Promise<void> | undefined;
  private onStopped: (() => void) | undefined;

  private constructor(
    private readonly port: MainPort,
    private readonly arena: Arena,
    private readonly backendModule: string,
    private readonly args: BackendInstanceArgs,
    private readonly log: InstanceLog | undefined,
  ) {
    this.name = args.instanceName;
    this.pending = new PendingBatches(arena, args.instanceName);
  }

  /** Start the thread and wait until the backend instance is initialized (or failed). */
  static async start(port: MainPort, arena: Arena, backendModule: string, args: BackendInstanceArgs, log?: InstanceLog): Promise<WorkerInstance> {
    const instance = new WorkerInstance(port, arena, backendModule, args, log);
    await instance.launch();
    return instance;
  }

  /** `replyTo`: the thread sends those responses straight to their frontend threads (protocol.ts). */
  execute(requests: InferRequest[], _stream?: StreamResponse, replyTo?: (ReplyAddress | null)[]): Promise<ExecuteResult> {
    const link = this.link;
    if (this.unavailable || link === undefined) {
      return Promise.resolve(failedResult(requests, this.unavailable ?? new ServerError('UNAVAILABLE', `instance ${this.name} is not running`)));
    }
    return this.pending.add(requests, (batchId) => {
      const msg: MainToInstance = replyTo === undefined ? { t: 'execute', batchId, requests } : { t: 'execute', batchId, requests, replyTo };
      link.out.send(msg);
    });
  }

  /** A request of a batch sent here was cancelled: the thread leaves it unrun if its batch has not started (instance-runner.ts). */
  cancel(request: InferRequest): void {
    const at = this.pending.locate(request);
    if (at !== undefined) this.link?.out.send({ t: 'cancel_in_batch', ...at } satisfies MainToInstance);
  }

  stop(): Promise<void> {
    this.stopping ??= new Promise<void>((resolve) => {
      this.onStopped = resolve;
      const link = this.link;
      if (link === undefined || this.unavailable) {
        resolve();
        return;
      }
      const msg: MainToInstance = { t: 'stop' };
      link.out.send(msg);
    }).then(() => this.terminate());
    return this.stopping;
  }

  kill(): Promise<void> {
    this.killing ??= (async () => {
      this.stopping ??= Promise.resolve(); // a thread that dies from here on is not restarted
      const err = new ServerError('UNAVAILABLE', `instance ${this.name} of model '${this.args.config.name}' was killed: the server is exiting`);
      this.pending.failAll(err);
      this.onStopped?.();
      await this.terminate();
    })();
    return this.killing;
  }

  /** A new thread with its own rings; resolves once its backend instance is ready. */
  private launch(): Promise<void> {
    const toInstance = createRing(this.port.bells.create());
    const toMain = createRing(this.port.bell);
    const out = RingWriter.attach(toInstance);
    // Reply-ring changes: posted first, then announced on the ring, so the
    // thread reads them before any execute that names a new frontend.
    const peersChannel = new MessageChannel();
    const replies = this.port.replies.addInstance((update) => {
      peersChannel.port1.postMessage(update);
      out.send({ t: 'peers' } satisfies MainToInstance);
    });
    const data: InstanceThreadData = {
      arena: this.arena.handle,
      toInstance,
      toMain,
      backendModule: this.backendModule,
      args: this.args,
      peers: replies.peers,
      peersPort: peersChannel.port2,
    };
    const worker = new Worker(path.join(__dirname, 'instance-thread.js'), {
      workerData: data,
      name: this.name,
      transferList: [peersChannel.port2],
      resourceLimits: workerResourceLimits(),
    });
    const link: ThreadLink = { worker, threadId: worker.threadId, out, fromInstance: toMain };
    // A restarted thread gets a new bell; the old one's wake-up counters stay in the server's totals.
    // Its reply rings go too: each frontend drains what it sent and drops them.
    worker.once('exit', () => {
      this.port.bells.retire(toInstance.bell);
      this.port.replies.removeInstance(replies.id);
      peersChannel.port1.close();
    });
    this.link = link;
    this.unavailable = new ServerError('UNAVAILABLE', `instance ${this.name} of model '${this.args.config.name}' is starting`);
    const what = `instance ${this.name} of model '${this.args.config.name}'`;
    return new Promise((resolve, reject) => {
      let settled = false;
      const settle = (err: ServerError | undefined): void => {
        if (settled) return;
        settled = true;
        if (err === undefined) {
          this.unavailable = undefined;
          resolve();
        } else {
          this.port.inbox.remove(toMain);
          void worker.terminate();
          if (this.link === link) this.link = undefined;
          this.unavailable = err;
          reject(err);
        }
      };
      this.port.inbox.add(toMain, (msg: InstanceToMain) => {
        if (msg.t === 'ready') settle(undefined);
        else if (msg.t === 'init_failed') settle(fromErrorInfo(msg.error));
        else this.onMessage(msg);
      });
      worker.on('error', (err) => {
        const e = new ServerError('INTERNAL', `${what} failed: ${err.message}`);
        if (settled && this.link === link) this.port.inbox.drain();
        if (!settled) settle(e);
        else this.threadDied(link, e);
      });
      worker.on('exit', (code) => {
        const e = new ServerError('INTERNAL', `${what} exited (code ${code})`);
        // Results it sent before it ended are good: deliver them before its blocks are reclaimed.
        if (settled && this.link === link) this.port.inbox.drain();
        this.arena.threadDied(link.threadId);
        if (!settled) settle(e);
        else this.threadDied(link, e);
      });
    });
  }

  private onMessage(msg: InstanceToMain): void {
    switch (msg.t) {
      case 'executed':
      case 'execute_failed':
        this.pending.settle(msg);
        return;
      case 'stopped':
        this.onStopped?.();
        return;
      default:
        return;
    }
  }

  /**
   * The thread died: fail what it was running, then (unless stopping) start
   * a new thread. Batches that arrive meanwhile fail fast with UNAVAILABLE.
   */
  private threadDied(link: ThreadLink, err: ServerError): void {
    if (this.link !== link) return;
    this.link = undefined;
    this.port.inbox.remove(link.fromInstance);
    this.pending.failAll(err);
    if (this.stopping) {
      this.onStopped?.();
      return;
    }
    this.restarts++;
    this.log?.error(`${err.message}; restarting it`);
    this.launch().then(
      () => this.log?.info(`instance ${this.name} of model '${this.args.config.name}' restarted`),
      (e: unknown) => {
        if (!this.stopping) this.log?.error(`instance ${this.name} of model '${this.args.config.name}' failed to restart: ${toErrorInfo(e).message}`);
      },
    );
  }

  private async terminate(): Promise<void> {
    const link = this.link;
    this.link = undefined;
    this.unavailable = new ServerError('UNAVAILABLE', `instance ${this.name} is stopped`);
    if (link === undefined) return;
    this.port.inbox.remove(link.fromInstance);
    await link.worker.terminate();
  }
}
