/**
 * Every uWebSockets.js quirk lives here (STYLE.md item 14):
 * - read everything from `req` synchronously in the handler (it dies after);
 * - attach onAborted before any async work, and never touch `res` after it;
 * - copy onData chunks (uWS neuters the ArrayBuffer on return);
 * - cork writes that happen outside the handler's synchronous part;
 * - `write()` switches to chunked encoding, so a body is sent with one `end()`,
 *   or, for a large body in parts, with `tryEnd()` (the total size up front)
 *   and `onWritable()` under backpressure: uWS then copies nothing, so the
 *   parts (arena views) must stay valid until `sendParts` says it is done.
 * - uWS adds `uWebSockets: 20` to every response unless its thread's loop is
 *   "silent" (`_cfg('silent')`, the npm build's switch for the C++ compile
 *   option UWS_HTTPRESPONSE_NO_WRITEMARK); `createApp` sets it first.
 */
import uws from '@trufflesuite/uws-js-unofficial';
import type { HttpRequest, HttpResponse, TemplatedApp } from '@trufflesuite/uws-js-unofficial';

/** An App whose responses carry only the headers we write (no `uWebSockets` mark). */
export function createApp(handler: (res: HttpResponse, req: HttpRequest) => void): TemplatedApp {
  uws._cfg('silent'); // per thread: it sets this thread's loop
  return uws.App().any('/*', handler);
}

const STATUS_LINE: Record<number, string> = {
  200: '200 OK',
  400: '400 Bad Request',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  413: '413 Payload Too Large',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  501: '501 Not Implemented',
  503: '503 Service Unavailable',
};

export function statusLine(status: number): string {
  return STATUS_LINE[status] ?? `${status} Unknown`;
}

/** The parts of a request the handlers need, read while `req` is valid. */
export interface RequestHead {
  method: string;
  url: string;
  contentLength: string;
  transferEncoding: string;
  headerLength: string;
  contentEncoding: string;
  acceptEncoding: string;
}

export function readHead(req: HttpRequest): RequestHead {
  const query = req.getQuery();
  return {
    method: req.getMethod().toUpperCase(),
    url: query ? `${req.getUrl()}?${query}` : req.getUrl(),
    contentLength: req.getHeader('content-length'),
    transferEncoding: req.getHeader('transfer-encoding'),
    headerLength: req.getHeader('inference-header-content-length'),
    contentEncoding: req.getHeader('content-encoding'),
    acceptEncoding: req.getHeader('accept-encoding'),
  };
}

/** A response with its aborted state; every send goes through here. */
/** The client's IP address as text (read while the request is live; uWS frees `res` after it ends). */
export function remoteAddress(res: HttpResponse): string {
  return Buffer.from(res.getRemoteAddressAsText()).toString('latin1');
}

export class Reply {
  aborted = false;
  done = false;
  /** `finished` runs once, when the response is sent or the client went away. */
  constructor(readonly res: HttpResponse, private readonly finished: () => void) {
    res.onAborted(() => {
      this.aborted = true;
      if (!this.done) finished();
    });
  }

  /** Send a complete response; `close` ends the connection after it. Safe to call once, from anywhere. */
  send(status: number, headers: Record<string, string>, body: Uint8Array | string, close = false): void {
    if (this.aborted || this.done) return;
    this.done = true;
    this.finished();
    this.res.cork(() => {
      this.res.writeStatus(statusLine(status));
      for (const k in headers) this.res.writeHeader(k, headers[k]);
      this.res.end(body, close);
    });
  }

  /**
   * Send a body made of `parts` without joining them (Content-Length is their
   * total). `released` runs once the last byte went out or the client went
   * away: only then may the parts' memory be reused.
   */
  sendParts(status: number, headers: Record<string, string>, parts: readonly Uint8Array[], released: () => void): void {
    if (this.aborted || this.done) return released();
    this.done = true;
    const res = this.res;
    let total = 0;
    for (const p of parts) total += p.byteLength;
    let settled = false;
    const settle = (): void => {
      if (settled) return;
      settled = true;
      this.finished();
      released();
    };
    res.onAborted(() => {
      this.aborted = true;
      settle();
    });
    /** Writes from body offset `at`; true when everything is out. */
    const writeFrom = (at: number): boolean => {
      let base = 0;
      for (const p of parts) {
        const end = base + p.byteLength;
        if (at < end) {
          const [ok, done] = res.tryEnd(p.subarray(at - base), total);
          if (done) return true;
          if (!ok) return false;
          at = end;
        }
        base = end;
      }
      return true;
    };
    res.cork(() => {
      res.writeStatus(statusLine(status));
      for (const k in headers) res.writeHeader(k, headers[k]);
      if (total === 0) {
        res.end();
        return settle();
      }
      if (writeFrom(0)) return settle();
      res.onWritable((offset) => {
        const done = writeFrom(offset);
        if (done) settle();
        return done;
      });
    });
  }

  json(status: number, body: string): void {
    this.send(status, { 'Content-Type': 'application/json' }, body);
  }

  error(status: number, message: string, close = false): void {
    this.send(status, { 'Content-Type': 'application/json' }, JSON.stringify({ error: message }), close);
  }
}

export type BodyResult = { ok: true; body: Buffer } | { ok: false; size: number };

/**
 * Collect the request body, refusing it as soon as it passes `limit` bytes
 * (by Content-Length up front, or while streaming a chunked body) so an
 * oversized upload is never buffered whole.
 */
export function readBody(reply: Reply, head: RequestHead, limit: number, done: (r: BodyResult) => void): void {
  const declared = head.contentLength === '' ? -1 : Number(head.contentLength);
  if (declared > limit) {
    // Still register a data handler: uWS expects one for a request with a body.
    reply.res.onData(() => undefined);
    done({ ok: false, size: declared });
    return;
  }
  let buf = Buffer.allocUnsafe(declared > 0 ? declared : 0);
  let used = 0;
  let refused = false;
  reply.res.onData((chunk, isLast) => {
    if (refused) return;
    const bytes = new Uint8Array(chunk);
    if (used + bytes.length > limit) {
      refused = true;
      done({ ok: false, size: used + bytes.length });
      return;
    }
    if (used + bytes.length > buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(used + bytes.length, buf.length * 2, 4096));
      buf.copy(grown, 0, 0, used);
      buf = grown;
    }
    buf.set(bytes, used);
    used += bytes.length;
    if (isLast) done({ ok: true, body: used === buf.length ? buf : buf.subarray(0, used) });
  });
}

/**
 * Close the app's listen sockets and every open connection. The typings lack
 * `close()` but this build has it; a thread that ends while a connection is
 * open aborts the process (`uv_loop_close() while having open handles`).
 */
export function closeApp(app: TemplatedApp): void {
  (app as unknown as { close(): void }).close();
}
