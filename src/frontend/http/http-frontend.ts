/**
 * Main-thread side of the HTTP frontend: starts `--http-thread-count` HTTP
 * threads on one port (listen-socket.ts), gives each a ring pair to the scheduler and a reply
 * port for responses straight from instance threads, keeps their server
 * snapshot current, and stops them gracefully.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { RestrictedGroup } from '../../cli-values';
import { toErrorInfo } from '../../core/errors';
import type { Arena } from '../../dataplane/arena';
import type { MainPort } from '../../dataplane/main-port';
import type { InstanceHost } from '../../dataplane/instance-hosts';
import type { FrontendToMain } from '../../dataplane/protocol';
import { routeFromFrontend, type FrontendCanceller } from '../../dataplane/frontend-requests';
import { RingWriter, createRing } from '../../dataplane/ring';
import type { RingHandle } from '../../dataplane/ring';
import type { InferRequest, RefusedRequest, Respond } from '../../core/request';
import type { Logger } from '../../logging/logger';
import type { ServerSnapshot } from '../../request/server-snapshot';
import type { ControlReply, ControlRequest, HttpThreadData, HttpToMain, MainToHttp } from './http-control';
import { RestartBackoff, whenListening } from '../thread-restarts';
import { ListenSocket } from './listen-socket';
import { workerResourceLimits } from '../../core/young-generation';
import type { HttpEdgeLimits } from '../../server-options';

/** Where a frontend hands a decoded, validated request: the scheduler of its model version. */
export type InferRouter = (request: InferRequest, respond: Respond) => void;

export interface HttpFrontendOptions {
  threadCount: number;
  /** Threads spawned beyond threadCount that listen only if an instance was placed on them by then (ServerOptions.httpSpareThreads). */
  spareThreads?: number;
  address: string;
  port: number;
  maxInputSize: number;
  /** The edge's deadlines and caps (http-server.ts); --http-max-connections is counted over every thread. */
  edge: HttpEdgeLimits;
  /** --http-max-json-response-size (infer-response-encode.ts). */
  maxJsonResponseSize: number;
  /** --http-codec-offload-bytes (codec-pool.ts); 0 = decode and encode inline always. */
  codecOffloadBytes: number;
  serverName: string;
  serverVersion: string;
  extensions: readonly string[];
  /** Answers statistics/logging/trace routes (control-api.ts); absent = 501. */
  control?: (req: ControlRequest) => ControlReply | Promise<ControlReply>;
  /** --http-restricted-api groups, checked by every thread (restricted-api.ts). */
  restrictedApi?: RestrictedGroup[];
  /** Test-only fault injection (NODETRON_TEST_FAULTS; http-control.ts HttpThreadData.faults). */
  faults?: readonly string[];
  /** Where a thread's death and restart are reported. */
  log?: Logger;
  /** --log-access: the threads read client addresses and report what they refuse themselves here. */
  onRefused?: (r: RefusedRequest) => void;
  /** --http-header-forward-pattern, checked by cli-options. */
  headerForwardPattern?: string;
  /** --http-cors-origin (cors.ts); empty or absent = CORS off. */
  corsOrigins?: readonly string[];
  /** --http-console: the console's path (console-assets.ts); absent = no console. */
  consolePath?: string;
  /** --openai-port: a port of its own for the OpenAI-compatible routes only (on httpAddress); absent = none. */
  openaiPort?: number;
  /** --openai-restricted-api groups. */
  openaiRestrictedApi?: RestrictedGroup[];
  /** Bearer tokens (bearer-auth.ts): of the HTTP port, of --openai-port (and the flag that gave them), and whether health checks are exempt. */
  auth?: { http?: string[]; openai?: string[]; openaiFlag: string; exemptHealth: boolean };
}

interface HttpThread {
  index: number;
  worker: Worker;
  /** worker.threadId, kept: it reads -1 once the thread has exited. */
  threadId: number;
  toMain: RingHandle;
  fromMain: RingHandle;
  out: RingWriter;
  /** False once the thread died: nothing more is written to its ring. */
  alive: boolean;
  /** The requests the thread sent that the scheduler has not finished, by key. */
  inflight: Map<number, InferRequest>;
  /** Its port in the reply-ring table: instance threads answer it directly there (dataplane/reply-rings.ts). */
  replyPort: number;
  /** Its entry in the table of threads that host instances (MainPort.hosts). */
  host: InstanceHost;
  /** Why it died (its uncaught error), when it said so before exiting. */
  fatal?: string;
}

export class HttpFrontend {
  private readonly threads: HttpThread[] = [];
  private socket: ListenSocket | undefined;
  private openaiSocket: ListenSocket | undefined;
  private stopping: Promise<number> | undefined;
  private snapshot: ServerSnapshot | undefined;
  private readonly restarts = new RestartBackoff();
  /**
   * Client connections open now, one Int32 per thread index, which the
   * thread keeps (http-server.ts) and every thread sums against
   * --http-max-connections; a dead thread's connections die with it, so its
   * count is zeroed here.
   */
  private readonly connections: SharedArrayBuffer;

  constructor(
    private readonly opts: HttpFrontendOptions,
    private readonly port: MainPort,
    private readonly arena: Arena,
    private readonly router: InferRouter,
    /** Where a request whose client went away is cancelled (server.ts: the repository's cancel). */
    private readonly canceller: FrontendCanceller,
  ) {
    this.connections = new SharedArrayBuffer(4 * (opts.threadCount + (opts.spareThreads ?? 0)));
  }

  /**
   * Start the threads, not yet listening: before the models load, so that
   * instances can be placed on them (MainPort.hosts, instances/hosted-instance.ts).
   */
  spawnThreads(snapshot: ServerSnapshot): void {
    if (this.threads.length > 0) return;
    this.snapshot = snapshot;
    const count = Math.max(1, this.opts.threadCount) + Math.max(0, this.opts.spareThreads ?? 0);
    for (let i = 0; i < count; i++) this.threads.push(this.spawn(i, snapshot));
  }

  /** Spare threads at the end that host no instance now are ended before they listen. */
  private dropIdleSpares(): void {
    const base = Math.max(1, this.opts.threadCount);
    while (this.threads.length > base) {
      const t = this.threads[this.threads.length - 1]!;
      if (this.port.hosts.hosting(t.host)) break;
      this.threads.pop();
      t.alive = false; // not restarted
      this.unlink(t, true);
      void t.worker.terminate();
    }
  }

  /**
   * Main stops reading and writing the thread's rings and forgets it as a
   * reply port and as a host (`closing`: the server stops or it was never
   * needed, so its instances are not moved to threads of their own).
   */
  private unlink(t: HttpThread, closing: boolean): void {
    this.port.hosts.remove(t.host, closing);
    this.port.inbox.remove(t.toMain);
    t.out.close();
    this.port.replies.removeFrontend(t.replyPort);
  }

  /** Start the threads (unless spawnThreads did) and listen; resolves with the bound port. */
  async start(snapshot: ServerSnapshot): Promise<number> {
    this.spawnThreads(snapshot);
    this.dropIdleSpares();
    this.broadcast(snapshot);
    const count = this.threads.length;
    // One socket, bound here; each thread listens on its own descriptor of it (listen-socket.ts).
    this.socket = await ListenSocket.open(this.opts.address, this.opts.port);
    const fds = await this.socket.descriptors(count);
    await Promise.all(this.threads.map((t, i) => this.listen(t, fds[i])));
    if (this.opts.openaiPort !== undefined) {
      this.openaiSocket = await ListenSocket.open(this.opts.address, this.opts.openaiPort);
      const ofds = await this.openaiSocket.descriptors(count);
      await Promise.all(this.threads.map((t, i) => this.listen(t, ofds[i], true)));
    }
    return this.socket.port;
  }

  /** The bound --openai-port, or 0 when there is none. */
  get openaiPort(): number {
    return this.openaiSocket?.port ?? 0;
  }

  broadcast(snapshot: ServerSnapshot): void {
    this.snapshot = snapshot;
    const msg: MainToHttp = { t: 'snapshot', snapshot };
    for (const t of this.threads) if (t.alive) t.worker.postMessage(msg);
  }

  /**
   * Stop taking requests and close (http-thread.ts `close`): each thread
   * answers what it received, then closes its connections, after graceMs at
   * the latest. Resolves with the requests cut at that time, once every
   * thread is gone. Idempotent; a later call with a shorter grace (a forced
   * stop: 0) brings the close forward.
   */
  stop(graceMs: number): Promise<number> {
    const threads = this.threads;
    this.stopping ??= Promise.all(
      threads.map(
        (t) =>
          new Promise<number>((resolve) => {
            if (!t.alive) return resolve(0); // died, replacement not started: nothing to close
            let cut = 0;
            t.worker.once('exit', () => resolve(cut));
            t.worker.on('message', (m: HttpToMain) => {
              if (m.t !== 'closed') return;
              cut = m.cut;
              this.port.hosts.remove(t.host, true); // its instances finalized there
              this.port.inbox.remove(t.toMain);
              this.port.replies.removeFrontend(t.replyPort);
              void t.worker.terminate(); // its sockets are closed: it may end now
            });
          }),
      ),
    ).then((cuts) => cuts.reduce((a, b) => a + b, 0));
    for (const t of threads) if (t.alive) t.worker.postMessage({ t: 'close', graceMs: Math.max(0, graceMs) } satisfies MainToHttp);
    // The threads close their descriptors of the port first thing; with main's own one closed too, the socket is gone and new connections are refused.
    this.socket?.close();
    this.socket = undefined;
    this.openaiSocket?.close();
    this.openaiSocket = undefined;
    return this.stopping;
  }

  private spawn(index: number, snapshot: ServerSnapshot): HttpThread {
    const toMain = createRing(this.port.bell);
    const fromMain = createRing(this.port.bells.create());
    const data: HttpThreadData = {
      index,
      arena: this.arena.handle,
      toMain,
      fromMain,
      maxInputSize: this.opts.maxInputSize,
      edge: this.opts.edge,
      connections: this.connections,
      maxJsonResponseSize: this.opts.maxJsonResponseSize,
      codecOffloadBytes: this.opts.codecOffloadBytes,
      serverName: this.opts.serverName,
      serverVersion: this.opts.serverVersion,
      extensions: this.opts.extensions,
      restrictedApi: this.opts.restrictedApi,
    };
    if (this.opts.faults?.length) data.faults = this.opts.faults;
    if (this.opts.onRefused !== undefined) data.accessLog = true;
    if (this.opts.headerForwardPattern !== undefined) data.headerForwardPattern = this.opts.headerForwardPattern;
    if (this.opts.corsOrigins !== undefined && this.opts.corsOrigins.length > 0) data.corsOrigins = this.opts.corsOrigins;
    if (this.opts.consolePath !== undefined) data.consolePath = this.opts.consolePath;
    const auth = this.opts.auth;
    if (auth?.http !== undefined) data.authTokens = auth.http;
    if (auth?.openai !== undefined) {
      data.openaiAuthTokens = auth.openai;
      data.openaiAuthFlag = auth.openaiFlag;
    }
    if (auth?.exemptHealth === true) data.authExemptHealth = true;
    if (this.opts.openaiRestrictedApi !== undefined && this.opts.openaiRestrictedApi.length > 0) data.openaiRestrictedApi = this.opts.openaiRestrictedApi;
    const worker = new Worker(path.join(__dirname, 'http-thread.js'), { workerData: data, name: `http-${index}`, resourceLimits: workerResourceLimits() });
    const host: InstanceHost = { index, threadId: worker.threadId, bell: fromMain.bell, post: (m, transfer) => worker.postMessage(m, transfer) };
    const t: HttpThread = {
      index,
      worker,
      threadId: worker.threadId,
      toMain,
      fromMain,
      out: RingWriter.attach(fromMain),
      alive: true,
      inflight: new Map(),
      replyPort: this.port.replies.addFrontend(worker.threadId, fromMain.bell, (notice) => worker.postMessage(notice satisfies MainToHttp)),
      host,
    };
    this.port.hosts.add(host);
    // Its wake-up counters stay in the server's totals once the thread is gone.
    worker.once('exit', () => {
      Atomics.store(new Int32Array(this.connections), index, 0);
      this.port.bells.retire(fromMain.bell);
      this.port.hosts.remove(host, this.stopping !== undefined);
    });
    worker.postMessage({ t: 'snapshot', snapshot } satisfies MainToHttp);
    this.port.inbox.add(toMain, (msg: FrontendToMain) => this.onRequest(t, msg));
    worker.on('exit', () => {
      if (t.alive && this.stopping === undefined) this.onDeath(t);
    });
    worker.on('message', (m: HttpToMain) => {
      if (m.t === 'fatal') t.fatal = m.reason;
      if (m.t === 'access') this.opts.onRefused?.(m.entry);
      if (m.t === 'warn') this.opts.log?.warn(m.message);
      // Repository loads answer asynchronously (after the load finished). The
      // reply waits one setImmediate so the snapshot broadcast a load queued
      // (server.ts) reaches the thread first: a client sees what it loaded.
      if (m.t === 'control') {
        void Promise.resolve(this.answerControl(m)).then((r) => setImmediate(() => worker.postMessage(r satisfies MainToHttp)));
      }
    });
    worker.on('error', (err) => {
      t.fatal ??= err.stack ?? err.message;
    });
    return t;
  }

  /**
   * A thread died (its sockets closed with it, so its clients saw a reset).
   * Requests it sent and the scheduler has not seen are dropped; nothing more
   * goes to its ring; the arena sweeps every block it owned (the inputs it
   * admitted, the outputs given to it, in its rings or not); outputs of its
   * requests still in the scheduler are freed as they finish (onRequest's
   * respond). A replacement listens on the same port.
   */
  private onDeath(t: HttpThread): void {
    t.alive = false;
    this.port.inbox.drain(); // what it sent before dying: dropped (onRequest)
    this.unlink(t, false); // its instances take what it sent first, then go on threads of their own
    this.arena.threadDied(t.threadId);
    const reason = t.fatal ?? 'it exited without saying why';
    const delay = this.restarts.next();
    this.opts.log?.error(
      `HTTP thread ${t.index} died: ${reason}\n${t.inflight.size} request(s) it had in flight fail with it ` +
        `(their connections were reset); restarting it${delay > 0 ? ` in ${delay} ms` : ''}`,
    );
    setTimeout(() => this.restart(t.index), delay).unref();
  }

  private restart(index: number): void {
    if (this.stopping !== undefined || this.snapshot === undefined) return;
    const t = this.spawn(index, this.snapshot);
    this.threads[index] = t;
    const socket = this.socket!;
    const openai = this.openaiSocket;
    socket
      .descriptors(1)
      .then((fds) => this.listen(t, fds[0]))
      .then(async () => {
        if (openai !== undefined) await this.listen(t, (await openai.descriptors(1))[0], true);
      })
      .then(
        () => this.opts.log?.info(`HTTP thread ${index} restarted, listening on port ${socket.port}`),
        (err) => this.opts.log?.error(`HTTP thread ${index} could not listen again: ${toErrorInfo(err).message}`),
      );
  }

  private answerControl(m: ControlRequest): ControlReply | Promise<ControlReply> {
    // Statistics of inline runs may sit in the rings, rung lazily (hosted-instances.ts): in before any answer reads them.
    this.port.settle();
    if (this.opts.control) return this.opts.control(m);
    return { t: 'control_reply', id: m.id, status: 501, body: JSON.stringify({ error: `${m.route.kind}: this endpoint is not available` }) };
  }

  private onRequest(t: HttpThread, msg: FrontendToMain): void {
    routeFromFrontend(this.arena, this.port.replies, t, msg, this.router, this.canceller);
  }

  private listen(t: HttpThread, fd: number, openai = false): Promise<number> {
    const listening = whenListening(t.worker);
    t.worker.postMessage((openai ? { t: 'listen', fd, openai } : { t: 'listen', fd }) satisfies MainToHttp);
    return listening;
  }
}
