/**
 * The HTTP thread's own HTTP/1.1 server on node:net: it listens on a socket
 * the main thread opened (listen-socket.ts hands each thread its own
 * descriptor of it), keeps its connections (http-connection.ts), and once a
 * second sweeps them: 408 to a request that stopped arriving half-way, a
 * quiet close of keep-alive connections idle for too long.
 */
import net from 'node:net';
import { type ConnectionLimits, HttpConnection, type RequestHandler } from './http-connection';
import { DEFAULT_HEAD_LIMITS } from './request-head-parser';

/** 4 MiB of a stream waiting for its client: thousands of events of any LLM (a token's event is some 100-200 bytes). */
export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = { ...DEFAULT_HEAD_LIMITS, maxPipelined: 32, maxChunks: 100_000, maxStreamBuffered: 4 << 20 };

export interface ServerTimeouts {
  /** A request (head or body) that stops arriving for this long gets 408. */
  requestMs: number;
  /** A keep-alive connection with nothing to do for this long is closed. */
  idleMs: number;
}

export const DEFAULT_TIMEOUTS: ServerTimeouts = { requestMs: 10_000, idleMs: 65_000 };

export class HttpServer {
  private readonly connections = new Set<HttpConnection>();
  private server: net.Server | undefined;
  /** Coarse clock, advanced by the sweep: what connections stamp their input with. */
  private readonly clock = { now: Date.now() };
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly handler: RequestHandler,
    private readonly limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS,
    private readonly timeouts: ServerTimeouts = DEFAULT_TIMEOUTS,
    /** A line for the server's log (a streaming client dropped). */
    private readonly warn: (message: string) => void = () => undefined,
  ) {
    this.sweeper = setInterval(() => this.sweep(), 1000);
    this.sweeper.unref();
  }

  /** Listen on the descriptor `fd` (an open listening socket); resolves with its port. */
  listen(fd: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const server = net.createServer({ noDelay: true, allowHalfOpen: true }, (socket) => this.accept(socket));
      server.once('error', reject);
      server.listen({ fd }, () => {
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
    const c = new HttpConnection(socket, this.handler, this.limits, this.clock, (gone) => this.connections.delete(gone), this.warn);
    this.connections.add(c);
  }

  private sweep(): void {
    const now = (this.clock.now = Date.now());
    for (const c of this.connections) {
      const quiet = now - c.lastInput;
      const phase = c.phase();
      if (phase === 'reading' && quiet >= this.timeouts.requestMs) c.timeOut();
      else if (phase === 'idle' && quiet >= this.timeouts.idleMs) c.destroy();
    }
  }
}
