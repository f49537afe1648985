/**
 * One keep-alive HTTP/1.1 connection that sends a prebuilt POST and reads
 * its streamed answer (Server-Sent Events in a chunked body) as it comes:
 * each `data:` event is handed to the caller with the time it arrived, and
 * the answer resolves once the body ended. A non-200 answer (a whole body
 * with Content-Length) resolves with its status and text, for the message.
 * `nodetron perf --service-kind openai` (openai-perf.ts) drives it.
 */
import type net from 'node:net';
import { connectSocket, HEADER_END, SocketConn } from './socket-conn';

export interface StreamAnswer {
  status: number;
  /** A non-200 answer's body, for the error message. */
  text?: string;
}

interface Pending {
  resolve: (a: StreamAnswer) => void;
  reject: (e: Error) => void;
  onEvent: (data: string, atNs: bigint) => void;
}

export class SseConn extends SocketConn<StreamAnswer, Pending> {
  private buf: Buffer = Buffer.alloc(0);
  /** Reading: the head, a chunk-size line, a chunk's data (and its CRLF), or a Content-Length body. */
  private state: 'head' | 'size' | 'data' | 'body' = 'head';
  private status = 0;
  private need = 0;
  /** SSE text not yet ended by a blank line. */
  private events = '';

  private constructor(socket: net.Socket) {
    super(socket);
  }

  static async open(host: string, port: number): Promise<SseConn> {
    return new SseConn(await connectSocket(host, port));
  }

  /** Send the prebuilt request; `onEvent` gets each event's data (after `data: `) as it arrives. */
  send(request: Buffer, onEvent: (data: string, atNs: bigint) => void): Promise<StreamAnswer> {
    return this.exchange(request, { onEvent });
  }

  protected starting(): void {
    this.state = 'head';
    this.events = '';
  }

  protected onData(chunk: Buffer): void {
    const at = process.hrtime.bigint();
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    try {
      while (this.step(at));
    } catch (err) {
      this.socket.destroy(err as Error);
    }
  }

  /** One parsing step over the buffer; false when it needs more bytes. */
  private step(at: bigint): boolean {
    const b = this.buf;
    switch (this.state) {
      case 'head': {
        const end = b.indexOf(HEADER_END);
        if (end < 0) return false;
        const head = b.toString('latin1', 0, end);
        this.buf = b.subarray(end + 4);
        this.status = Number(head.slice(9, 12));
        if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
          this.state = 'size';
        } else {
          this.state = 'body';
          this.need = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
        }
        return true;
      }
      case 'body': {
        if (b.length < this.need) return false;
        const text = b.toString('utf8', 0, this.need);
        this.buf = b.subarray(this.need);
        this.done({ status: this.status, text });
        return true;
      }
      case 'size': {
        const eol = b.indexOf('\r\n');
        if (eol < 0) return false;
        const size = parseInt(b.toString('latin1', 0, eol), 16);
        if (!Number.isFinite(size)) throw new Error(`bad chunk size line '${b.toString('latin1', 0, Math.min(eol, 40))}'`);
        this.buf = b.subarray(eol + 2);
        if (size === 0) {
          this.state = 'data';
          this.need = -1; // the last chunk: its CRLF ends the body
        } else {
          this.state = 'data';
          this.need = size;
        }
        return true;
      }
      case 'data': {
        if (this.need < 0) {
          if (b.length < 2) return false;
          this.buf = b.subarray(2);
          this.done({ status: this.status });
          return true;
        }
        if (b.length < this.need + 2) return false;
        this.feed(b.toString('utf8', 0, this.need), at);
        this.buf = b.subarray(this.need + 2);
        this.state = 'size';
        return true;
      }
    }
  }

  /** SSE text in: every complete event's data out. */
  private feed(text: string, at: bigint): void {
    this.events += text;
    let cut: number;
    while ((cut = this.events.indexOf('\n\n')) >= 0) {
      const event = this.events.slice(0, cut);
      this.events = this.events.slice(cut + 2);
      for (const line of event.split('\n')) if (line.startsWith('data: ')) this.pending?.onEvent(line.slice(6), at);
    }
  }

  private done(a: StreamAnswer): void {
    this.state = 'head';
    const p = this.pending;
    this.pending = undefined;
    p?.resolve(a);
  }
}
