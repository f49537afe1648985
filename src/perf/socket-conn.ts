/**
 * What perf's HTTP/1.1 connections share (http-conn.ts for whole
 * responses, sse-conn.ts for streamed ones): one socket, one request at a
 * time, a prebuilt request written as is, and the waiting caller rejected
 * when the socket fails or closes. Each subclass only frames its answers
 * (`onData`) and resolves `pending` when one is in.
 */
import net from 'node:net';

export const HEADER_END = Buffer.from('\r\n\r\n');

/** A TCP connection to the server, once it is open (or the error that kept it from opening). */
export function connectSocket(host: string, port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port }, () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

interface Waiting<R> {
  resolve: (answer: R) => void;
  reject: (e: Error) => void;
}

export abstract class SocketConn<R, P extends Waiting<R>> {
  /** The caller waiting for the answer now being read. */
  protected pending: P | undefined;
  protected closedError: Error | undefined;

  protected constructor(protected readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    const fail = (err: Error): void => {
      this.closedError = err;
      const p = this.pending;
      this.pending = undefined;
      p?.reject(err);
    };
    socket.on('error', fail);
    socket.on('close', () => fail(this.closedError ?? new Error('connection closed by the server')));
  }

  /** The socket failed or closed (the server ends keep-alive connections idle past its timeout). */
  get closed(): boolean {
    return this.closedError !== undefined;
  }

  close(): void {
    this.closedError ??= new Error('closed');
    this.socket.destroy();
  }

  /** Bytes of the answer being read (or of the next one). */
  protected abstract onData(chunk: Buffer): void;

  /** Reset the framing state for a new answer; called just before the request is written. */
  protected starting(): void {}

  /** Writes `request`, its caller waiting as `pending` (with `extra`) until `onData` resolves it. */
  protected exchange(request: Buffer, extra: Omit<P, keyof Waiting<R>>): Promise<R> {
    if (this.closedError !== undefined) return Promise.reject(this.closedError);
    if (this.pending !== undefined) return Promise.reject(new Error(`${this.constructor.name}: one request at a time`));
    return new Promise<R>((resolve, reject) => {
      this.pending = { ...extra, resolve, reject } as P;
      this.starting();
      this.socket.write(request);
    });
  }
}
