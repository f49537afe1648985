/**
 * One request's side of the HTTP thread's own server (http-connection.ts):
 * what the handlers read (RequestHead), how they take the body (readBody)
 * and how they answer (Reply). A Reply is answered once; the connection
 * writes the answers of pipelined requests in the order the requests came,
 * whatever order they are ready in.
 */
import type { RequestHeadFields } from './request-head-parser';

const STATUS_TEXT: Record<number, string> = {
  100: 'Continue',
  200: 'OK',
  302: 'Found',
  204: 'No Content',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  413: 'Payload Too Large',
  417: 'Expectation Failed',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
  505: 'HTTP Version Not Supported',
};

/** Heads of the JSON and Server-Sent Events answers (generate, generate_stream, the /v1 routes). */
export const JSON_HEADERS = { 'Content-Type': 'application/json' };
export const SSE_HEADERS = { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' };

export function statusLine(status: number): string {
  return `${status} ${STATUS_TEXT[status] ?? 'Unknown'}`;
}

/** The parts of a request the handlers need. */
export interface RequestHead {
  method: string;
  url: string;
  /** The header's text without surrounding spaces, '' when absent (as are the next four). */
  contentLength: string;
  transferEncoding: string;
  headerLength: string;
  contentEncoding: string;
  acceptEncoding: string;
  /** Any header by its lower-case name, as sent (trailing spaces kept), '' when absent. */
  header(name: string): string;
  /** Every header, lower-case names (repeated ones joined with ", "). */
  headers: ReadonlyMap<string, string>;
  /** Header field lines as sent (repeated ones each counted). */
  fieldCount: number;
}

export function requestHead(fields: RequestHeadFields): RequestHead {
  const h = fields.headers;
  return {
    method: fields.method.toUpperCase(),
    url: fields.target,
    contentLength: (h.get('content-length') ?? '').trim(),
    transferEncoding: (h.get('transfer-encoding') ?? '').trim(),
    headerLength: (h.get('inference-header-content-length') ?? '').trim(),
    contentEncoding: (h.get('content-encoding') ?? '').trim(),
    acceptEncoding: (h.get('accept-encoding') ?? '').trim(),
    header: (name) => h.get(name) ?? '',
    headers: h,
    fieldCount: fields.fieldCount,
  };
}

/** What a Reply hands its connection: the bytes of one answer, in order with the others. */
export interface ReplySink {
  deliver(reply: Reply, head: string, body: readonly (Uint8Array | string)[], close: boolean, released?: () => void): void;
  /** The head of a streamed answer (Reply.stream): its body follows in `chunk` calls, the last one `end`. */
  deliverStream(reply: Reply, head: string, chunked: boolean): void;
  chunk(reply: Reply, data: string, end: boolean): void;
}

/** A body's first buffer when it does not come in one read (it grows by doubling, up to the declared length). */
const FIRST_BODY_BYTES = 64 * 1024;
const NO_BYTES = Buffer.alloc(0);

/** A handler's reader of the request body (readBody): bytes in, one `done` out. */
interface BodyReader {
  limit: number;
  /** The Content-Length (0: chunked): the buffer never grows past it. */
  declared: number;
  buf: Buffer;
  used: number;
  refused: boolean;
  done: (r: BodyResult) => void;
}

/** The body of a streamed answer (Reply.stream): text written as it comes, then one `end`. */
export interface ReplyStream {
  write(data: string): void;
  /** The last data (if any); the answer is complete. */
  end(data?: string): void;
}

export type BodyResult = { ok: true; body: Buffer } | { ok: false; size: number };

export class Reply {
  aborted = false;
  done = false;
  /** Headers added to whatever answer this reply sends (CORS, cors.ts). */
  extraHeaders: Record<string, string> | undefined;
  /** Runs once, when the answer is handed to the connection or the client went away. */
  onFinished: (() => void) | undefined;
  private abortHooks: (() => void)[] | undefined;
  /** Set by readBody; the connection feeds it (takeBody/endBody). */
  private reader: BodyReader | undefined;
  /** A streamed answer is open (Reply.stream until ReplyStream.end). */
  private streaming = false;

  constructor(
    private readonly sink: ReplySink,
    /** The client's address, `ip:port` (`[ip]:port` for IPv6). */
    readonly client: string,
    /** The request's HTTP minor version and method: how the answer is framed. */
    private readonly minor: 0 | 1,
    private readonly headOnly: boolean,
    /** Whether the request's connection stays open after it. */
    readonly keepAlive: boolean,
  ) {}

  /** `hook` runs if the client goes away before the answer is sent. */
  onAbort(hook: () => void): void {
    (this.abortHooks ??= []).push(hook);
  }

  /** Send a complete response; `close` ends the connection after it. Safe to call once, from anywhere. */
  send(status: number, headers: Record<string, string>, body: Uint8Array | string, close = false): void {
    if (this.aborted || this.done) return;
    this.done = true;
    this.finish();
    this.sink.deliver(
      this,
      this.headText(status, headers, typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength, close),
      this.headOnly ? [] : [body],
      close,
    );
  }

  /**
   * Send a body made of `parts` without joining them (Content-Length is their
   * total). `released` runs once the last byte went to the kernel or the
   * client went away: only then may the parts' memory be reused.
   */
  sendParts(status: number, headers: Record<string, string>, parts: readonly Uint8Array[], released: () => void): void {
    if (this.aborted || this.done) return released();
    this.done = true;
    this.finish();
    let total = 0;
    for (const p of parts) total += p.byteLength;
    this.sink.deliver(this, this.headText(status, headers, total, false), this.headOnly ? [] : parts, false, released);
  }

  /**
   * Start an answer whose body is written as it comes (Server-Sent Events):
   * chunked on HTTP/1.1; on HTTP/1.0, unframed and the connection closes at
   * its end. Answers of requests pipelined behind it wait until it ends.
   * The client going away shows as `aborted` (and the onAbort hooks run).
   */
  stream(status: number, headers: Record<string, string>): ReplyStream {
    const chunked = this.minor === 1;
    if (this.aborted || this.done) return { write: () => undefined, end: () => undefined };
    this.done = true;
    this.streaming = true;
    let s = this.headStart(status, headers);
    if (chunked) s += 'Transfer-Encoding: chunked\r\n';
    if (!chunked || !this.keepAlive) s += 'Connection: close\r\n';
    this.sink.deliverStream(this, `${s}\r\n`, chunked);
    return {
      write: (data) => {
        if (this.streaming && !this.aborted) this.sink.chunk(this, data, false);
      },
      end: (data = '') => {
        if (!this.streaming) return;
        this.streaming = false;
        if (!this.aborted) this.sink.chunk(this, data, true);
        this.finish();
      },
    };
  }

  json(status: number, body: string): void {
    this.send(status, { 'Content-Type': 'application/json' }, body);
  }

  error(status: number, message: string, close = false): void {
    this.send(status, { 'Content-Type': 'application/json' }, JSON.stringify({ error: message }), close);
  }

  /** The connection saw the client go away (or closed it) before this answer was written. */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reader = undefined;
    this.streaming = false;
    this.finish(); // once: a sent answer already ran it

    for (const h of this.abortHooks ?? []) h();
  }

  /** Body bytes from the connection (a view of its buffer: copied unless `whole`). */
  takeBody(bytes: Buffer, whole: boolean): void {
    const r = this.reader;
    if (r === undefined || r.refused) return;
    if (r.used + bytes.length > r.limit) {
      r.refused = true;
      r.done({ ok: false, size: r.used + bytes.length });
      return;
    }
    if (whole && r.used === 0) {
      r.buf = bytes;
      r.used = bytes.length;
      return;
    }
    if (r.used + bytes.length > r.buf.length) {
      // Memory follows the bytes that came, not the length declared: a head
      // that declares 64 MiB and sends nothing costs nothing. Doubling keeps
      // the copies of a large body under one more pass over it.
      const cap = r.declared > 0 ? r.declared : r.limit;
      const grown = Buffer.allocUnsafe(Math.min(cap, Math.max(r.used + bytes.length, r.buf.length * 2, FIRST_BODY_BYTES)));
      r.buf.copy(grown, 0, 0, r.used);
      r.buf = grown;
    }
    r.buf.set(bytes, r.used);
    r.used += bytes.length;
  }

  /** The body is complete. */
  endBody(): void {
    const r = this.reader;
    if (r === undefined || r.refused) return;
    this.reader = undefined;
    r.done({ ok: true, body: r.used === r.buf.length ? r.buf : r.buf.subarray(0, r.used) });
  }

  /** readBody's registration (below). */
  setReader(reader: BodyReader): void {
    this.reader = reader;
  }

  private finish(): void {
    const f = this.onFinished;
    this.onFinished = undefined;
    f?.();
  }

  /**
   * What every answer's head starts with: the status line, the handler's
   * headers (but Content-Length: the reply frames the body itself), the
   * extra headers, Date. The framing headers follow.
   */
  private headStart(status: number, headers: Record<string, string>): string {
    let s = `HTTP/1.1 ${statusLine(status)}\r\n`;
    for (const k in headers) if (k.toLowerCase() !== 'content-length') s += `${k}: ${headers[k]}\r\n`;
    const extra = this.extraHeaders;
    if (extra !== undefined) for (const k in extra) s += `${k}: ${extra[k]}\r\n`;
    return `${s}Date: ${httpDate()}\r\n`;
  }

  /** The head of a complete answer of `length` body bytes. */
  private headText(status: number, headers: Record<string, string>, length: number, close: boolean): string {
    let s = this.headStart(status, headers);
    // A 204 carries no body and so no Content-Length (RFC 9110 §8.6).
    if (status !== 204) s += `Content-Length: ${length}\r\n`;
    if (close || !this.keepAlive) s += 'Connection: close\r\n';
    else if (this.minor === 0) s += 'Connection: keep-alive\r\n';
    return `${s}\r\n`;
  }
}

/**
 * Collect the request body, refusing it as soon as it passes `limit` bytes
 * (by Content-Length up front, or while a chunked body streams in) so an
 * oversized upload is never buffered whole; the buffer grows as bytes come. Call it before the handler
 * returns: a body nobody reads is discarded.
 */
export function readBody(reply: Reply, head: RequestHead, limit: number, done: (r: BodyResult) => void): void {
  const declared = head.contentLength === '' ? 0 : Number(head.contentLength);
  if (declared > limit) {
    done({ ok: false, size: declared });
    return;
  }
  reply.setReader({ limit, declared, buf: NO_BYTES, used: 0, refused: false, done });
}

/** The answer to a body over --http-max-input-size (readBody's `ok: false`); the connection closes after it. */
export function bodyTooLarge(reply: Reply, size: number, limit: number): void {
  reply.error(
    400,
    `request size of ${size} bytes exceeds the maximum allowed input size of ${limit} bytes. Use --http-max-input-size to increase the limit.`,
    true,
  );
}

let dateText = '';
let dateSecond = -1;
/** The Date header's text, made once a second. */
function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(now).toUTCString();
  }
  return dateText;
}
