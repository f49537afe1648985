/**
 * The perf tool's raw HTTP/2 gRPC client against node:http2's server (nghttp2
 * as the reference HPACK encoder and HTTP/2 peer), table-driven: statuses
 * from trailers and trailers-only replies, percent-encoded messages, Huffman
 * and dynamic-table header fields, large bodies both ways (flow control),
 * resets, and many concurrent calls on one connection.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { frameGrpcMessage, unframeGrpcMessage } from '../../src/perf/grpc-conn';
import { H2GrpcConn } from '../../src/perf/h2-grpc-conn';
import { HpackDecoder } from '../../src/perf/hpack-decoder';

const PATH = '/inference.GRPCInferenceService/ModelInfer';

interface Reply {
  /** Trailers-only: status in the response headers, no body. */
  trailersOnly?: boolean;
  status: number;
  message?: string;
  body?: Buffer;
  headers?: Record<string, string>;
  rst?: number;
}

/** The server answers per request body: the reply named by the request message's text. */
function startServer(
  replies: Record<string, Reply>,
  seen: { path?: string; headers?: http2.IncomingHttpHeaders; bytes?: number },
): Promise<{ server: http2.Http2Server; port: number }> {
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    stream.on('error', () => undefined); // the reset case closes the stream with an error code
    const parts: Buffer[] = [];
    stream.on('data', (c: Buffer) => parts.push(c));
    stream.on('end', () => {
      const body = Buffer.concat(parts);
      seen.path = headers[':path'];
      seen.headers = headers;
      seen.bytes = body.length;
      const key = unframeGrpcMessage(body).subarray(0, 32).toString('latin1').replace(/\0+$/, '');
      const r = replies[key] ?? replies.default;
      if (r.rst !== undefined) return stream.close(r.rst);
      const trailers = { 'grpc-status': String(r.status), ...(r.message !== undefined ? { 'grpc-message': encodeURIComponent(r.message) } : {}) };
      if (r.trailersOnly) {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc', ...trailers }, { endStream: true });
        return;
      }
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', ...(r.headers ?? {}) }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers(trailers));
      stream.end(frameGrpcMessage(r.body ?? Buffer.from('ok')));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port })));
}

const request = (key: string, size = 32): Buffer => {
  const msg = Buffer.alloc(Math.max(size, 32));
  msg.write(key, 'latin1');
  return frameGrpcMessage(msg);
};

const BIG = Buffer.alloc(3_000_000, 7);
const replies: Record<string, Reply> = {
  default: { status: 0, body: Buffer.from('default reply') },
  big: { status: 0, body: BIG },
  error: { status: 3, message: "unexpected shape for input 'X': 50% off ✓" },
  only: { trailersOnly: true, status: 5, message: "Request for unknown model: 'nope' is not found" },
  headers: { status: 0, headers: { 'x-long': 'v'.repeat(5000), 'x-huffman': 'abcdefghijklmnopqrstuvwxyz0123456789-_.~', 'x-binary': '\u00ff\u0001text' } },
  reset: { status: 0, rst: http2.constants.NGHTTP2_REFUSED_STREAM },
};

const cases: { name: string; key: string; size?: number; keepBody?: boolean; code: number; message?: string | RegExp; body?: Buffer }[] = [
  { name: 'OK with the body kept', key: 'x', keepBody: true, code: 0, body: Buffer.from('default reply') },
  { name: 'OK, body not kept', key: 'x', code: 0 },
  { name: 'error status with a percent-encoded message', key: 'error', code: 3, message: "unexpected shape for input 'X': 50% off ✓" },
  { name: 'trailers-only error', key: 'only', code: 5, message: "Request for unknown model: 'nope' is not found" },
  { name: 'a 3 MB response (receive flow control)', key: 'big', keepBody: true, code: 0, body: BIG },
  { name: 'a 1 MB request (send flow control and frame size)', key: 'x', size: 1_000_000, code: 0 },
  { name: 'large, Huffman-coded and non-ASCII response headers', key: 'headers', code: 0 },
  { name: 'stream reset by the server', key: 'reset', code: 14, message: /HTTP\/2 error code 7/ },
];

test('raw HTTP/2 gRPC client against node:http2', async (t) => {
  const seen: { path?: string; headers?: http2.IncomingHttpHeaders; bytes?: number } = {};
  const { server, port } = await startServer(replies, seen);
  const conn = await H2GrpcConn.open(`127.0.0.1:${port}`, PATH);
  try {
    for (const c of cases) {
      await t.test(c.name, async () => {
        const req = request(c.key, c.size);
        const r = await conn.send(req, c.keepBody === true);
        assert.equal(r.code, c.code, r.message);
        if (c.message instanceof RegExp) assert.match(r.message ?? '', c.message);
        else if (c.message !== undefined) assert.equal(r.message, c.message);
        if (c.body !== undefined) assert.deepEqual(unframeGrpcMessage(r.body!), c.body);
        if (c.code === 0) assert.equal(seen.bytes, req.length);
      });
    }
    await t.test('request headers as a gRPC server expects them', () => {
      assert.equal(seen.path, PATH);
      assert.equal(seen.headers![':method'], 'POST');
      assert.equal(seen.headers!['content-type'], 'application/grpc');
      assert.equal(seen.headers!.te, 'trailers');
      assert.equal(seen.headers![':authority'], `127.0.0.1:${port}`);
    });
    await t.test('many concurrent calls, repeated so the HPACK dynamic table churns', async () => {
      const keys = ['x', 'error', 'headers', 'only'];
      for (let round = 0; round < 5; round++) {
        const replies = await Promise.all(Array.from({ length: 64 }, (_, k) => conn.send(request(keys[k % 4]))));
        assert.deepEqual(
          replies.map((r) => r.code),
          Array.from({ length: 64 }, (_, k) => [0, 3, 0, 5][k % 4]),
        );
      }
    });
  } finally {
    conn.close();
    server.close();
  }
  const after = await conn.send(request('x'));
  assert.equal(after.code, 14, 'a closed connection answers UNAVAILABLE');
});

test('HPACK: the RFC 7541 C.4 request examples (Huffman, dynamic table)', () => {
  const d = new HpackDecoder();
  const hex = (s: string): Buffer => Buffer.from(s.replace(/\s/g, ''), 'hex');
  assert.deepEqual(d.decode(hex('8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff')), {
    ':method': 'GET',
    ':scheme': 'http',
    ':path': '/',
    ':authority': 'www.example.com',
  });
  assert.deepEqual(d.decode(hex('8286 84be 5886 a8eb 1064 9cbf')), {
    ':method': 'GET',
    ':scheme': 'http',
    ':path': '/',
    ':authority': 'www.example.com',
    'cache-control': 'no-cache',
  });
});

test('HPACK: malformed blocks throw', () => {
  const cases: [string, Buffer][] = [
    ['index 0', Buffer.from([0x80])],
    ['index past the tables', Buffer.from([0xff, 0x10])],
    ['truncated string', Buffer.from([0x40, 0x05, 0x61])],
    ['bad Huffman padding', Buffer.from([0x40, 0x81, 0x00, 0x01, 0x61])],
  ];
  for (const [name, block] of cases) assert.throws(() => new HpackDecoder().decode(block), Error, name);
});
