/**
 * The HTTP fuzz suite: seeded (NODETRON_FUZZ_SEED), bounded in count and
 * time, loopback only, against the real server. Each case is one kind of
 * hostile or odd input, built from the seed's random stream; each must get
 * its status and an error naming what is wrong (within the deadline, never a
 * hang), and a known-good inference must answer after every batch of cases.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type ServerProcess } from './server-process';
import { SIMPLE_BODY, inferSimple } from './repo-kit';
import { rawExchange, type RawExchange } from './raw-http';
import { Rng } from './grpc-fuzz-kit';

const SEED = Number(process.env.NODETRON_FUZZ_SEED ?? 20261201);
const CASES = Number(process.env.NODETRON_FUZZ_CASES ?? 3000);

interface FuzzCase {
  kind: string;
  pieces: (string | Buffer)[];
  /** Statuses the answers must have, in order (0: any error, 4xx or 5xx). */
  want: number[];
  /** Text the last answer's error must contain. */
  says?: string;
  waitClose?: boolean;
  end?: boolean;
  gapMs?: number;
}

const INFER = '/v2/models/simple/infer';
const infer = (extra = '', body = SIMPLE_BODY, version = 'HTTP/1.1'): string =>
  `POST ${INFER} ${version}\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

function makeCase(rand: () => number): FuzzCase {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const int = (lo: number, hi: number): number => lo + Math.floor(rand() * (hi - lo + 1));
  const letters = (n: number, alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'): string => Array.from({ length: n }, () => pick(alphabet.split(''))).join('');
  const kinds: (() => FuzzCase)[] = [
    () => ({ kind: 'valid infer', pieces: [infer()], want: [200] }),
    () => ({
      kind: 'unknown method',
      pieces: [`${pick(['PROPFIND', 'SEARCH', 'FOO', 'MKCOL', letters(int(1, 12))])} ${INFER} HTTP/1.1\r\nHost: x\r\n\r\n`],
      want: [405],
      says: 'Method Not Allowed',
    }),
    () => ({
      kind: 'method with bad characters',
      pieces: [`${letters(2)}${pick(['(', '"', '/', '@', '\x01'])}${letters(2)} /v2 HTTP/1.1\r\nHost: x\r\n\r\n`],
      want: [400],
      says: 'is not a token',
      waitClose: true,
    }),
    () => ({
      kind: 'space or control in the path',
      pieces: [`GET /v2/models/${letters(3)}${pick([' ', '\x00', '\x7f', '\x1b'])}${letters(3)} HTTP/1.1\r\nHost: x\r\n\r\n`],
      want: [400],
      says: 'must not contain spaces',
      waitClose: true,
    }),
    () => ({
      kind: 'header without a colon',
      pieces: [`GET /v2 HTTP/1.1\r\nHost: x\r\n${letters(int(1, 20))}\r\n\r\n`],
      want: [400],
      says: "expected 'Name: value'",
      waitClose: true,
    }),
    () => ({
      kind: 'space before a colon',
      pieces: [`GET /v2 HTTP/1.1\r\nHost: x\r\n${letters(5)} : v\r\n\r\n`],
      want: [400],
      says: 'malformed header name',
      waitClose: true,
    }),
    () => ({
      kind: 'bad Content-Length',
      pieces: [
        `POST ${INFER} HTTP/1.1\r\nHost: x\r\nContent-Length: ${pick(['-1', 'abc', '1e3', '0x10', '', '99999999999999999', `${int(1, 9)} ${int(1, 9)}`])}\r\n\r\n{}`,
      ],
      want: [400],
      says: 'Content-Length',
      waitClose: true,
    }),
    () => ({
      kind: 'Content-Length and chunked',
      pieces: [`POST ${INFER} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}`],
      want: [400],
      says: 'both Transfer-Encoding and Content-Length',
      waitClose: true,
    }),
    () => ({
      kind: 'bad chunk size',
      pieces: [`POST ${INFER} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${pick(['zz', 'g1', '-5', '0x3'])}\r\nabc\r\n0\r\n\r\n`],
      want: [400],
      says: 'malformed chunked request body',
      waitClose: true,
    }),
    () => {
      const body = SIMPLE_BODY;
      const cut = int(1, body.length - 1);
      const chunks = [body.slice(0, cut), body.slice(cut)].map((c) => `${Buffer.byteLength(c).toString(16)}\r\n${c}\r\n`).join('');
      return {
        kind: 'valid chunked infer',
        pieces: [`POST ${INFER} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${chunks}0\r\n\r\n`],
        want: [200],
      };
    },
    () => ({
      kind: 'unsupported HTTP version',
      pieces: [`GET /v2 HTTP/${pick(['0.9', '1.2', '2.0', '3.0'])}\r\nHost: x\r\n\r\n`],
      want: [505],
      says: 'is not supported',
      waitClose: true,
    }),
    () => ({ kind: 'HTTP/1.0 infer', pieces: [infer('', SIMPLE_BODY, 'HTTP/1.0')], want: [200], waitClose: true }),
    () => ({
      kind: 'HTTP/1.0 keep-alive twice',
      pieces: [infer('Connection: keep-alive\r\n', SIMPLE_BODY, 'HTTP/1.0') + infer('', SIMPLE_BODY, 'HTTP/1.0')],
      want: [200, 200],
      waitClose: true,
    }),
    () => {
      const whole = infer();
      return {
        kind: 'truncated request, then FIN',
        pieces: [whole.slice(0, int(5, whole.length - 1))],
        want: [400],
        says: 'ended before it was complete',
        end: true,
        waitClose: true,
      };
    },
    () => {
      const n = int(2, 12);
      return { kind: 'pipelined infers', pieces: [Array.from({ length: n }, () => infer()).join('')], want: Array.from({ length: n }, () => 200) };
    },
    () => {
      const n = int(1, 6);
      return {
        kind: 'pipelined infers, then a broken head',
        pieces: [Array.from({ length: n }, () => infer()).join('') + 'GET /v2 HTTP/1.1\r\nBroken\r\n\r\n'],
        want: [...Array.from({ length: n }, () => 200), 400],
        says: "expected 'Name: value'",
        waitClose: true,
      };
    },
    () => ({ kind: 'pipelined mix of routes', pieces: [infer() + `GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n` + infer()], want: [200, 200, 200] }),
    () => ({
      kind: 'binary garbage',
      pieces: [Buffer.from(Array.from({ length: int(4, 200) }, () => int(0, 255)).concat([13, 10, 13, 10]))],
      want: [400],
      waitClose: true,
    }),
    () => {
      const b = Buffer.from(SIMPLE_BODY);
      for (let i = 0; i < int(0, 3); i++) b[int(0, b.length - 1)] = pick([0x7b, 0x22, 0x5d, 0x2c, 0xff]);
      b[int(0, b.length - 1)] = 0x00; // never valid in JSON, in or out of a string
      return {
        kind: 'corrupted JSON body',
        pieces: [Buffer.concat([Buffer.from(`POST ${INFER} HTTP/1.1\r\nHost: x\r\nContent-Length: ${b.length}\r\n\r\n`), b])],
        want: [0, 200],
      };
    },
    () => ({
      kind: 'header section too large',
      pieces: [`GET /v2 HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(int(66_000, 90_000))}\r\n\r\n`],
      want: [431],
      says: 'too large',
      waitClose: true,
    }),
    () => ({ kind: 'expect 100-continue', pieces: [infer('Expect: 100-continue\r\n')], want: [100, 200] }),
    () => {
      const whole = infer();
      const cuts = Array.from({ length: int(1, 6) }, () => int(1, whole.length - 1)).sort((a, b) => a - b);
      const pieces = [0, ...cuts].map((c, i, all) => whole.slice(c, all[i + 1] ?? whole.length)).filter((p) => p !== '');
      return { kind: 'valid infer in pieces', pieces, want: [200], gapMs: int(0, 3) };
    },
    // Bare LF line ends are refused (request-head-parser.ts: a proxy that reads them otherwise would see another head).
    () => ({ kind: 'LF-only line ends', pieces: [`GET /v2/health/live HTTP/1.1\nHost: x\n\n`], want: [400], says: 'must end with CRLF', waitClose: true }),
    () => ({
      kind: 'repeated Host',
      pieces: [`GET /v2/health/live HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n`],
      want: [400],
      says: 'exactly one Host header',
      waitClose: true,
    }),
    () => ({
      kind: 'two Content-Lengths',
      pieces: [`POST ${INFER} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}`],
      want: [400],
      says: 'at most one Content-Length',
      waitClose: true,
    }),
    () => ({
      kind: 'lower-case method',
      pieces: [`${pick(['get', 'Get', 'gET'])} /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n`],
      want: [400],
      says: 'methods are case-sensitive',
      waitClose: true,
    }),
    () => ({
      kind: 'bare LF in chunk framing',
      pieces: [`POST ${INFER} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\n{}\r\n0\r\n\r\n`],
      want: [400],
      says: 'must end with CRLF',
      waitClose: true,
    }),
    () => ({ kind: 'unknown path', pieces: [`GET /${letters(int(1, 10), 'abcdefgh/')} HTTP/1.1\r\nHost: x\r\n\r\n`], want: [404], says: 'Not Found' }),
  ];
  const c = pick(kinds)();
  // Every case that does not wait for the close ends with a good request on the same connection.
  if (!c.waitClose && !c.end && c.kind !== 'corrupted JSON body') {
    c.pieces.push(infer());
    c.want.push(200);
  } else if (c.kind === 'corrupted JSON body') c.pieces.push(infer());
  return c;
}

let server: ServerProcess;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server?.stop();
});

function check(c: FuzzCase, r: RawExchange, index: number): void {
  const where = `case ${index} (${c.kind}, seed ${SEED}): ${JSON.stringify(c.pieces.map(String).join('').slice(0, 300))} → ${JSON.stringify(r.answers.map((a) => [a.status, a.body.slice(0, 120)]))}`;
  assert.equal(r.timedOut, false, `no answer in time: ${where}`);
  assert.deepEqual(
    r.answers.map((a, i) => (c.want[i] === 0 && a.status >= 400 ? 0 : a.status)),
    c.want,
    where,
  );
  for (const a of r.answers) {
    if (a.status >= 400) {
      const msg = (JSON.parse(a.body) as { error: string }).error;
      assert.ok(typeof msg === 'string' && msg.length > 0, `error body: ${where}`);
    }
  }
  if (c.says !== undefined) {
    const last = r.answers.filter((a) => a.status >= 400).at(-1);
    assert.ok(last !== undefined && last.body.includes(c.says), `should say '${c.says}': ${where}`);
  }
  if (c.waitClose) assert.equal(r.closed, true, `connection should close: ${where}`);
}

test(`HTTP fuzz: ${CASES} seeded cases each get their status and message, and the server keeps serving`, { timeout: 180_000 }, async () => {
  // The seeded PRNG the fuzz kits share (mulberry32, grpc-fuzz-kit.ts).
  const rng = new Rng(SEED);
  const rand = (): number => rng.next();
  const cases = Array.from({ length: CASES }, () => makeCase(rand));
  const seen = new Map<string, number>();
  // A few connections at a time, as a client pool would.
  const WIDTH = 4;
  for (let i = 0; i < cases.length; i += WIDTH) {
    const batch = cases.slice(i, i + WIDTH);
    const results = await Promise.all(
      batch.map((c) => rawExchange(server.port, c.pieces, { answers: c.want.length, waitClose: c.waitClose, end: c.end, gapMs: c.gapMs, deadlineMs: 8000 })),
    );
    batch.forEach((c, j) => {
      check(c, results[j], i + j);
      seen.set(c.kind, (seen.get(c.kind) ?? 0) + 1);
    });
    if (i % 200 === 0) assert.equal((await inferSimple(server.url)).status, 200, `a good request after case ${i}`);
  }
  assert.equal((await inferSimple(server.url)).status, 200);
  // The seed reached every kind of case.
  assert.ok(seen.size >= 24, `kinds covered: ${[...seen.keys()].join(', ')}`);
});

test('a slow client that stops half-way through its head gets 408 and the connection closes', { timeout: 30_000 }, async () => {
  const r = await rawExchange(server.port, ['POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\n'], { answers: 1, waitClose: true, deadlineMs: 15_000 });
  assert.deepEqual(
    r.answers.map((a) => a.status),
    [408],
  );
  assert.match(r.answers[0].body, /request timed out: the client stopped sending the request before it was complete/);
  assert.ok(r.ms >= 9000, `408 only after the request timeout (${r.ms} ms)`);
});

test('a body larger than its declared length limit is refused with 400 without being buffered, and the connection closes', async () => {
  const r = await rawExchange(server.port, [`POST ${INFER} HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999999\r\n\r\n{"inputs":`], {
    answers: 1,
    waitClose: true,
  });
  assert.deepEqual(
    r.answers.map((a) => a.status),
    [400],
  );
  assert.match(
    r.answers[0].body,
    /request size of 999999999999 bytes exceeds the maximum allowed input size of \d+ bytes\. Use --http-max-input-size to increase the limit\./,
  );
  assert.equal((await inferSimple(server.url)).status, 200);
});
