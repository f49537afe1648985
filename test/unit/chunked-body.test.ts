import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChunkedBody } from '../../src/frontend/http/chunked-body';

/** Feed `pieces` one after the other (as socket reads), keeping unused bytes as a connection does. */
function run(pieces: string[], maxChunks = 100): { data: string; result: string; left: string } {
  let data = '';
  const d = new ChunkedBody(maxChunks, (b) => (data += b.toString('latin1')));
  let pending = Buffer.alloc(0);
  for (const p of pieces) {
    pending = Buffer.concat([pending, Buffer.from(p, 'latin1')]);
    const step = d.feed(pending, 0);
    if (step.kind === 'error') return { data, result: `error: ${step.message}`, left: '' };
    pending = pending.subarray(step.used);
    if (step.kind === 'done') return { data, result: 'done', left: pending.toString('latin1') };
  }
  return { data, result: 'more', left: pending.toString('latin1') };
}

const CASES: [string, string[], { data?: string; result: string; left?: string }][] = [
  ['one chunk', ['5\r\nhello\r\n0\r\n\r\n'], { data: 'hello', result: 'done', left: '' }],
  ['two chunks and what follows', ['3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nGET'], { data: 'abcde', result: 'done', left: 'GET' }],
  ['split at every byte', '4\r\nwxyz\r\n0\r\n\r\n'.split(''), { data: 'wxyz', result: 'done' }],
  ['extensions ignored', ['3;name=v\r\nabc\r\n0;x\r\n\r\n'], { data: 'abc', result: 'done' }],
  ['upper-case hex', ['A\r\n0123456789\r\n0\r\n\r\n'], { data: '0123456789', result: 'done' }],
  ['trailers skipped', ['1\r\na\r\n0\r\nX-T: 1\r\nY: 2\r\n\r\n'], { data: 'a', result: 'done' }],
  ['quoted extension', ['3;a="x;\\"y";b\r\nabc\r\n0\r\n\r\n'], { data: 'abc', result: 'done' }],
  ['whitespace around ; and = (BWS: refused, as llhttp does)', ['3 ; a = b\r\nabc\r\n0\r\n\r\n'], { result: "error: invalid chunk extension in '3 ; a = b'" }],
  ['bare LF after the size', ['2\nab\r\n0\r\n\r\n'], { result: 'error: chunk size line ends with a bare LF: it must end with CRLF (RFC 9112 §7.1)' }],
  ['bare LF after the data', ['2\r\nab\n0\r\n\r\n'], { result: 'error: chunk data ends with a bare LF: it must end with CRLF (RFC 9112 §7.1)' }],
  ['bare LF in the trailers', ['0\r\nX: 1\n\r\n'], { result: 'error: trailer line ends with a bare LF: it must end with CRLF (RFC 9112 §7.1.2)' }],
  [
    'bare CR in an extension',
    ['2;a\rb\r\nab\r\n0\r\n\r\n'],
    { result: "error: invalid chunk extension in '2;a\\x0db': expected ';name' or ';name=value' after the size (RFC 9112 §7.1.1)" },
  ],
  ['NUL in an extension', ['2;a=\x00\r\nab\r\n0\r\n\r\n'], { result: "error: invalid chunk extension in '2;a=\\x00'" }],
  ['an extension without a name', ['2;\r\nab\r\n0\r\n\r\n'], { result: "error: invalid chunk extension in '2;'" }],
  ['an extension with an empty value', ['2;a=\r\nab\r\n0\r\n\r\n'], { result: "error: invalid chunk extension in '2;a='" }],
  ['a space before the size', [' 2\r\nab\r\n0\r\n\r\n'], { result: "error: invalid chunk size ' 2': expected hexadecimal digits" }],
  ['a space after the size (not before a ;)', ['2 \r\nab\r\n0\r\n\r\n'], { result: "error: invalid chunk extension in '2 '" }],
  [
    'a malformed trailer field',
    ['0\r\nno colon\r\n\r\n'],
    { result: "error: malformed trailer field 'no colon': expected 'Name: value' without control characters" },
  ],
  ['not finished', ['5\r\nhel'], { data: 'hel', result: 'more' }],
  ['bad size', ['zz\r\nab\r\n0\r\n\r\n'], { result: "error: invalid chunk size 'zz': expected hexadecimal digits" }],
  ['empty size', ['\r\nab\r\n'], { result: "error: invalid chunk size '': expected hexadecimal digits" }],
  ['huge size', ['ffffffffffffffffff\r\n'], { result: "error: chunk size 'ffffffffffffffffff' is too large" }],
  ['data longer than declared', ['2\r\nabc\r\n0\r\n\r\n'], { result: 'error: chunk data longer than its declared size (missing CRLF after chunk data)' }],
  ['endless size line', ['1'.repeat(2000)], { result: 'error: chunk size line longer than 1024 bytes' }],
  [
    'too many chunks',
    ['1\r\na\r\n'.repeat(4) + '0\r\n\r\n'],
    { result: 'error: too many chunks: more than 3 in one request body; send larger chunks or a Content-Length' },
  ],
  ['endless trailers', ['0\r\n' + 'X: y\r\n'.repeat(3000)], { result: 'error: trailer section larger than 16384 bytes' }],
];

for (const [name, pieces, want] of CASES) {
  test(`chunked body: ${name}`, () => {
    const r = run(pieces, name === 'too many chunks' ? 3 : 100);
    assert.ok(
      r.result === want.result || (want.result.startsWith('error: ') && r.result.startsWith(want.result)),
      `${r.result} should start with ${want.result}`,
    );
    if (want.data !== undefined) assert.equal(r.data, want.data);
    if (want.left !== undefined) assert.equal(r.left, want.left);
  });
}
