/**
 * Main-thread side of the HTTP frontend: starts `--http-thread-count` uWS
 * threads on one port, gives each a ring pair to the scheduler, keeps their
 * server snapshot current, and stops them gracefully.
 */
import net from 'node:net';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { RestrictedGroup } from '../../cli-values';
import { ServerError, toErrorInfo } from '../../core/errors';
import type { Arena } from '../../dataplane/arena';
import type { MainPort } from '../../dataplane/main-port';
import type { FrontendToMain, MainToFrontend } from '../../dataplane/protocol';
import { RingWriter, createRing } from '../../dataplane/ring';
import type { RingHandle } from '../../dataplane/ring';
import type { InferRequest, Respond } from '../../core/request';
import type { ServerSnapshot } from '../../request/server-snapshot';
import type { ControlReply, ControlRequest, HttpThreadData, HttpToMain, MainToHttp } from './http-control';

/** Where a frontend hands a decoded, validated request: the scheduler of its model version. */
export type InferRouter = (request: InferRequest, respond: Respond) => void;

export interface HttpFrontendOptions {
  threadCount: number;
  address: string;
  port: number;
  maxInputSize: number;
  serverName: string;
  serverVersion: string;
  extensions: readonly string[];
  /** Answers statistics/logging/trace routes (control-api.ts); absent = 501. */
  control?: (req: ControlRequest) => ControlReply | Promise<ControlReply>;
  /** --http-restricted-api groups, checked by every thread (restricted-api.ts). */
  restrictedApi?: RestrictedGroup[];
}

interface HttpThread {
  worker: Worker;
  toMain: RingHandle;
  out: RingWriter;
}

export class HttpFrontend {
  private readonly threads: HttpThread[] = [];
  private boundPort = 0;
  private stopping: Promise<void> | undefined;

  constructor(
    private readonly opts: HttpFrontendOptions,
    private readonly port: MainPort,
    private readonly arena: Arena,
    private readonly router: InferRouter,
  ) {}

  /** Start the threads and listen; resolves with the bound port. */
  async start(snapshot: ServerSnapshot): Promise<number> {
    for (let i = 0; i < Math.max(1, this.opts.threadCount); i++) this.threads.push(this.spawn(i, snapshot));
    // Every thread binds the same port (SO_REUSEPORT). The kernel refuses a
    // second bind to a port it picked for a port-0 bind, so for port 0 we ask
    // the kernel for a free port first and then bind all threads to it.
    const wanted = this.opts.port === 0 ? await freePort(this.opts.address) : this.opts.port;
    this.boundPort = await this.listen(this.threads[0], wanted);
    await Promise.all(this.threads.slice(1).map((t) => this.listen(t, this.boundPort)));
    return this.boundPort;
  }

  broadcast(snapshot: ServerSnapshot): void {
    const msg: MainToHttp = { t: 'snapshot', snapshot };
    for (const t of this.threads) t.worker.postMessage(msg);
  }

  /** Close the listen sockets, wait until every thread has answered its in-flight requests. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= Promise.all(
      this.threads.map(
        (t) =>
          new Promise<void>((resolve) => {
            const done = (): void => {
              this.port.inbox.remove(t.toMain);
              void t.worker.terminate().then(() => resolve());
            };
            t.worker.once('exit', () => resolve());
            t.worker.on('message', (m: HttpToMain) => {
              if (m.t === 'closed') done();
            });
            t.worker.postMessage({ t: 'close' } satisfies MainToHttp);
          }),
      ),
    ).then(() => undefined);
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
      serverName: this.opts.serverName,
      serverVersion: this.opts.serverVersion,
      extensions: this.opts.extensions,
      restrictedApi: this.opts.restrictedApi,
    };
    const worker = new Worker(path.join(__dirname, 'http-thread.js'), { workerData: data, name: `http-${index}` });
    const out = RingWriter.attach(fromMain);
    // Its wake-up counters stay in the server's totals once the thread is gone.
    worker.once('exit', () => this.port.bells.retire(fromMain.bell));
    worker.postMessage({ t: 'snapshot', snapshot } satisfies MainToHttp);
    this.port.inbox.add(toMain, (msg: FrontendToMain) => this.onRequest(out, msg));
    worker.on('message', (m: HttpToMain) => {
      // Repository loads answer asynchronously (after the load finished). The
      // reply waits one setImmediate so the snapshot broadcast a load queued
      // (server.ts) reaches the thread first: a client sees what it loaded.
      if (m.t === 'control') {
        void Promise.resolve(this.answerControl(m)).then((r) => setImmediate(() => worker.postMessage(r satisfies MainToHttp)));
      }
    });
    worker.on('error', (err) => {
      // A frontend thread must not die silently: the process cannot serve correctly without it.
      process.emitWarning(`HTTP thread ${index} failed: ${err.stack ?? err.message}`);
    });
    return { worker, toMain, out };
  }

  private answerControl(m: ControlRequest): ControlReply | Promise<ControlReply> {
    if (this.opts.control) return this.opts.control(m);
    return { t: 'control_reply', id: m.id, status: 501, body: JSON.stringify({ error: `${m.route.kind}: this endpoint is not available` }) };
  }

  private onRequest(out: RingWriter, msg: FrontendToMain): void {
    const key = msg.key;
    const respond: Respond = (response) => {
      const reply: MainToFrontend = { t: 'response', key, response };
      out.send(reply);
    };
    try {
      this.router(msg.request, respond);
    } catch (err) {
      respond({ outputs: [], error: toErrorInfo(err), final: true });
    }
  }

  private listen(t: HttpThread, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const onMessage = (m: HttpToMain): void => {
        if (m.t === 'listening') {
          t.worker.off('message', onMessage);
          resolve(m.port);
        } else if (m.t === 'listen_failed') {
          t.worker.off('message', onMessage);
          reject(new ServerError('UNAVAILABLE', m.message));
        }
      };
      t.worker.on('message', onMessage);
      t.worker.postMessage({ t: 'listen', address: this.opts.address, port } satisfies MainToHttp);
    });
  }
}

function freePort(address: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, address, () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}
