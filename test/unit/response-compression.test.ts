import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gunzipSync, inflateSync } from 'node:zlib';
import { compressFramed, responseEncoding, type CompressionLevel } from '../../src/frontend/grpc/response-compression';

/** gRPC core's choice: gzip then deflate among those accepted; low the first, medium the middle, high the last. */
const choices: [CompressionLevel, string | undefined, string | null][] = [
  ['none', 'identity,deflate,gzip', null],
  ['low', 'identity,deflate,gzip', 'gzip'],
  ['medium', 'identity,deflate,gzip', 'deflate'],
  ['high', 'identity,deflate,gzip', 'deflate'],
  ['low', 'identity,deflate', 'deflate'],
  ['high', 'gzip', 'gzip'],
  ['medium', ' GZIP , identity', 'gzip'],
  ['high', 'identity', null],
  ['low', 'br,zstd', null],
  ['high', undefined, null],
  ['low', '', null],
];

for (const [level, accept, expected] of choices) {
  test(`responseEncoding: level ${level}, grpc-accept-encoding ${JSON.stringify(accept)} → ${expected ?? 'identity'}`, () => {
    assert.equal(responseEncoding(level, accept), expected);
  });
}

function framed(body: Buffer): Buffer {
  const out = Buffer.alloc(5 + body.length);
  out.writeUInt32BE(body.length, 1);
  body.copy(out, 5);
  return out;
}

test('compressFramed: a compressible message gets the compressed flag, its compressed length, and decompresses back', () => {
  const body = Buffer.alloc(4096, 'abcd');
  for (const [encoding, undo] of [
    ['gzip', gunzipSync],
    ['deflate', inflateSync],
  ] as const) {
    const out = compressFramed(framed(body), encoding);
    assert.equal(out[0], 1, encoding);
    assert.equal(out.readUInt32BE(1), out.length - 5);
    assert.ok(out.length < body.length / 10, `${encoding}: ${out.length} bytes`);
    assert.deepEqual(undo(out.subarray(5)), body);
  }
});

test('compressFramed: a message that would not get smaller goes as it is (flag 0), as gRPC core sends it', () => {
  const tiny = framed(Buffer.from([7]));
  assert.equal(compressFramed(tiny, 'gzip'), tiny);
  assert.equal(compressFramed(framed(Buffer.alloc(0)), 'deflate')[0], 0);
});
