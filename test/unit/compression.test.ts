import { test } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { ServerError } from '../../src/core/errors';
import { compressResponse, decompressRequest, negotiateEncoding } from '../../src/frontend/http/compression';

const body = Buffer.from('{"inputs":[]}'.repeat(50));

test('request bodies: gzip and deflate, either container, identity passes through', () => {
  const rows: [string | undefined, Buffer][] = [
    ['gzip', zlib.gzipSync(body)],
    ['deflate', zlib.deflateSync(body)],
    ['deflate', zlib.gzipSync(body)], // Triton's inflater detects the header, whatever the name
    ['gzip', zlib.deflateSync(body)],
  ];
  for (const [encoding, compressed] of rows) assert.deepEqual(decompressRequest(compressed, encoding, 1 << 20), body);
  for (const encoding of [undefined, '', 'identity']) assert.equal(decompressRequest(body, encoding, 1 << 20), body);
});

const errorRows: { name: string; encoding: string; body: Buffer; max?: number; code: string; message: string }[] = [
  { name: 'unknown encoding', encoding: 'br', body, code: 'UNSUPPORTED', message: 'Unsupported compression type' },
  { name: 'values are case-sensitive', encoding: 'GZIP', body, code: 'UNSUPPORTED', message: 'Unsupported compression type' },
  { name: 'empty compressed body', encoding: 'gzip', body: Buffer.alloc(0), code: 'INVALID_ARG', message: 'nothing to be decompressed' },
  {
    name: 'decompressed size above the limit',
    encoding: 'gzip',
    body: zlib.gzipSync(body),
    max: 100,
    code: 'INVALID_ARG',
    message: 'decompressed request body size exceeds the maximum allowed value of 100 bytes. Use --http-max-input-size to increase the limit.',
  },
];

for (const row of errorRows) {
  test(`decompressRequest rejects: ${row.name}`, () => {
    assert.throws(
      () => decompressRequest(row.body, row.encoding, row.max ?? 1 << 20),
      (e: unknown) => e instanceof ServerError && e.code === row.code && e.message === row.message,
    );
  });
}

test('the limit is on the decompressed size: exactly the limit inflates, one byte more is refused, whatever the compressed size', () => {
  const exact = Buffer.alloc(4096, 7);
  const small = zlib.gzipSync(exact);
  assert.ok(small.length < 100, 'the compressed body is far below the limit');
  assert.deepEqual(decompressRequest(small, 'gzip', exact.length), exact);
  assert.throws(() => decompressRequest(small, 'gzip', exact.length - 1), { code: 'INVALID_ARG', message: /exceeds the maximum allowed value of 4095 bytes/ });
  // A body that inflates a thousandfold and more stops at the limit.
  const bomb = zlib.deflateSync(Buffer.alloc(64 << 20));
  assert.throws(() => decompressRequest(bomb, 'deflate', 1 << 20), { code: 'INVALID_ARG', message: /exceeds the maximum allowed value of 1048576 bytes/ });
});

test("corrupt compressed body is a 400 with zlib's reason", () => {
  assert.throws(
    () => decompressRequest(Buffer.from('not compressed at all'), 'gzip', 1 << 20),
    (e: unknown) => e instanceof ServerError && e.code === 'INVALID_ARG' && e.message.startsWith('failed to decompress the request body: '),
  );
});

const negotiation: [string | undefined, string][] = [
  [undefined, 'identity'],
  ['', 'identity'],
  ['gzip', 'gzip'],
  ['deflate', 'deflate'],
  ['gzip, deflate', 'gzip'], // tie keeps the earlier entry
  ['deflate, gzip', 'deflate'],
  ['gzip;q=0.5, deflate', 'deflate'],
  ['gzip;q=0.5, deflate;q=0.8, identity;q=0.9', 'identity'],
  ['br, gzip;q=0.1', 'gzip'],
  ['gzip;q=0', 'identity'], // weight 0 never wins
  ['GZIP', 'identity'], // exact names only
  ['gzip ;q=1', 'identity'], // a space before ;q= is part of the name, as in Triton
  ['   gzip', 'gzip'], // leading spaces skipped
  ['gzip;q=abc, deflate;q=0.2', 'deflate'], // unparsable weight: entry skipped
  ['*', 'identity'],
];

for (const [header, expected] of negotiation) {
  test(`negotiateEncoding(${JSON.stringify(header)}) = ${expected}`, () => {
    assert.equal(negotiateEncoding(header), expected);
  });
}

test('compressResponse: gzip container for gzip, zlib container for deflate', () => {
  const gz = compressResponse(body, 'gzip')!;
  assert.deepEqual([gz[0], gz[1]], [0x1f, 0x8b]);
  assert.deepEqual(zlib.gunzipSync(gz), body);
  const df = compressResponse(body, 'deflate')!;
  assert.equal(df[0] & 0x0f, 8); // zlib header: CM = deflate
  assert.deepEqual(zlib.inflateSync(df), body);
});
