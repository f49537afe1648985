/**
 * The HTTP/1.x request head (request line and header fields) as the HTTP
 * thread's own server reads it (http-connection.ts): pure, over the bytes a
 * connection has buffered, so every malformed input has a table test.
 *
 * Strict where a lax reading could let two parties disagree about where a
 * request ends (request smuggling): one Content-Length, never together with
 * Transfer-Encoding, only the `chunked` coding, one Host, no whitespace
 * before a field's colon, no obsolete line folding, and CRLF line ends only.
 * RFC 9112 §2.2 lets a server take a bare LF as a line end, but a proxy in
 * front that does not (or one that takes a bare CR) then sees a different
 * head than we do; llhttp (node), Envoy and Go refuse it, and so do we, the
 * same rule as in chunk framing (chunked-body.ts). Methods are
 * case-sensitive (RFC 9110 §9.1): `get` is not GET.
 *
 * Incremental: a caller that buffers a head as it trickles in passes
 * `scanned`, how far an earlier call looked without finding the head's end
 * (`incomplete.scanned`), so each byte of a head is scanned about once.
 */

export interface RequestHeadFields {
  method: string;
  /** The request target as sent (origin form `/path?query`). */
  target: string;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  minor: 0 | 1;
  /** Lower-cased field names; repeated fields joined with ", " (RFC 9110 §5.3). */
  headers: Map<string, string>;
  /** Header field lines as sent (repeated ones each counted). */
  fieldCount: number;
  /** Body framing: a length (0 = none), or chunked. */
  contentLength: number;
  chunked: boolean;
  /** Whether the connection stays open after this request (version and `Connection`). */
  keepAlive: boolean;
  /** `Expect: 100-continue` was sent. */
  expectContinue: boolean;
}

export type HeadParse =
  /** `scanned`: bytes from `from` known to hold no head end (pass it back with more bytes). */
  | { kind: 'incomplete'; scanned: number }
  | { kind: 'head'; head: RequestHeadFields; /** Bytes of the head, its blank line included. */ consumed: number }
  | { kind: 'error'; status: number; message: string };

export interface HeadLimits {
  /** Largest head, request line to blank line: past it, 431. */
  maxHeadBytes: number;
  maxHeaderCount: number;
}

export const DEFAULT_HEAD_LIMITS: HeadLimits = { maxHeadBytes: 64 * 1024, maxHeaderCount: 128 };

/** RFC 9110 tchar, as a table over the 128 ASCII codes. */
const TCHAR = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") TCHAR[c.charCodeAt(0)] = 1;

function isToken(s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || TCHAR[c] === 0) return false;
  }
  return true;
}

/** Visible ASCII (and obs-text) without spaces: what a request target may hold. */
function isTarget(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) return false;
  }
  return s.length > 0;
}

/** A field value may not hold control characters other than tab. */
function hasBadValueChar(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) return true;
  }
  return false;
}

const bad = (message: string, status = 400): { kind: 'error'; status: number; message: string } => ({ kind: 'error', status, message });

/** The head's end (the byte after its blank line), -1 while none came, -2 at a bare LF. */
function headEnd(buf: Buffer, from: number, scanFrom: number, limit: number): number {
  const stop = Math.min(buf.length, from + limit + 4);
  let i = buf.indexOf(10, Math.max(from, scanFrom));
  while (i >= 0 && i < stop) {
    if (i === from || buf[i - 1] !== 13) return -2;
    if (i - 3 >= from && buf[i - 2] === 10 && buf[i - 3] === 13) return i + 1;
    i = buf.indexOf(10, i + 1);
  }
  return -1;
}

const BARE_LF = 'malformed request head: a line ends with a bare LF; every line of the request line and headers must end with CRLF (RFC 9112 §2.2)';

/**
 * Parse the head that starts at `from` (empty lines, CRLF each, before a
 * request line are skipped, RFC 9112 §2.2). `scanned`: the previous
 * `incomplete.scanned` for the same `from`.
 */
export function parseRequestHead(buf: Buffer, from = 0, limits: HeadLimits = DEFAULT_HEAD_LIMITS, scanned = 0): HeadParse {
  let start = from;
  while (start + 1 < buf.length && buf[start] === 13 && buf[start + 1] === 10) start += 2;
  if (start + 1 === buf.length && buf[start] === 13) return { kind: 'incomplete', scanned: 0 };
  // Go back 3 bytes: the blank line's CRLFCRLF may straddle what was scanned.
  const end = headEnd(buf, start, Math.max(start, from + scanned - 3), limits.maxHeadBytes);
  if (end === -2) return bad(BARE_LF);
  if (end < 0) {
    if (buf.length - start > limits.maxHeadBytes) {
      return bad(`request header fields too large: the request line and headers exceed ${limits.maxHeadBytes} bytes`, 431);
    }
    return { kind: 'incomplete', scanned: buf.length - from };
  }
  if (end - start > limits.maxHeadBytes + 4) {
    return bad(`request header fields too large: the request line and headers exceed ${limits.maxHeadBytes} bytes`, 431);
  }
  const text = buf.toString('latin1', start, end - 4);
  const parsed = parseLines(text.split('\r\n'), limits);
  if ('kind' in parsed) return parsed;
  return { kind: 'head', head: parsed, consumed: end - from };
}

type HeadError = Extract<HeadParse, { kind: 'error' }>;

/** The head's fields from its lines (line ends removed), or what is wrong with them. */
function parseLines(lines: string[], limits: HeadLimits): RequestHeadFields | HeadError {
  const line = lines[0];
  const sp1 = line.indexOf(' ');
  const sp2 = line.lastIndexOf(' ');
  if (sp1 <= 0 || sp2 === sp1) return bad(`malformed request line '${printable(line)}': expected 'METHOD /path HTTP/1.1'`);
  const method = line.slice(0, sp1);
  const target = line.slice(sp1 + 1, sp2);
  const version = line.slice(sp2 + 1);
  if (!isToken(method)) return bad(`malformed request line '${printable(line)}': the method '${printable(method)}' is not a token`);
  if (/[a-z]/.test(method)) {
    return bad(`unknown method '${printable(method)}': methods are case-sensitive (RFC 9110 §9.1); send '${printable(method.toUpperCase())}'`);
  }
  if (!isTarget(target)) {
    return bad(`malformed request line '${printable(line)}': the request target must not contain spaces or control characters (percent-encode them)`);
  }
  if (!/^HTTP\/\d\.\d$/.test(version)) return bad(`malformed request line '${printable(line)}': expected 'HTTP/1.1' or 'HTTP/1.0' at its end`);
  if (version !== 'HTTP/1.1' && version !== 'HTTP/1.0') return bad(`HTTP version '${version}' is not supported: use HTTP/1.1 or HTTP/1.0`, 505);
  const minor = version === 'HTTP/1.1' ? 1 : 0;
  if (target[0] !== '/' && !(method === 'OPTIONS' && target === '*') && !/^https?:\/\//i.test(target)) {
    return bad(`malformed request target '${printable(target)}': expected a path that starts with '/'`);
  }
  if (lines.length - 1 > limits.maxHeaderCount) {
    return bad(`too many header fields: ${lines.length - 1}, at most ${limits.maxHeaderCount}`, 431);
  }
  const headers = new Map<string, string>();
  let lengths = 0;
  for (let i = 1; i < lines.length; i++) {
    const field = lines[i];
    if (field[0] === ' ' || field[0] === '\t') return bad(`malformed header line '${printable(field)}': obsolete line folding is not accepted`);
    const colon = field.indexOf(':');
    if (colon < 0) return bad(`malformed header line '${printable(field)}': expected 'Name: value'`);
    const name = field.slice(0, colon);
    if (!isToken(name)) return bad(`malformed header name '${printable(name)}' (no spaces before the colon, token characters only)`);
    // Leading whitespace goes; trailing stays, as Triton's HTTP server keeps it (a forwarded header's value arrives as sent).
    const value = field.slice(colon + 1).trimStart();
    if (hasBadValueChar(value)) return bad(`malformed value of header '${name}': control characters are not allowed`);
    const key = name.toLowerCase();
    if (key === 'content-length' && ++lengths > 1) {
      return bad("a request must have at most one Content-Length header: send the body's length once");
    }
    const had = headers.get(key);
    if (key === 'host' && had !== undefined) return bad('a request must have exactly one Host header (RFC 9112 §3.2), this one has several');
    headers.set(key, had === undefined ? value : `${had}, ${value}`);
  }
  return framing(method, target, minor, headers, lines.length - 1);
}

function framing(method: string, target: string, minor: 0 | 1, headers: Map<string, string>, fieldCount: number): RequestHeadFields | HeadError {
  const te = headers.get('transfer-encoding');
  const cl = headers.get('content-length');
  let contentLength = 0;
  let chunked = false;
  if (te !== undefined) {
    if (cl !== undefined) return bad('a request must not have both Transfer-Encoding and Content-Length');
    // RFC 9112 §6.1 lets a server answer an unknown coding with 501; a request
    // whose framing we cannot read is refused as any other bad framing (400, and the connection closes).
    if (te.trim().toLowerCase() !== 'chunked') {
      return bad(`Transfer-Encoding '${printable(te)}' is not supported: send 'chunked' or a Content-Length`);
    }
    if (minor === 0) return bad('Transfer-Encoding is not allowed in an HTTP/1.0 request: send a Content-Length');
    chunked = true;
  } else if (cl !== undefined) {
    const value = cl.trim();
    if (!/^\d{1,15}$/.test(value)) return bad(`invalid Content-Length '${printable(value)}': expected a decimal byte count`);
    contentLength = Number(value);
  }
  if (minor === 1 && !headers.has('host')) return bad('an HTTP/1.1 request must have a Host header');
  const connection = (headers.get('connection') ?? '').toLowerCase();
  const keepAlive = minor === 1 ? !/(^|[\s,])close($|[\s,])/.test(connection) : /(^|[\s,])keep-alive($|[\s,])/.test(connection);
  const expect = headers.get('expect')?.trim();
  if (expect !== undefined && expect.toLowerCase() !== '100-continue') {
    return bad(`Expect '${printable(expect)}' is not supported (only '100-continue')`, 417);
  }
  return { method, target, minor, headers, fieldCount, contentLength, chunked, keepAlive, expectContinue: expect !== undefined && minor === 1 };
}

/** Text of client bytes fit for an error message: control characters escaped, cut at 80 characters. */
export function printable(s: string): string {
  const cut = s.length > 80 ? `${s.slice(0, 80)}...` : s;
  return cut.replace(/[\x00-\x1f\x7f-\xff]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
