/**
 * One keep-alive HTTP/1.1 connection that sends a prebuilt request and reads
 * one response at a time. Deliberately minimal (no node:http parser, no
 * per-request header objects) so that the load generator costs far less CPU
 * than the server it measures: the request bytes are built once, and a
 * response is only framed (status + Content-Length), never decoded.
 */
import type net from 'node:net';
import { connectSocket, HEADER_END, SocketConn } from './socket-conn';

export interface HttpReply {
  status: number;
  /** The body, only when asked for (checks); the hot path skips it. */
  body?: Buffer;
}

/** The whole request (request line, headers, body) as one buffer, built once. */
export function buildHttpRequest(host: string, path: string, headers: Record<string, string>, body: Buffer): Buffer {
  let head = `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${body.length}\r\n`;
  for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
  return Buffer.concat([Buffer.from(head + '\r\n', 'latin1'), body]);
}

function contentLength(head: string): number {
  const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (m === null) {
    if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) throw new Error('chunked responses are not supported by the perf client');
    return 0;
  }
  return Number(m[1]);
}

interface Waiting {
  resolve: (r: HttpReply) => void;
  reject: (e: Error) => void;
  keepBody: boolean;
}

export class HttpConn extends SocketConn<HttpReply, Waiting> {
  /** Received bytes not yet consumed; joined only when a whole response is in (large bodies arrive in many chunks). */
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Byte length of the current response (head + body) once its head was read, else -1. */
  private need = -1;

  private constructor(socket: net.Socket) {
    super(socket);
  }

  static async open(host: string, port: number): Promise<HttpConn> {
    return new HttpConn(await connectSocket(host, port));
  }

  /** Send the prebuilt request; resolves with the response status (and body if asked). */
  send(request: Buffer, keepBody = false): Promise<HttpReply> {
    return this.exchange(request, { keepBody });
  }

  private joined(): Buffer {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks, this.buffered)];
    return this.chunks[0] ?? Buffer.alloc(0);
  }

  protected onData(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    if (this.need < 0) {
      const buf = this.joined(); // the head is small: usually in the first chunk
      const end = buf.indexOf(HEADER_END);
      if (end < 0) return;
      try {
        this.need = end + 4 + contentLength(buf.toString('latin1', 0, end));
      } catch (err) {
        this.socket.destroy(err as Error);
        return;
      }
    }
    if (this.buffered < this.need) return;
    const buf = this.joined();
    const end = buf.indexOf(HEADER_END);
    const head = buf.toString('latin1', 0, end);
    const total = this.need;
    const status = Number(head.slice(9, 12));
    const p = this.pending;
    this.pending = undefined;
    const body = p?.keepBody ? Buffer.from(buf.subarray(end + 4, total)) : undefined;
    const rest = buf.subarray(total);
    this.chunks = rest.length === 0 ? [] : [rest];
    this.buffered = rest.length;
    this.need = -1;
    p?.resolve(body === undefined ? { status } : { status, body });
  }
}
