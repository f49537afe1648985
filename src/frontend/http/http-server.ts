/**
 * The HTTP thread's own HTTP/1.1 server on node:net: it listens on a socket
 * the main thread opened (listen-socket.ts hands each thread its own
 * descriptor of it), keeps its connections (http-connection.ts), and once a
 * second sweeps them against the edge's deadlines (HttpEdgeLimits): 408 to a
 * request that stopped arriving, a head not whole within the head deadline
 * (however slowly it trickles), a body slower than the minimum rate; a quiet
 * close of keep-alive connections idle for too long. Past
 * --http-max-connections (counted over every thread, `connections`), or past
 * --http-max-connections-per-thread on this thread, a new connection is
 * answered 503 and closed at once, and the open ones go on.
 * Each refusal is logged once per client address.
 */
import net from 'node:net';
import { type ConnectionLimits, HttpConnection, type RequestHandler } from './http-connection';
import { DEFAULT_HEAD_LIMITS } from './request-head-parser';
import { DEFAULT_HTTP_EDGE, type HttpEdgeLimits } from '../../server-options';
import { OncePerClient } from '../once-per-client';

/** 4 MiB of a stream waiting for its client: thousands of events of any LLM (a token's event is some 100-200 bytes). */
export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = { ...DEFAULT_HEAD_LIMITS, maxPipelined: 32, maxChunks: 100_000, maxStreamBuffered: 4 << 20 };

/** The open-connection count: one Int32 per HTTP thread (summed against the cap), and this thread's index in it. */
export interface ConnectionCount {
  slots: Int32Array;
  index: number;
}

export class HttpServer {
  private readonly connections = new Set<HttpConnection>();
  private server: net.Server | undefined;
  /** Coarse clock, advanced by the sweep: what connections stamp their input with. */
  private readonly clock = { now: Date.now() };
  private readonly sweeper: NodeJS.Timeout;

  private readonly logged = new OncePerClient();
  private readonly count: ConnectionCount;

  constructor(
    private readonly handler: RequestHandler,
    private readonly limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS,
    private readonly edge: HttpEdgeLimits = DEFAULT_HTTP_EDGE,
    /** A line for the server's log (a streaming client dropped, a refusal). */
    private readonly warn: (message: string) => void = () => undefined,
    count?: ConnectionCount,
  ) {
    this.count = count ?? { slots: new Int32Array(1), index: 0 };
    this.sweeper = setInterval(() => this.sweep(), 1000);
    this.sweeper.unref();
  }

  /** Listen on the descriptor `fd` (an open listening socket), or on a port of its own (tests); resolves with its port. */
  listen(fd: number | { port: number; host: string }): Promise<number> {
    return new Promise((resolve, reject) => {
      const server = net.createServer({ noDelay: true, allowHalfOpen: true }, (socket) => this.accept(socket));
      server.once('error', reject);
      server.listen(typeof fd === 'number' ? { fd } : fd, () => {
        server.off('error', reject);
        server.on('error', () => undefined);
        resolve((server.address() as net.AddressInfo).port);
      });
      this.server = server;
    });
  }

  /** Stop accepting connections (this thread's descriptor of the port closes); open ones go on. */
  stopListening(): void {
    this.server?.close();
    this.server = undefined;
  }

  /** Stop listening and close every connection (their unanswered requests are aborted). */
  close(): void {
    clearInterval(this.sweeper);
    this.server?.close();
    this.server = undefined;
    for (const c of this.connections) c.destroy();
  }

  private accept(socket: net.Socket): void {
    const { slots, index } = this.count;
    const max = this.edge.maxConnections;
    if (max > 0) {
      let open = 0;
      for (let i = 0; i < slots.length; i++) open += Atomics.load(slots, i);
      if (open >= max) {
        this.refuse(socket, `${open}; --http-max-connections=${max}`, `${open} are open, the most --http-max-connections allows`);
        return;
      }
    }
    const perThread = this.edge.maxConnectionsPerThread;
    const mine = Atomics.load(slots, index);
    if (perThread > 0 && mine >= perThread) {
      this.refuse(
        socket,
        `${mine} on this HTTP thread; --http-max-connections-per-thread=${perThread}`,
        `this thread holds ${mine}, the most --http-max-connections-per-thread allows`,
      );
      return;
    }
    Atomics.add(slots, index, 1);
    const c = new HttpConnection(
      socket,
      this.handler,
      this.limits,
      this.clock,
      (gone) => {
        if (this.connections.delete(gone)) Atomics.sub(slots, index, 1);
      },
      this.warn,
    );
    this.connections.add(c);
  }

  /**
   * Past --http-max-connections (or this thread's --http-max-connections-per-thread):
   * 503 with a KServe error body, and close; nothing the client sends is read.
   * `count`: the count and the flag, for the client; `logged`: the same for the log.
   */
  private refuse(socket: net.Socket, count: string, logged: string): void {
    const body = JSON.stringify({
      error: `the server has too many open connections (${count}): try again later, or reuse a kept-alive connection`,
    });
    socket.on('error', () => undefined);
    socket.end(
      `HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Retry-After: 1\r\nConnection: close\r\n\r\n${body}`,
    );
    setTimeout(() => socket.destroy(), 2000).unref();
    this.logOnce(
      'connections',
      socket.remoteAddress ?? '',
      () => `refused connections from ${socket.remoteAddress}: ${logged}; answered 503 (said once per client)`,
    );
  }

  private logOnce(reason: string, client: string, message: () => string): void {
    if (this.logged.first(reason, client)) this.warn(message());
  }

  private sweep(): void {
    const now = (this.clock.now = Date.now());
    for (const c of this.connections) {
      const late = c.overdue(now, this.edge);
      if (late !== undefined) {
        c.timeOut(late.message);
        this.logOnce(late.reason, c.address, () => `closed a connection of ${c.client}: ${late.message}; answered 408 (said once per client)`);
      } else if (c.phase() === 'idle' && now - c.lastInput >= this.edge.idleMs) c.destroy();
    }
  }
}
