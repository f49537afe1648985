/**
 * A gRPC client written on node:http2 for what a well-behaved client never
 * sends: bytes chosen by the test, gRPC prefixes that lie about lengths,
 * unparseable messages, odd metadata, a stream left half-open or reset. One
 * HTTP/2 session carries many calls; each call is bounded by a timeout, so
 * a server that never answers fails the test with the case's name instead
 * of hanging it.
 */
import http2 from 'node:http2';

/** The 5-byte gRPC prefix (compressed flag, length big-endian) in front of `body`; `declared` may lie. */
export function grpcFrame(body: Buffer, declared = body.length, compressed = 0): Buffer {
  const prefix = Buffer.alloc(5);
  prefix[0] = compressed;
  prefix.writeUInt32BE(declared >>> 0, 1);
  return Buffer.concat([prefix, body]);
}

/** The messages of a gRPC response body (whole frames only). */
export function splitFrames(data: Buffer): Buffer[] {
  return readFrames(data).map((f) => f.body);
}

/** The messages of a gRPC response body with their compressed flags (whole frames only). */
export function readFrames(data: Buffer): { compressed: number; body: Buffer }[] {
  const out: { compressed: number; body: Buffer }[] = [];
  let p = 0;
  while (p + 5 <= data.length) {
    const n = data.readUInt32BE(p + 1);
    if (p + 5 + n > data.length) break;
    out.push({ compressed: data[p]!, body: data.subarray(p + 5, p + 5 + n) });
    p += 5 + n;
  }
  return out;
}

export interface RawCallOptions {
  /** Extra request headers (metadata). */
  headers?: http2.OutgoingHttpHeaders;
  /** Half-close after the body (default true). */
  end?: boolean;
  /** Reset the stream (RST_STREAM CANCEL) this many ms after the body instead of waiting for the answer. */
  resetAfterMs?: number;
  /** Resolve once this many response messages came (the stream stays open), then reset it. */
  untilMessages?: number;
  /** Give up after this long (default 10 s): the result says `timedOut`. */
  timeoutMs?: number;
}

export interface RawCallResult {
  /** grpc-status from the trailers (or a trailers-only response); undefined when none came. */
  status?: number;
  /** grpc-message, percent-decoded. */
  message: string;
  httpStatus?: number;
  messages: Buffer[];
  /** The messages' compressed flags, in order. */
  compressedFlags: number[];
  /** The response's grpc-encoding header (undefined: none sent). */
  encoding?: string;
  /** RST_STREAM code the stream closed with (0 = none). */
  rstCode: number;
  /** The session's GOAWAY error code, when the server ended the connection. */
  goawayCode?: number;
  timedOut: boolean;
}

export class RawGrpcClient {
  private session: http2.ClientHttp2Session | undefined;
  private goaway: number | undefined;

  constructor(private readonly port: number) {}

  private connect(): http2.ClientHttp2Session {
    if (this.session !== undefined && !this.session.closed && !this.session.destroyed) return this.session;
    const s = http2.connect(`http://127.0.0.1:${this.port}`);
    this.goaway = undefined;
    s.on('error', () => {}); // reported through the calls' results
    s.on('goaway', (code: number) => {
      this.goaway = code;
    });
    this.session = s;
    return s;
  }

  /** One call of `rpc` (a GRPCInferenceService method name or a full path) whose request body is `body`. */
  call(rpc: string, body: Buffer | Buffer[], opts: RawCallOptions = {}): Promise<RawCallResult> {
    const session = this.connect();
    const path = rpc.startsWith('/') ? rpc : `/inference.GRPCInferenceService/${rpc}`;
    const stream = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...opts.headers,
    });
    return new Promise((resolve) => {
      const chunks: Buffer[] = [];
      let head: http2.IncomingHttpHeaders | undefined;
      let trailers: http2.IncomingHttpHeaders | undefined;
      let settled = false;
      const settle = (timedOut: boolean): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        const data = Buffer.concat(chunks);
        const h = trailers ?? head ?? {};
        const status = h['grpc-status'];
        resolve({
          status: status === undefined ? undefined : Number(status),
          message: decodeURIComponent(String(h['grpc-message'] ?? '')),
          httpStatus: head?.[':status'] as number | undefined,
          messages: splitFrames(data),
          compressedFlags: readFrames(data).map((f) => f.compressed),
          encoding: head?.['grpc-encoding'] as string | undefined,
          rstCode: stream.rstCode ?? 0,
          goawayCode: this.goaway,
          timedOut,
        });
        if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
      };
      const timer = setTimeout(() => settle(true), opts.timeoutMs ?? 10_000);
      stream.on('response', (h) => {
        head = h;
      });
      stream.on('trailers', (t) => {
        trailers = t;
      });
      stream.on('data', (d: Buffer) => {
        chunks.push(d);
        if (opts.untilMessages !== undefined && splitFrames(Buffer.concat(chunks)).length >= opts.untilMessages) settle(false);
      });
      stream.on('error', () => {});
      stream.on('close', () => settle(false));
      for (const b of Array.isArray(body) ? body : [body]) if (b.length > 0) stream.write(b);
      if (opts.resetAfterMs !== undefined) {
        setTimeout(() => stream.close(http2.constants.NGHTTP2_CANCEL), opts.resetAfterMs);
      } else if (opts.end !== false) {
        stream.end();
      }
    });
  }

  close(): void {
    this.session?.close();
    this.session = undefined;
  }
}
