/**
 * A minimal HTTP/2 client connection (RFC 9113) over one TCP socket that
 * carries unary gRPC calls for the perf tool, in the spirit of http-conn.ts:
 * the request's HEADERS block is built once per connection (literal fields,
 * no Huffman, no dynamic table), each call is HEADERS + DATA(END_STREAM),
 * and the reply is only framed and counted; `grpc-status`/`grpc-message`
 * come from the decoded trailers (or a trailers-only HEADERS). node:http2's
 * client was the generator's main cost (an AsyncResource and two deprecate
 * wrappers per request in Node 20, plus a Duplex per stream).
 *
 * Flow control: we open our receive windows to 2^31-1 (stream: SETTINGS,
 * connection: WINDOW_UPDATE) and top the connection window up as data
 * arrives; sends respect the server's windows and max frame size.
 */
import net from 'node:net';
import type { GrpcReply } from './grpc-conn';
import { HpackDecoder } from './hpack-decoder';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const T_DATA = 0;
const T_HEADERS = 1;
const T_RST_STREAM = 3;
const T_SETTINGS = 4;
const T_PING = 6;
const T_GOAWAY = 7;
const T_WINDOW_UPDATE = 8;
const T_CONTINUATION = 9;
const F_END_STREAM = 0x1;
const F_ACK = 0x1;
const F_END_HEADERS = 0x4;
const F_PADDED = 0x8;
const F_PRIORITY = 0x20;
const S_ENABLE_PUSH = 2;
const S_INITIAL_WINDOW_SIZE = 4;
const S_MAX_FRAME_SIZE = 5;
const MAX_WINDOW = 2 ** 31 - 1;
const DEFAULT_WINDOW = 65535;
/** Received bytes after which the connection receive window is topped up. */
const WINDOW_TOP_UP = 1 << 24;

/** gRPC status codes the client itself reports. */
const CANCELLED = 1;
const UNKNOWN = 2;
const INTERNAL = 13;
const UNAVAILABLE = 14;

function frame(type: number, flags: number, streamId: number, payload: Buffer | number = 0): Buffer {
  const len = typeof payload === 'number' ? payload : payload.length;
  const out = Buffer.allocUnsafe(9 + (typeof payload === 'number' ? 0 : len));
  out.writeUIntBE(len, 0, 3);
  out[3] = type;
  out[4] = flags;
  out.writeUInt32BE(streamId, 5);
  if (typeof payload !== 'number') payload.copy(out, 9);
  return out;
}

/** An HPACK integer with an n-bit prefix; `first` holds the representation's pattern bits. */
function hpackInt(first: number, prefix: number, value: number): number[] {
  const max = (1 << prefix) - 1;
  if (value < max) return [first | value];
  const out = [first | max];
  let v = value - max;
  while (v >= 128) {
    out.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

function hpackString(s: string): number[] {
  const bytes = [...Buffer.from(s, 'latin1')];
  return [...hpackInt(0, 7, bytes.length), ...bytes];
}

/** The request header block: :method POST, :scheme http, :path, :authority, content-type, te. */
function requestBlock(path: string, authority: string): Buffer {
  return Buffer.from([
    0x83, // :method POST (static 3)
    0x86, // :scheme http (static 6)
    ...hpackInt(0x00, 4, 4),
    ...hpackString(path), // literal without indexing, name :path (static 4)
    ...hpackInt(0x00, 4, 1),
    ...hpackString(authority), // name :authority (static 1)
    ...hpackInt(0x00, 4, 31),
    ...hpackString('application/grpc'), // name content-type (static 31)
    0x00,
    ...hpackString('te'),
    ...hpackString('trailers'),
  ]);
}

function grpcMessage(text: string | undefined): string {
  try {
    return decodeURIComponent(text ?? '');
  } catch {
    return text ?? '';
  }
}

class Call {
  window: number;
  sent = 0;
  httpStatus = 0;
  status: string | undefined;
  message: string | undefined;
  chunks: Buffer[] | undefined;

  constructor(
    readonly id: number,
    readonly data: Buffer,
    window: number,
    keepBody: boolean,
    readonly resolve: (r: GrpcReply) => void,
  ) {
    this.window = window;
    if (keepBody) this.chunks = [];
  }
}

export class H2GrpcConn {
  private readonly decoder = new HpackDecoder();
  private readonly block: Buffer;
  private readonly calls = new Map<number, Call>();
  /** Calls with request bytes still to send (flow control). */
  private readonly sending = new Set<Call>();
  private nextId = 1;
  private connWindow = DEFAULT_WINDOW;
  private peerInitialWindow = DEFAULT_WINDOW;
  private peerMaxFrame = 16384;
  private received = 0;
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** A header block being continued: its stream, END_STREAM flag and fragments. */
  private continuing: { id: number; endStream: boolean; parts: Buffer[] } | undefined;
  private closedError: Error | undefined;

  private constructor(
    private readonly socket: net.Socket,
    path: string,
    authority: string,
  ) {
    this.block = requestBlock(path, authority);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      try {
        this.onData(chunk);
      } catch (err) {
        this.fail(err as Error);
        socket.destroy();
      }
    });
    socket.on('error', (err) => this.fail(err));
    socket.on('close', () => this.fail(new Error('connection closed by the server')));
    const settings = Buffer.alloc(12);
    settings.writeUInt16BE(S_ENABLE_PUSH, 0);
    settings.writeUInt32BE(0, 2);
    settings.writeUInt16BE(S_INITIAL_WINDOW_SIZE, 6);
    settings.writeUInt32BE(MAX_WINDOW, 8);
    const increment = Buffer.alloc(4);
    increment.writeUInt32BE(MAX_WINDOW - DEFAULT_WINDOW);
    socket.write(Buffer.concat([PREFACE, frame(T_SETTINGS, 0, 0, settings), frame(T_WINDOW_UPDATE, 0, 0, increment)]));
  }

  /** `address` is host:port; `path` the RPC (/package.Service/Method). */
  static open(address: string, path: string): Promise<H2GrpcConn> {
    const u = new URL(`http://${address}`);
    const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host, port: Number(u.port || 80) }, () => {
        socket.off('error', reject);
        resolve(new H2GrpcConn(socket, path, u.host));
      });
      socket.once('error', reject);
    });
  }

  /** Sends one framed gRPC request; resolves with the status (and the whole body if asked). */
  send(framed: Buffer, keepBody = false): Promise<GrpcReply> {
    if (this.closedError !== undefined) return Promise.resolve({ code: UNAVAILABLE, message: this.closedError.message });
    if (this.nextId > MAX_WINDOW) return Promise.resolve({ code: UNAVAILABLE, message: 'HTTP/2 stream ids exhausted on this connection' });
    return new Promise((resolve) => {
      const id = this.nextId;
      this.nextId += 2;
      const call = new Call(id, framed, this.peerInitialWindow, keepBody, resolve);
      this.calls.set(id, call);
      const n = framed.length;
      if (n <= this.connWindow && n <= call.window && n <= this.peerMaxFrame) {
        // The common case: the whole request in one write.
        const out = Buffer.allocUnsafe(18 + this.block.length + n);
        writeHeader(out, 0, this.block.length, T_HEADERS, F_END_HEADERS, id);
        this.block.copy(out, 9);
        const at = 9 + this.block.length;
        writeHeader(out, at, n, T_DATA, F_END_STREAM, id);
        framed.copy(out, at + 9);
        this.connWindow -= n;
        call.window -= n;
        call.sent = n;
        this.socket.write(out);
        return;
      }
      this.socket.write(frame(T_HEADERS, F_END_HEADERS, id, this.block));
      this.sending.add(call);
      this.pump();
    });
  }

  close(): void {
    this.closedError ??= new Error('closed');
    this.socket.destroy();
  }

  /** Sends what the windows allow of the calls still sending. */
  private pump(): void {
    for (const call of this.sending) {
      while (call.sent < call.data.length) {
        const n = Math.min(call.data.length - call.sent, this.connWindow, call.window, this.peerMaxFrame);
        if (n <= 0) break;
        const last = call.sent + n === call.data.length;
        this.socket.write(frame(T_DATA, last ? F_END_STREAM : 0, call.id, n));
        this.socket.write(call.data.subarray(call.sent, call.sent + n));
        call.sent += n;
        call.window -= n;
        this.connWindow -= n;
      }
      if (call.sent === call.data.length) this.sending.delete(call);
      if (this.connWindow <= 0) return;
    }
  }

  private fail(err: Error): void {
    this.closedError ??= err;
    for (const call of this.calls.values()) call.resolve({ code: UNAVAILABLE, message: err.message });
    this.calls.clear();
    this.sending.clear();
  }

  private finish(call: Call, reply: GrpcReply): void {
    this.calls.delete(call.id);
    this.sending.delete(call);
    call.resolve(reply);
  }

  private complete(call: Call): void {
    if (call.status === undefined) {
      const message = call.httpStatus !== 200 ? `HTTP status ${call.httpStatus} without grpc-status` : 'the server ended the stream without grpc-status';
      return this.finish(call, { code: call.httpStatus !== 200 ? UNKNOWN : INTERNAL, message });
    }
    const code = Number(call.status);
    if (code !== 0) return this.finish(call, { code, message: grpcMessage(call.message) });
    this.finish(call, call.chunks === undefined ? { code } : { code, body: Buffer.concat(call.chunks) });
  }

  private onData(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    let buf = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.buffered);
    let pos = 0;
    while (buf.length - pos >= 9) {
      const len = buf.readUIntBE(pos, 3);
      if (buf.length - pos < 9 + len) break;
      const type = buf[pos + 3];
      const flags = buf[pos + 4];
      const id = buf.readUInt32BE(pos + 5) & 0x7fffffff;
      this.onFrame(type, flags, id, buf.subarray(pos + 9, pos + 9 + len));
      pos += 9 + len;
    }
    buf = buf.subarray(pos);
    this.chunks = buf.length === 0 ? [] : [buf];
    this.buffered = buf.length;
  }

  private onFrame(type: number, flags: number, id: number, payload: Buffer): void {
    if (this.continuing !== undefined && type !== T_CONTINUATION) throw new Error('HTTP/2: expected CONTINUATION');
    switch (type) {
      case T_DATA: {
        this.received += payload.length;
        if (this.received >= WINDOW_TOP_UP) {
          const inc = Buffer.allocUnsafe(4);
          inc.writeUInt32BE(this.received);
          this.socket.write(frame(T_WINDOW_UPDATE, 0, 0, inc));
          this.received = 0;
        }
        const call = this.calls.get(id);
        if (call === undefined) return;
        if (call.chunks !== undefined) call.chunks.push(Buffer.from(unpad(payload, flags)));
        if (flags & F_END_STREAM) this.complete(call);
        return;
      }
      case T_HEADERS: {
        let fragment = unpad(payload, flags);
        if (flags & F_PRIORITY) fragment = fragment.subarray(5);
        if (flags & F_END_HEADERS) return this.onHeaders(id, (flags & F_END_STREAM) !== 0, fragment);
        this.continuing = { id, endStream: (flags & F_END_STREAM) !== 0, parts: [Buffer.from(fragment)] };
        return;
      }
      case T_CONTINUATION: {
        const c = this.continuing;
        if (c === undefined || c.id !== id) throw new Error('HTTP/2: unexpected CONTINUATION');
        c.parts.push(Buffer.from(payload));
        if (flags & F_END_HEADERS) {
          this.continuing = undefined;
          this.onHeaders(id, c.endStream, Buffer.concat(c.parts));
        }
        return;
      }
      case T_RST_STREAM: {
        const call = this.calls.get(id);
        if (call === undefined) return;
        const code = payload.readUInt32BE(0);
        const status = code === 7 ? UNAVAILABLE : code === 8 ? CANCELLED : INTERNAL;
        return this.finish(call, { code: status, message: `stream reset by the server (HTTP/2 error code ${code})` });
      }
      case T_SETTINGS:
        if (flags & F_ACK) return;
        for (let k = 0; k + 6 <= payload.length; k += 6) this.setting(payload.readUInt16BE(k), payload.readUInt32BE(k + 2));
        this.socket.write(frame(T_SETTINGS, F_ACK, 0));
        this.pump();
        return;
      case T_PING:
        if (!(flags & F_ACK)) this.socket.write(frame(T_PING, F_ACK, 0, payload));
        return;
      case T_GOAWAY: {
        const last = payload.readUInt32BE(0) & 0x7fffffff;
        this.closedError ??= new Error(`the server sent GOAWAY (HTTP/2 error code ${payload.readUInt32BE(4)})`);
        for (const call of [...this.calls.values()]) {
          if (call.id > last) this.finish(call, { code: UNAVAILABLE, message: this.closedError.message });
        }
        return;
      }
      case T_WINDOW_UPDATE: {
        const inc = payload.readUInt32BE(0) & 0x7fffffff;
        if (id === 0) this.connWindow += inc;
        else {
          const call = this.calls.get(id);
          if (call !== undefined) call.window += inc;
        }
        this.pump();
        return;
      }
      default:
      // PRIORITY and unknown frame types are ignored; PUSH_PROMISE cannot come (push disabled).
    }
  }

  private setting(key: number, value: number): void {
    if (key === S_INITIAL_WINDOW_SIZE) {
      const delta = value - this.peerInitialWindow;
      this.peerInitialWindow = value;
      for (const call of this.calls.values()) call.window += delta;
    } else if (key === S_MAX_FRAME_SIZE) {
      this.peerMaxFrame = value;
    }
    // SETTINGS_HEADER_TABLE_SIZE bounds the server's decoder; we never index, so it needs nothing.
  }

  private onHeaders(id: number, endStream: boolean, block: Buffer): void {
    const headers = this.decoder.decode(block); // always, to keep the HPACK table in step
    const call = this.calls.get(id);
    if (call === undefined) return;
    if (headers[':status'] !== undefined && call.httpStatus === 0) call.httpStatus = Number(headers[':status']);
    if (headers['grpc-status'] !== undefined) {
      call.status = headers['grpc-status'];
      call.message = headers['grpc-message'];
    }
    if (endStream) this.complete(call);
  }
}

function writeHeader(out: Buffer, at: number, len: number, type: number, flags: number, id: number): void {
  out.writeUIntBE(len, at, 3);
  out[at + 3] = type;
  out[at + 4] = flags;
  out.writeUInt32BE(id, at + 5);
}

/** A DATA or HEADERS payload without its padding (PADDED flag). */
function unpad(payload: Buffer, flags: number): Buffer {
  if (!(flags & F_PADDED)) return payload;
  const pad = payload[0];
  if (pad >= payload.length) throw new Error('HTTP/2: padding longer than the frame');
  return payload.subarray(1, payload.length - pad);
}
