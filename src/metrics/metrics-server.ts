/**
 * The metrics endpoint (protocol.md §5.1) on node:http, on the main thread:
 * scrapes are rare and small. `GET /metrics` (and `/metrics/`) → the
 * exposition text; any other GET → 200 with an empty body; other methods →
 * 405, as Triton's metrics server answers.
 */
import http from 'node:http';
import type net from 'node:net';
import { ServerError, socketInUseText } from '../core/errors';

export class MetricsServer {
  private server: http.Server | undefined;

  constructor(private readonly exposition: () => Promise<string>) {}

  /** Listen; resolves with the bound port (useful with port 0). */
  start(address: string, port: number): Promise<number> {
    const server = http.createServer((req, res) => this.handle(req, res));
    // Keep-alive connections must not hold the process open at shutdown.
    server.keepAliveTimeout = 5_000;
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => {
        reject(new ServerError('UNAVAILABLE', err.code === 'EADDRINUSE' ? socketInUseText(`${address}:${port}`) : err.message));
      });
      server.listen(port, address, () => resolve((server.address() as net.AddressInfo).port));
    });
  }

  /** Stop listening and drop idle connections. Idempotent. */
  stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server === undefined) return Promise.resolve();
    return new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    req.resume(); // a body, if any, is ignored
    if (req.method !== 'GET') {
      send(res, 405, 'application/json', JSON.stringify({ error: 'Method Not Allowed' }));
      return;
    }
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics' && path !== '/metrics/') {
      send(res, 200, 'text/plain; charset=utf-8', '');
      return;
    }
    this.exposition().then(
      (text) => send(res, 200, 'text/plain; charset=utf-8', text),
      (err: unknown) => send(res, 500, 'text/plain; charset=utf-8', `failed to collect metrics: ${err instanceof Error ? err.message : String(err)}\n`),
    );
  }
}

function send(res: http.ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}
