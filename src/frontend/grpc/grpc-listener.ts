/**
 * The gRPC port's listening socket, held here rather than by grpc-js, so
 * that connections can be counted against --grpc-max-connections (grpc-js
 * has no accept hook and no connection limit). Each accepted socket is
 * handed to grpc-js through its public connection injector
 * (`Server.createConnectionInjector`), which serves it exactly as a port
 * grpc-js bound itself: the same credentials (TLS included), channel
 * options, keepalive and connection age.
 *
 * Past the cap, a new connection goes to a small node:http2 server of our
 * own instead (`refuser`, with the same TLS settings), so its client is told
 * why in gRPC's own terms: every call on it ends UNAVAILABLE, the retryable
 * status a client backs off on as HTTP's 503, with a text naming the cap.
 * Its session is destroyed REFUSED_LINGER_MS later whatever it does (a TLS
 * handshake that does not finish by then fails), so a flood of connections
 * holds descriptors for at most that long while the open connections keep
 * being served. Refusals are logged once per client address.
 */
import http2 from 'node:http2';
import net from 'node:net';
import type * as grpc from '@grpc/grpc-js';
import { OncePerClient } from '../once-per-client';

/** How long a connection past the cap lives: long enough to answer its first calls with the reason. */
export const REFUSED_LINGER_MS = 1000;
const UNAVAILABLE = 14;

/** The port's TLS settings (--grpc-use-ssl), for the refuser; undefined: plain TCP. */
export interface ListenerTls {
  key: Buffer;
  cert: Buffer;
  ca: Buffer | null;
  mutual: boolean;
}

/** `host` for net.Server.listen: grpc-style bracketed IPv6 literals unbracketed. */
export function listenHost(address: string): string {
  return address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
}

/** grpc-message as gRPC's HTTP/2 protocol spells it: bytes outside printable ASCII, and '%', percent-encoded. */
export function grpcMessage(text: string): string {
  return text.replace(/[^\x20-\x24\x26-\x7e]/gu, (c) => [...Buffer.from(c)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''));
}

/** The gRPC status message of a call refused past the cap. */
export function tooManyConnectionsText(open: number, max: number): string {
  return (
    `the server has too many open gRPC connections (${open}; --grpc-max-connections=${max}): ` + 'try again later, or send more calls over an open connection'
  );
}

export class GrpcListener {
  private socketServer: net.Server | undefined;
  private refuser: http2.Http2Server | http2.Http2SecureServer | undefined;
  private readonly refusedSessions = new Set<http2.ServerHttp2Session>();
  private open = 0;
  private readonly logged = new OncePerClient();

  /** `max`: --grpc-max-connections (0 = no bound). */
  constructor(
    private readonly max: number,
    private readonly warn: (line: string) => void,
  ) {}

  /** Listens on `address:port` (0: any free port) and serves what it accepts with `server`; resolves with the bound port. */
  listen(server: grpc.Server, credentials: grpc.ServerCredentials, tls: ListenerTls | undefined, address: string, port: number): Promise<number> {
    const injector = server.createConnectionInjector(credentials);
    if (this.max > 0) this.refuser = this.makeRefuser(tls);
    const socketServer = net.createServer((socket) => this.accept(socket, injector));
    this.socketServer = socketServer;
    return new Promise((resolve, reject) => {
      socketServer.once('error', reject);
      socketServer.listen({ host: listenHost(address), port }, () => {
        socketServer.off('error', reject);
        socketServer.on('error', (err) => this.warn(`the gRPC port's listening socket failed: ${err.message}`));
        resolve((socketServer.address() as net.AddressInfo).port);
      });
    });
  }

  /** Stops accepting connections and ends the refused ones; the open ones are grpc-js's to close (tryShutdown / forceShutdown). */
  stopListening(): void {
    this.socketServer?.close();
    this.socketServer = undefined;
    for (const s of this.refusedSessions) s.destroy();
  }

  private accept(socket: net.Socket, injector: ReturnType<grpc.Server['createConnectionInjector']>): void {
    socket.on('error', () => undefined);
    if (this.refuser !== undefined && this.open >= this.max) {
      this.refuse(socket, this.refuser);
      return;
    }
    this.open++;
    socket.once('close', () => this.open--);
    injector.injectConnection(socket);
  }

  private refuse(socket: net.Socket, refuser: net.Server): void {
    const client = socket.remoteAddress ?? '';
    if (this.logged.first('connections', client)) {
      this.warn(
        `refused gRPC connections from ${client}: ${this.open} are open, the most --grpc-max-connections allows; ` +
          `their calls end UNAVAILABLE and they close within ${REFUSED_LINGER_MS} ms (said once per client)`,
      );
    }
    refuser.emit('connection', socket);
  }

  private makeRefuser(tls: ListenerTls | undefined): http2.Http2Server | http2.Http2SecureServer {
    const refuser =
      tls === undefined
        ? http2.createServer()
        : http2.createSecureServer({
            key: tls.key,
            cert: tls.cert,
            ...(tls.ca !== null ? { ca: tls.ca } : {}),
            requestCert: tls.mutual,
            rejectUnauthorized: tls.mutual,
            handshakeTimeout: REFUSED_LINGER_MS,
          });
    refuser.on('session', (session: http2.ServerHttp2Session) => {
      session.on('error', () => undefined);
      this.refusedSessions.add(session);
      session.once('close', () => this.refusedSessions.delete(session));
      setTimeout(() => session.destroy(), REFUSED_LINGER_MS).unref();
    });
    refuser.on('stream', (stream: http2.ServerHttp2Stream) => {
      stream.on('error', () => undefined);
      stream.respond(
        {
          ':status': 200,
          'content-type': 'application/grpc',
          'grpc-status': String(UNAVAILABLE),
          'grpc-message': grpcMessage(tooManyConnectionsText(this.open, this.max)),
        },
        { endStream: true },
      );
    });
    // A TLS handshake that fails or times out: the socket is TLS's to destroy.
    refuser.on('tlsClientError', () => undefined);
    return refuser;
  }
}
