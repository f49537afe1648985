import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRequestHead } from '../../src/frontend/http/request-head-parser';

/** [name, head bytes, what parseRequestHead answers: 'incomplete', [status, message part], or the fields checked]. */
type Want =
  | 'incomplete'
  | [number, string]
  | {
      method?: string;
      target?: string;
      minor?: 0 | 1;
      contentLength?: number;
      chunked?: boolean;
      keepAlive?: boolean;
      expectContinue?: boolean;
      consumed?: number;
      header?: [string, string];
    };
const CASES: [string, string, Want][] = [
  ['plain GET', 'GET /v2 HTTP/1.1\r\nHost: x\r\n\r\n', { method: 'GET', target: '/v2', minor: 1, contentLength: 0, keepAlive: true, consumed: 29 }],
  ['bare LF line ends', 'GET /v2 HTTP/1.1\nHost: x\n\n', [400, 'a line ends with a bare LF; every line of the request line and headers must end with CRLF']],
  ['one bare LF among CRLFs', 'GET /v2 HTTP/1.1\r\nHost: x\nX: y\r\n\r\n', [400, 'bare LF']],
  ['a bare CR in a value', 'GET /v2 HTTP/1.1\r\nHost: x\ry\r\n\r\n', [400, "malformed value of header 'Host'"]],
  ['a lower-case method', 'get /v2 HTTP/1.1\r\nHost: x\r\n\r\n', [400, "unknown method 'get': methods are case-sensitive (RFC 9110 §9.1); send 'GET'"]],
  ['a mixed-case method', 'Post /v2 HTTP/1.1\r\nHost: x\r\n\r\n', [400, "send 'POST'"]],
  ['repeated Host', 'GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n', [400, 'a request must have exactly one Host header (RFC 9112 §3.2)']],
  ['leading empty lines skipped', '\r\n\r\nGET /v2 HTTP/1.1\r\nHost: x\r\n\r\n', { target: '/v2', consumed: 33 }],
  ['POST with a length', 'POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n', { method: 'POST', contentLength: 12 }],
  [
    'repeated equal lengths',
    'POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n',
    [400, 'a request must have at most one Content-Length header'],
  ],
  ['a list of lengths in one header', 'POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\n', [400, "invalid Content-Length '3, 3'"]],
  ['chunked', 'POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n', { chunked: true, contentLength: 0 }],
  ['HTTP/1.0 closes by default', 'GET / HTTP/1.0\r\n\r\n', { minor: 0, keepAlive: false }],
  ['HTTP/1.0 keep-alive', 'GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n', { minor: 0, keepAlive: true }],
  ['HTTP/1.1 close', 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', { keepAlive: false }],
  ['100-continue', 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nExpect: 100-continue\r\n\r\n', { expectContinue: true }],
  [
    'header names are case-insensitive, leading spaces of values dropped, trailing kept',
    'GET / HTTP/1.1\r\nHOST: x\r\nInference-Header-Content-Length:   42 \r\n\r\n',
    { header: ['inference-header-content-length', '42 '] },
  ],
  ['a length with trailing spaces', 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 7  \r\n\r\n', { contentLength: 7 }],
  [
    'repeated headers joined',
    'GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\nAccept-Encoding: deflate\r\n\r\n',
    { header: ['accept-encoding', 'gzip, deflate'] },
  ],
  ['unknown method is still a request', 'PROPFIND /v2 HTTP/1.1\r\nHost: x\r\n\r\n', { method: 'PROPFIND' }],
  ['OPTIONS *', 'OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n', { target: '*' }],
  ['incomplete head', 'GET /v2 HTTP/1.1\r\nHost: x\r\n', 'incomplete'],
  ['nothing yet', '', 'incomplete'],
  ['no version', 'GET /v2\r\n\r\n', [400, "malformed request line 'GET /v2': expected 'METHOD /path HTTP/1.1'"]],
  ['garbage line', 'HELLO\r\n\r\n', [400, "malformed request line 'HELLO'"]],
  ['space in the path', 'GET /a b HTTP/1.1\r\nHost: x\r\n\r\n', [400, 'must not contain spaces or control characters']],
  ['control character in the path', 'GET /a\x01b HTTP/1.1\r\nHost: x\r\n\r\n', [400, "malformed request line 'GET /a\\x01b HTTP/1.1'"]],
  ['method with a bad character', 'G(T / HTTP/1.1\r\nHost: x\r\n\r\n', [400, "the method 'G(T' is not a token"]],
  ['target not a path', 'GET v2 HTTP/1.1\r\nHost: x\r\n\r\n', [400, "malformed request target 'v2': expected a path that starts with '/'"]],
  ['HTTP/2.0 line', 'GET / HTTP/2.0\r\nHost: x\r\n\r\n', [505, "HTTP version 'HTTP/2.0' is not supported"]],
  ['not HTTP', 'GET / FTP/1.1\r\nHost: x\r\n\r\n', [400, "expected 'HTTP/1.1' or 'HTTP/1.0' at its end"]],
  ['header without a colon', 'GET / HTTP/1.1\r\nHost: x\r\nBadHeader\r\n\r\n', [400, "malformed header line 'BadHeader': expected 'Name: value'"]],
  ['space before the colon', 'GET / HTTP/1.1\r\nHost : x\r\n\r\n', [400, "malformed header name 'Host '"]],
  ['obsolete folding', 'GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n', [400, 'obsolete line folding is not accepted']],
  ['control character in a value', 'GET / HTTP/1.1\r\nHost: x\x00y\r\n\r\n', [400, "malformed value of header 'Host'"]],
  ['no Host in HTTP/1.1', 'GET / HTTP/1.1\r\n\r\n', [400, 'an HTTP/1.1 request must have a Host header']],
  ['length not a number', 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', [400, "invalid Content-Length 'abc'"]],
  ['negative length', 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n', [400, "invalid Content-Length '-1'"]],
  ['huge length', 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n', [400, 'invalid Content-Length']],
  ['conflicting lengths', 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n', [400, 'at most one Content-Length header']],
  [
    'length and chunked',
    'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n',
    [400, 'must not have both Transfer-Encoding and Content-Length'],
  ],
  [
    'gzip transfer coding',
    'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n',
    [400, "Transfer-Encoding 'gzip, chunked' is not supported"],
  ],
  ['chunked in HTTP/1.0', 'POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n', [400, 'not allowed in an HTTP/1.0 request']],
  ['other expectation', 'POST / HTTP/1.1\r\nHost: x\r\nExpect: magic\r\n\r\n', [417, "Expect 'magic' is not supported"]],
  ['head too large', `GET / HTTP/1.1\r\nHost: x\r\nX: ${'a'.repeat(70_000)}\r\n\r\n`, [431, 'request header fields too large']],
  ['endless head', `GET / HTTP/1.1\r\nX: ${'a'.repeat(70_000)}`, [431, 'exceed 65536 bytes']],
  ['too many headers', `GET / HTTP/1.1\r\nHost: x\r\n${'X: y\r\n'.repeat(200)}\r\n`, [431, 'too many header fields: 201, at most 128']],
];

for (const [name, text, want] of CASES) {
  test(`request head: ${name}`, () => {
    const r = parseRequestHead(Buffer.from(text, 'latin1'));
    if (want === 'incomplete') return assert.equal(r.kind, 'incomplete');
    if (Array.isArray(want)) {
      assert.equal(r.kind, 'error', JSON.stringify(r));
      if (r.kind !== 'error') return;
      assert.equal(r.status, want[0]);
      assert.ok(r.message.includes(want[1]), `${r.message} should include ${want[1]}`);
      return;
    }
    assert.equal(r.kind, 'head', JSON.stringify(r));
    if (r.kind !== 'head') return;
    const { header, consumed, ...fields } = want;
    for (const [k, v] of Object.entries(fields)) assert.equal((r.head as unknown as Record<string, unknown>)[k], v, k);
    if (consumed !== undefined) assert.equal(r.consumed, consumed);
    if (header !== undefined) assert.equal(r.head.headers.get(header[0]), header[1]);
  });
}

test('request head: two pipelined heads are read one after the other', () => {
  const buf = Buffer.from('GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n');
  const a = parseRequestHead(buf, 0);
  assert.equal(a.kind, 'head');
  if (a.kind !== 'head') return;
  const b = parseRequestHead(buf, a.consumed);
  assert.equal(b.kind, 'head');
  if (b.kind !== 'head') return;
  assert.deepEqual([a.head.target, b.head.target, a.consumed + b.consumed], ['/a', '/b', buf.length]);
});

test('request head: a head that trickles in a byte at a time is scanned incrementally and read whole', () => {
  const text = `POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\n${'X-Pad: abcdefgh\r\n'.repeat(100)}Content-Length: 5\r\n\r\nhello`;
  const all = Buffer.from(text, 'latin1');
  let scanned = 0;
  let result: ReturnType<typeof parseRequestHead> | undefined;
  for (let n = 1; n <= all.length; n++) {
    const r = parseRequestHead(all.subarray(0, n), 0, undefined, scanned);
    if (r.kind === 'incomplete') {
      assert.ok(r.scanned >= scanned && r.scanned <= n, `scanned ${r.scanned} of ${n}`);
      scanned = r.scanned;
      continue;
    }
    result = r;
    break;
  }
  assert.equal(result?.kind, 'head', JSON.stringify(result));
  if (result?.kind !== 'head') return;
  assert.equal(result.consumed, all.length - 5);
  assert.equal(result.head.contentLength, 5);
  assert.equal(result.head.headers.get('x-pad'), Array(100).fill('abcdefgh').join(', '));
});

test('request head: a blank line split across reads (CR LF | CR LF) is found', () => {
  const all = Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n', 'latin1');
  for (let cut = 1; cut < all.length; cut++) {
    const first = parseRequestHead(all.subarray(0, cut));
    assert.equal(first.kind, 'incomplete', `cut at ${cut}`);
    if (first.kind !== 'incomplete') return;
    const r = parseRequestHead(all, 0, undefined, first.scanned);
    assert.equal(r.kind, 'head', `cut at ${cut}: ${JSON.stringify(r)}`);
  }
});
