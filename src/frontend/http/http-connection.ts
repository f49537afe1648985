/**
 * One client connection of the HTTP thread's own HTTP/1.1 server
 * (http-server.ts): it reads request heads (request-head-parser.ts) and
 * bodies (Content-Length or chunked-body.ts), hands each request to the
 * handler at once, and writes the answers in the order the requests came
 * (pipelining, RFC 9112 §9.3.2), whatever order they are ready in.
 *
 * Every input gets an answer: a malformed head or body framing is answered
 * with its status and a KServe error body, after the answers of the requests
 * before it, and the connection closes (its framing cannot be trusted any
 * more); a connection that stops sending half-way gets 408 (http-server.ts
 * sweeps). Closing after an answer is "lingering": the write side ends and
 * what the client still sends is read and dropped for a while, so the client
 * reads the answer instead of a reset.
 *
 * A streamed answer (Server-Sent Events) whose client stops reading is not
 * buffered without end: the model pushes its responses with no flow control,
 * so once more than `maxStreamBuffered` bytes of it wait in this process
 * (unsent chunks and the socket's own buffer, past what the kernel took),
 * the connection is closed with a warning (`onOverflow`): its requests are
 * aborted, which cancels them in the scheduler and the model.
 */
import type net from 'node:net';
import { ChunkedBody } from './chunked-body';
import { type RequestHead, Reply, type ReplySink, requestHead } from './http-reply';
import { type HeadLimits, parseRequestHead } from './request-head-parser';
import type { HttpEdgeLimits } from '../../server-options';

export type RequestHandler = (reply: Reply, head: RequestHead) => void;

export interface ConnectionLimits extends HeadLimits {
  /** Requests read ahead of their answers on one connection; past it, reading pauses. */
  maxPipelined: number;
  /** Chunks of one chunked body. */
  maxChunks: number;
  /** Bytes of a streamed answer that may wait for a client that does not read (see above). */
  maxStreamBuffered: number;
}

/** How long a closing connection keeps reading (and dropping) what the client still sends. */
const LINGER_MS = 2000;

/**
 * A body up to this size goes out in one write with its head (one buffer,
 * one copy of the body): a socket write costs more than copying a few KB.
 */
const JOIN_BODY_BYTES = 16 * 1024;

function joined(head: string, body: Uint8Array): Buffer {
  const buf = Buffer.allocUnsafe(head.length + body.byteLength);
  const at = buf.write(head, 0, 'latin1');
  buf.set(body, at);
  return buf;
}

interface BodyState {
  reply: Reply;
  /** Bytes still to come of a Content-Length body; unused when chunked. */
  remaining: number;
  chunked: ChunkedBody | undefined;
  /** The request said close: nothing after its body is read. */
  last: boolean;
}

/** What a reply delivered: a whole answer, or the head of a streamed one and the chunks that came so far. */
interface ReadyAnswer {
  head: string;
  body: readonly (Uint8Array | string)[];
  close: boolean;
  released?: () => void;
  stream?: StreamState;
}

interface StreamState {
  /** HTTP/1.1 chunked framing; else (HTTP/1.0) the bytes as they are, and the connection closes at the end. */
  chunked: boolean;
  /** The head went to the socket. */
  started: boolean;
  /** Chunks not written yet (the stream waits behind earlier answers, or came between flushes). */
  pending: string[];
  /** Their bytes. */
  pendingBytes: number;
  ended: boolean;
}

export class HttpConnection implements ReplySink {
  /** Bytes read and not consumed yet: a view of the last read, or of `spill`. */
  private buf: Buffer | undefined;
  /**
   * Where a head (or chunk-size line) that comes in pieces is gathered: its
   * bytes are appended after the ones before, the buffer doubling when full,
   * so a head that trickles in byte by byte costs its length in copies, not
   * its length squared. `spillUsed` bytes of it are taken; views of them
   * given out (bodies) are never written over.
   */
  private spill: Buffer | undefined;
  private spillUsed = 0;
  /** How far the head at the start of `buf` was scanned without finding its end (request-head-parser.ts). */
  private headScanned = 0;
  private body: BodyState | undefined;
  /** Requests read, in order, whose answers are not written yet. */
  private readonly queue: Reply[] = [];
  /** What each reply in `queue` delivered, once it did. */
  private readonly ready = new Map<Reply, ReadyAnswer>();
  /** No more requests are read: the last one said close, or the framing broke. */
  private closing = false;
  private paused = false;
  private ended = false;
  /** The client will send nothing more (it half-closed). */
  private peerEnded = false;
  /** A 100 Continue is owed to the request at the queue's head once earlier answers are out. */
  private continueFor: Reply | undefined;
  /** The server's coarse clock when bytes last came in (http-server.ts sweeps). */
  lastInput: number;
  /** When the first byte of the head being read came (-1: none is being read): the head deadline counts from it. */
  private headSince = -1;
  /** When the body being read began, and its bytes so far: the minimum rate is checked on them. */
  private bodySince = 0;
  private bodyBytes = 0;
  readonly client: string;
  /** The client's IP address (a refusal is logged once per address). */
  readonly address: string;

  constructor(
    private readonly socket: net.Socket,
    private readonly handler: RequestHandler,
    private readonly limits: ConnectionLimits,
    /** The server's coarse clock (http-server.ts). */
    private readonly clock: { now: number },
    private readonly onClose: (c: HttpConnection) => void,
    /** A streamed answer passed maxStreamBuffered: what to log (the connection closes). */
    private readonly onOverflow: (message: string) => void = () => undefined,
  ) {
    this.lastInput = clock.now;
    const ip = socket.remoteAddress ?? '';
    this.address = ip;
    this.client = ip.includes(':') ? `[${ip}]:${socket.remotePort}` : `${ip}:${socket.remotePort}`;
    socket.on('data', (d: Buffer) => this.onData(d));
    socket.on('end', () => this.onPeerEnd());
    socket.on('error', () => undefined); // 'close' follows
    socket.on('close', () => this.onSocketClose());
  }

  /** What the server's sweep looks at: reading a request half-way, answering, or idle. */
  phase(): 'reading' | 'answering' | 'idle' {
    if (this.body !== undefined || this.buf !== undefined) return 'reading';
    return this.queue.length > 0 ? 'answering' : 'idle';
  }

  /**
   * Whether the request being read broke a deadline (http-server.ts sweeps):
   * quiet for requestMs, a head not whole within headMs of its first byte,
   * or a body slower than bodyMinRate after its first requestMs. Not while
   * reading is paused or a 100 Continue is still owed: then we are the slow one.
   */
  overdue(now: number, edge: HttpEdgeLimits): { reason: string; message: string } | undefined {
    if (this.ended || this.closing || this.paused || this.continueFor !== undefined) return undefined;
    if (this.body === undefined && this.buf === undefined) return undefined;
    if (now - this.lastInput >= edge.requestMs) {
      return { reason: 'quiet', message: 'request timed out: the client stopped sending the request before it was complete' };
    }
    if (this.body === undefined) {
      if (this.headSince >= 0 && now - this.headSince >= edge.headMs) {
        return {
          reason: 'head',
          message: `request timed out: the request head did not arrive whole within ${edge.headMs} ms of its first byte (--http-header-timeout-ms)`,
        };
      }
      return undefined;
    }
    const slowFor = now - this.bodySince - edge.requestMs;
    if (edge.bodyMinRate > 0 && slowFor > 0 && this.bodyBytes < (edge.bodyMinRate * slowFor) / 1000) {
      const rate = Math.round((this.bodyBytes * 1000) / Math.max(1, now - this.bodySince));
      return { reason: 'body', message: `request timed out: the request body came at ${rate} bytes/s, slower than --http-body-min-rate=${edge.bodyMinRate}` };
    }
    return undefined;
  }

  /** Answer 408 to a request that broke a deadline (`message` says which), and close. */
  timeOut(message: string): void {
    const at = this.body === undefined ? this.queue.length : this.queue.indexOf(this.body.reply);
    this.failAt(at, 408, message);
  }

  /** Close now: every unanswered request is aborted. */
  destroy(): void {
    this.socket.destroy();
  }

  private onData(d: Buffer): void {
    this.lastInput = this.clock.now;
    if (this.closing) return; // lingering: dropped
    if (this.buf === undefined && this.body === undefined) this.headSince = this.clock.now;
    this.buf = this.buf === undefined ? d : this.append(this.buf, d);
    this.pump();
  }

  /** `buf` followed by `d`, in `spill`: in place when `buf` ends where spill's taken bytes do and there is room. */
  private append(buf: Buffer, d: Buffer): Buffer {
    const spill = this.spill;
    if (
      spill !== undefined &&
      buf.buffer === spill.buffer &&
      buf.byteOffset + buf.length === spill.byteOffset + this.spillUsed &&
      this.spillUsed + d.length <= spill.length
    ) {
      spill.set(d, this.spillUsed);
      this.spillUsed += d.length;
      return spill.subarray(buf.byteOffset - spill.byteOffset, this.spillUsed);
    }
    const grown = Buffer.allocUnsafe(Math.max(2 * (buf.length + d.length), 4096));
    buf.copy(grown, 0);
    grown.set(d, buf.length);
    this.spill = grown;
    this.spillUsed = buf.length + d.length;
    return grown.subarray(0, this.spillUsed);
  }

  /** Read every complete request head and body in the buffer. */
  private pump(): void {
    let buf = this.buf;
    let at = 0;
    while (buf !== undefined && at < buf.length && !this.closing) {
      if (this.body !== undefined) {
        at = this.feedBody(buf, at);
        if (this.body !== undefined || this.closing) break;
        continue;
      }
      if (this.queue.length >= this.limits.maxPipelined) {
        this.paused = true;
        this.socket.pause();
        break;
      }
      const r = parseRequestHead(buf, at, this.limits, this.headScanned);
      if (r.kind === 'incomplete') {
        this.headScanned = r.scanned;
        break;
      }
      if (r.kind === 'error') {
        this.fail(r.status, r.message);
        return;
      }
      this.headScanned = 0;
      this.headSince = -1;
      at += r.consumed;
      const fields = r.head;
      const reply = new Reply(this, this.client, fields.minor, fields.method === 'HEAD', fields.keepAlive);
      this.queue.push(reply);
      const hasBody = fields.chunked || fields.contentLength > 0;
      this.handler(reply, requestHead(fields));
      if (this.ended) return;
      if (!hasBody) {
        reply.endBody();
        if (!fields.keepAlive) this.closing = true; // its answer closes the connection; nothing after it is read
        continue;
      }
      const chunked = fields.chunked ? new ChunkedBody(this.limits.maxChunks, (b) => reply.takeBody(b, false)) : undefined;
      this.body = { reply, remaining: fields.contentLength, chunked, last: !fields.keepAlive };
      this.bodySince = this.clock.now;
      this.bodyBytes = 0;
      if (fields.expectContinue) {
        this.continueFor = reply;
        this.flush();
      }
    }
    if (this.closing && this.body === undefined) buf = undefined;
    this.buf = buf === undefined || at >= buf.length ? undefined : at === 0 ? buf : buf.subarray(at);
    if (this.buf === undefined)
      this.spill = undefined; // nothing is gathered: the next read starts afresh
    else if (this.body === undefined && this.headSince < 0) this.headSince = this.clock.now; // a pipelined head's start came with this read
  }

  /** Feed body bytes from `at`; returns where the next request starts. */
  private feedBody(buf: Buffer, at: number): number {
    const b = this.body!;
    if (b.chunked === undefined) {
      const take = Math.min(b.remaining, buf.length - at);
      // The whole body in this buffer: a view of it, not a copy.
      b.reply.takeBody(buf.subarray(at, at + take), take === b.remaining);
      b.remaining -= take;
      this.bodyBytes += take;
      at += take;
      if (b.remaining === 0) this.bodyDone(b);
      return at;
    }
    const step = b.chunked.feed(buf, at);
    if (step.kind === 'error') {
      this.failAt(this.queue.indexOf(b.reply), 400, `malformed chunked request body: ${step.message}`);
      return buf.length;
    }
    at += step.used;
    this.bodyBytes += step.used;
    if (step.kind === 'done') this.bodyDone(b);
    return at;
  }

  private bodyDone(b: BodyState): void {
    this.body = undefined;
    if (this.continueFor === b.reply) this.continueFor = undefined;
    if (b.last) this.closing = true;
    b.reply.endBody();
  }

  /** A broken request (no reply of its own yet): answered after the ones before it, then the connection closes. */
  private fail(status: number, message: string): void {
    this.failAt(this.queue.length, status, message);
  }

  /**
   * The request at `index` broke its framing: it and every request after it
   * lose their answers (their handlers see an abort), an error is answered in
   * its place after the answers before it, and the connection closes.
   */
  private failAt(index: number, status: number, message: string): void {
    if (this.ended) return;
    this.closing = true;
    this.buf = undefined;
    this.spill = undefined;
    this.body = undefined;
    for (const r of this.queue.splice(index < 0 ? this.queue.length : index)) this.drop(r);
    const r = new Reply(this, this.client, 1, false, false);
    this.queue.push(r);
    r.error(status, message, true);
  }

  /** `r` will not be written: its handler hears an abort, its parts are released. */
  private drop(r: Reply): void {
    const out = this.ready.get(r);
    this.ready.delete(r);
    out?.released?.();
    r.abort();
  }

  deliver(reply: Reply, head: string, body: readonly (Uint8Array | string)[], close: boolean, released?: () => void): void {
    if (this.ended || !this.queue.includes(reply)) return released?.();
    this.ready.set(reply, { head, body, close: close || !reply.keepAlive, released });
    this.flush();
  }

  deliverStream(reply: Reply, head: string, chunked: boolean): void {
    if (this.ended || !this.queue.includes(reply)) return;
    const stream: StreamState = { chunked, started: false, pending: [], pendingBytes: 0, ended: false };
    this.ready.set(reply, { head, body: [], close: !chunked || !reply.keepAlive, stream });
    this.flush();
  }

  chunk(reply: Reply, data: string, end: boolean): void {
    const stream = this.ready.get(reply)?.stream;
    if (this.ended || stream === undefined || stream.ended) return;
    if (data.length > 0) {
      stream.pending.push(data);
      stream.pendingBytes += Buffer.byteLength(data);
    }
    stream.ended = end;
    this.flush();
    if (this.ended) return;
    const buffered = stream.pendingBytes + this.socket.writableLength;
    if (buffered > this.limits.maxStreamBuffered) this.overflow(buffered);
  }

  /** The client of a streamed answer stopped reading: close, which aborts (and so cancels) what it asked. */
  private overflow(buffered: number): void {
    this.onOverflow(
      `closed the connection of ${this.client}: it stopped reading a streamed answer, and ${buffered} bytes of it waited ` +
        `(the bound is ${this.limits.maxStreamBuffered}); its requests are cancelled`,
    );
    this.socket.destroy();
  }

  /**
   * A streamed answer at the queue's head: its head and the chunks so far go
   * out; true once its end did (then it leaves the queue like any answer).
   */
  private writeStream(out: ReadyAnswer, stream: StreamState): boolean {
    const s = this.socket;
    if (!stream.started) {
      s.write(out.head, 'latin1');
      stream.started = true;
    }
    for (const data of stream.pending) {
      if (stream.chunked) s.write(`${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`);
      else s.write(data);
    }
    stream.pending = [];
    stream.pendingBytes = 0;
    if (!stream.ended) return false;
    if (stream.chunked) s.write('0\r\n\r\n');
    return true;
  }

  /** Write every answer at the head of the queue that is ready. */
  private flush(): void {
    const s = this.socket;
    let corked = false;
    while (this.queue.length > 0 && !this.ended) {
      const next = this.queue[0];
      const out = this.ready.get(next);
      if (out === undefined) {
        if (this.continueFor === next) {
          s.write('HTTP/1.1 100 Continue\r\n\r\n');
          this.continueFor = undefined;
        }
        break;
      }
      if (!corked) {
        s.cork();
        corked = true;
      }
      if (out.stream !== undefined && !this.writeStream(out, out.stream)) break;
      this.queue.shift();
      this.ready.delete(next);
      if (out.stream === undefined) {
        const only = out.body.length === 1 ? out.body[0] : undefined;
        if (typeof only === 'string') s.write(out.head + only);
        else if (only !== undefined && only.byteLength <= JOIN_BODY_BYTES) s.write(joined(out.head, only));
        else {
          s.write(out.head, 'latin1');
          for (let i = 0; i < out.body.length; i++) s.write(out.body[i]);
        }
      }
      if (out.released !== undefined) {
        const released = out.released;
        s.write('', () => released());
      }
      if (out.close) {
        this.linger();
        break;
      }
    }
    if (corked) s.uncork();
    if (this.queue.length === 0) {
      this.lastInput = this.clock.now; // idle from now
      if (this.peerEnded && !this.ended) this.linger();
    }
    if (this.paused && this.queue.length < this.limits.maxPipelined && !this.closing) {
      this.paused = false;
      this.socket.resume();
      if (this.buf !== undefined) this.pump();
    }
  }

  /** End the write side after the answers so far; drop what still comes in, for LINGER_MS. */
  private linger(): void {
    this.ended = true;
    this.closing = true;
    for (const r of this.queue.splice(0)) this.drop(r);
    this.socket.end();
    if (this.paused) this.socket.resume();
    setTimeout(() => this.socket.destroy(), LINGER_MS).unref();
  }

  /**
   * The client closed its sending side. A request cut off half-way is
   * answered with 400 (the socket is half-open, so the client may still read
   * it); requests still waiting for their answers are given up, as a client
   * that closes is one that went away (their handlers hear an abort, which
   * cancels them), and the connection closes.
   */
  private onPeerEnd(): void {
    this.peerEnded = true;
    if (this.ended) return;
    if (this.body !== undefined || this.buf !== undefined) {
      const at = this.body === undefined ? this.queue.length : this.queue.indexOf(this.body.reply);
      this.failAt(at, 400, 'the request ended before it was complete: the client closed its side of the connection after sending part of it');
      return;
    }
    this.socket.destroy();
  }

  private onSocketClose(): void {
    this.ended = true;
    this.closing = true;
    this.body = undefined;
    this.buf = undefined;
    for (const r of this.queue.splice(0)) this.drop(r);
    this.onClose(this);
  }
}
