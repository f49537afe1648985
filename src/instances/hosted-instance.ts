/**
 * Main-thread side of an instance that lives on a frontend thread (an HTTP
 * thread) instead of a thread of its own: "no hop for tiny models". The
 * frontend thread runs a request to it inline, in the same event-loop turn
 * that admitted it, when the instance is idle there and its gate is open
 * (the execution pool opens it while the version serves and nothing waits
 * in its queue); it then tells main only what the statistics need
 * (`inline`). Every other request (gRPC, BLS, ensembles, a backlog) goes
 * through the scheduler as usual and reaches the instance as `execute` on
 * its ring, as for a worker-thread instance, responses straight to their
 * frontend thread where the pool offers it (reply-rings.ts). One thread runs both, so the
 * instance never runs two executions at once: instance_group.count keeps
 * its meaning.
 *
 * At start the frontend thread loads the backend and times a probe run at
 * the model's full batch (frontend/http/hosted-instances.ts); one longer
 * than --inline-execution-max-us is `declined`, and the instance starts on
 * a worker thread instead, so a long run never holds a frontend's event
 * loop. If the frontend thread dies, what it had queued fails and the
 * instance goes on as a worker-thread instance; if it closes for the
 * server's stop, the instance is stopped with it.
 */
import { MessageChannel } from 'node:worker_threads';
import { ServerError, fromErrorInfo } from '../core/errors';
import type { BackendInstanceArgs } from '../backends/backend';
import type { ExecuteResult, InferRequest, ReplyAddress, StreamResponse } from '../core/request';
import type { Arena } from '../dataplane/arena';
import type { HostInstanceMessage, InstanceHost } from '../dataplane/instance-hosts';
import type { MainPort } from '../dataplane/main-port';
import type { InlineMessage, InstanceToMain, MainToInstance } from '../dataplane/protocol';
import { PendingBatches } from './pending-batches';
import { failedResult } from './failed-result';
import { RingWriter, createRing } from '../dataplane/ring';
import type { RingHandle } from '../dataplane/ring';
import type { InlineRuns, ModelInstance } from './instance';
import { WorkerInstance, type InstanceLog } from './worker-instance';

type Started = 'ready' | 'declined' | 'gone';

export class HostedInstance implements ModelInstance, InlineRuns {
  readonly name: string;
  /** Its host drains the ring in order, so one batch can wait there. */
  readonly pipelineDepth = 2;
  restarts = 0;
  readonly inline: InlineRuns = this;
  /** Word 0: 1 while the frontend thread may run requests inline. */
  private readonly gate = new Int32Array(new SharedArrayBuffer(4));
  private listener: ((request: InferRequest, run: InlineMessage) => void) | undefined;
  private out: RingWriter | undefined;
  private toMain: RingHandle | undefined;
  private readonly pending: PendingBatches;
  private unavailable: ServerError | undefined;
  /** The worker-thread instance it became when its host died. */
  private fallback: ModelInstance | undefined;
  private stopping: Promise<void> | undefined;
  private onStopped: (() => void) | undefined;
  private unwatch: (() => void) | undefined;
  /** Its entry in the reply-ring table and the channel its updates go by, while hosted. */
  private replies: { id: number; channel: MessageChannel } | undefined;
  /** Settles launch: how it started, or the backend's load error. */
  private onStart: { resolve: (s: Started) => void; reject: (err: ServerError) => void } | undefined;
  private hostIndex = -1;

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

  /**
   * The instance on `host`, or, when the host declines it (its probe run
   * was over `maxUs`) or is gone, the same instance on a worker thread.
   */
  static async start(
    port: MainPort,
    arena: Arena,
    backendModule: string,
    args: BackendInstanceArgs,
    host: InstanceHost,
    maxUs: number,
    oneATurn: boolean,
    log?: InstanceLog,
  ): Promise<ModelInstance> {
    const h = new HostedInstance(port, arena, backendModule, args, log);
    const started = await h.launch(host, maxUs, oneATurn);
    if (started === 'ready') return h;
    return WorkerInstance.start(port, arena, backendModule, args, log);
  }

  get unready(): string | undefined {
    return this.fallback?.unready;
  }

  setOpen(open: boolean): void {
    Atomics.store(this.gate, 0, open && this.fallback === undefined ? 1 : 0);
  }

  onRun(listener: (request: InferRequest, run: InlineMessage) => void): void {
    this.listener = listener;
  }

  /** `replyTo`: the host sends those responses straight to their frontend threads (protocol.ts), as an instance thread does. */
  execute(requests: InferRequest[], stream?: StreamResponse, replyTo?: (ReplyAddress | null)[]): Promise<ExecuteResult> {
    if (this.fallback !== undefined) return this.fallback.execute(requests, stream, replyTo);
    const out = this.out;
    if (this.unavailable !== undefined || out === undefined) {
      return Promise.resolve(failedResult(requests, this.unavailable ?? new ServerError('UNAVAILABLE', `instance ${this.name} is not running`)));
    }
    return this.pending.add(requests, (batchId) =>
      out.send((replyTo === undefined ? { t: 'execute', batchId, requests } : { t: 'execute', batchId, requests, replyTo }) satisfies MainToInstance),
    );
  }

  /** A request of a batch sent here was cancelled: the host leaves it unrun if its batch has not started (frontend/http/hosted-instances.ts). */
  cancel(request: InferRequest): void {
    if (this.fallback !== undefined) {
      this.fallback.cancel?.(request);
      return;
    }
    const at = this.pending.locate(request);
    if (at !== undefined) this.out?.send({ t: 'cancel_in_batch', ...at } satisfies MainToInstance);
  }

  stop(): Promise<void> {
    this.stopping ??= new Promise<void>((resolve) => {
      this.setOpen(false);
      if (this.fallback !== undefined) {
        void this.fallback.stop().then(resolve);
        return;
      }
      this.onStopped = resolve;
      if (this.out === undefined || this.unavailable !== undefined) {
        resolve();
        return;
      }
      this.out.send({ t: 'stop' } satisfies MainToInstance);
    }).then(() => this.detach(new ServerError('UNAVAILABLE', `instance ${this.name} is stopped`)));
    return this.stopping;
  }

  async kill(): Promise<void> {
    this.stopping ??= Promise.resolve();
    this.setOpen(false);
    const err = new ServerError('UNAVAILABLE', `instance ${this.name} of model '${this.args.config.name}' was killed: the server is exiting`);
    this.failPending(err);
    this.onStopped?.();
    // Its host is a frontend thread, which the stop closes: only a fallback has a thread of its own.
    if (this.fallback !== undefined) await this.fallback.kill();
    this.detach(err);
  }

  private launch(host: InstanceHost, maxUs: number, oneATurn: boolean): Promise<Started> {
    this.hostIndex = host.index;
    const toInstance = createRing(host.bell);
    const toMain = createRing(this.port.bell);
    this.out = RingWriter.attach(toInstance);
    this.toMain = toMain;
    this.unavailable = new ServerError('UNAVAILABLE', `instance ${this.name} of model '${this.args.config.name}' is starting`);
    const started = new Promise<Started>((resolve, reject) => {
      this.onStart = { resolve, reject };
    });
    this.port.inbox.add(toMain, (msg: InstanceToMain) => this.onMessage(msg));
    this.unwatch = this.port.hosts.watch(host, (closing) => this.hostGone(closing));
    // Reply-ring changes: posted first, then announced on the ring, as for an instance thread (worker-instance.ts).
    const channel = new MessageChannel();
    const out = this.out;
    const replies = this.port.replies.addInstance((update) => {
      channel.port1.postMessage(update);
      out.send({ t: 'peers' } satisfies MainToInstance);
    });
    this.replies = { id: replies.id, channel };
    const msg: HostInstanceMessage = {
      t: 'host_instance',
      toInstance,
      toMain,
      gate: this.gate.buffer as SharedArrayBuffer,
      backendModule: this.backendModule,
      args: { ...this.args, hosted: true },
      maxUs,
      oneATurn,
      peers: replies.peers,
      peersPort: channel.port2,
    };
    host.post(msg, [channel.port2]);
    return started.then(
      (s) => {
        if (s === 'ready') this.unavailable = undefined;
        else this.detach(new ServerError('UNAVAILABLE', `instance ${this.name} is not hosted`));
        return s;
      },
      (err: ServerError) => {
        this.detach(err);
        throw err;
      },
    );
  }

  /** The host said how the instance started (once; later calls are ignored). */
  private started(s: Started, err?: ServerError): void {
    const settle = this.onStart;
    if (settle === undefined) return;
    this.onStart = undefined;
    if (err !== undefined) settle.reject(err);
    else settle.resolve(s);
  }

  private onMessage(msg: InstanceToMain): void {
    switch (msg.t) {
      case 'inline':
        this.port.lastInlineMs = Date.now();
        inlineLedger(this.port).push({ instance: this, run: msg });
        return;
      case 'executed':
      case 'execute_failed':
        this.pending.settle(msg);
        return;
      case 'ready':
        this.log?.info(
          `instance ${this.name} of model '${this.args.config.name}' runs on HTTP thread ${this.hostIndex}: ` +
            `its probe run took ${msg.probeUs ?? 0} us (--inline-execution-max-us)`,
        );
        this.started('ready');
        return;
      case 'declined':
        this.log?.info(
          `instance ${this.name} of model '${this.args.config.name}' runs on a thread of its own: ` +
            `its probe run took ${msg.probeUs} us, over --inline-execution-max-us`,
        );
        this.started('declined');
        return;
      case 'init_failed':
        this.started('gone', fromErrorInfo(msg.error));
        return;
      case 'stopped':
        this.onStopped?.();
        return;
      default:
        return;
    }
  }

  /**
   * The host thread left. Results it sent before are taken first (its
   * outputs are then main's); what it still had fails. A host that died is
   * replaced, for this instance, by a worker thread of its own.
   */
  private hostGone(closing: boolean): void {
    this.port.inbox.drain();
    const err = new ServerError('INTERNAL', `instance ${this.name} of model '${this.args.config.name}' lost its HTTP thread`);
    this.detach(err);
    this.failPending(err);
    if (this.onStart !== undefined) {
      this.started('gone');
      return;
    }
    if (closing || this.stopping !== undefined) {
      this.onStopped?.();
      return;
    }
    this.restarts++;
    this.log?.error(`${err.message}; starting it on a thread of its own`);
    WorkerInstance.start(this.port, this.arena, this.backendModule, this.args, this.log).then(
      (w) => {
        if (this.stopping !== undefined) {
          void w.stop();
          return;
        }
        this.fallback = w;
        this.log?.info(`instance ${this.name} of model '${this.args.config.name}' restarted`);
      },
      (e: unknown) =>
        this.log?.error(`instance ${this.name} of model '${this.args.config.name}' failed to restart: ${e instanceof Error ? e.message : String(e)}`),
    );
  }

  /** Counts one run from the ledger. */
  applyRun(run: InlineMessage): void {
    this.listener?.(
      {
        id: run.id,
        model: this.args.config.name,
        version: this.args.version,
        latest: false,
        batchSize: run.batchSize,
        inputs: [],
        requestedOutputs: null,
        parameters: {},
        arrivalNs: run.queueStartNs,
      },
      run,
    );
  }

  private failPending(err: ServerError): void {
    this.pending.failAll(err);
  }

  /** No more ring traffic either way. */
  private detach(err: ServerError): void {
    Atomics.store(this.gate, 0, 0);
    this.unavailable = err;
    this.out?.close();
    this.out = undefined;
    if (this.toMain !== undefined) this.port.inbox.remove(this.toMain);
    this.toMain = undefined;
    this.unwatch?.();
    this.unwatch = undefined;
    if (this.replies !== undefined) {
      this.port.replies.removeInstance(this.replies.id);
      this.replies.channel.port1.close();
      this.replies = undefined;
    }
  }
}

interface LedgerEntry {
  instance: HostedInstance;
  run: InlineMessage;
}

/**
 * The inline runs main received and has not counted yet, over every hosted
 * instance of the server: counted at the end of the drain that brought them
 * (a microtask), or at once when the statistics are about to be read
 * (MainPort.settle), in the order the requests ended, so a trace's `count`
 * takes the first requests whatever HTTP thread ran them.
 */
class InlineLedger {
  private entries: LedgerEntry[] = [];
  private queued = false;

  push(e: LedgerEntry): void {
    this.entries.push(e);
    if (this.queued) return;
    this.queued = true;
    queueMicrotask(() => this.apply());
  }

  apply(): void {
    this.queued = false;
    if (this.entries.length === 0) return;
    const entries = this.entries;
    this.entries = [];
    if (entries.length > 1) entries.sort((a, b) => a.run.endNs - b.run.endNs);
    for (const e of entries) e.instance.applyRun(e.run);
  }
}

const ledgers = new WeakMap<MainPort, InlineLedger>();

function inlineLedger(port: MainPort): InlineLedger {
  let l = ledgers.get(port);
  if (l === undefined) {
    const ledger = new InlineLedger();
    port.onSettle(() => ledger.apply());
    ledgers.set(port, (l = ledger));
  }
  return l;
}
