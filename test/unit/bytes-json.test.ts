/**
 * BYTES tensors to and from JSON without an object per element, against the
 * plain way of doing the same (table-driven):
 *   - request `data` strings → serialized BYTES (json-bytes-data.ts) equals
 *     Buffer.from of each string with its 4-byte length, and counts the
 *     whole byte size past the limit without keeping the bytes;
 *   - serialized BYTES → response `data` text (tensor-json.ts) equals
 *     JSON.stringify of each element's Buffer.toString('utf8'), for every
 *     byte value, invalid and cut-off UTF-8, and past a chunk boundary.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serializeJsonStrings } from '../../src/frontend/http/json-bytes-data';
import { tensorDataJson } from '../../src/frontend/http/tensor-json';

function serialized(elements: readonly Buffer[]): Buffer {
  return Buffer.concat(
    elements.flatMap((e) => {
      const len = Buffer.alloc(4);
      len.writeUInt32LE(e.length);
      return [len, e];
    }),
  );
}

/** What the response text was before: one string per element, JSON.stringify'd. */
function plainJson(elements: readonly Buffer[]): string {
  return JSON.stringify(elements.map((e) => e.toString('utf8')));
}

const every = Buffer.from(Array.from({ length: 256 }, (_, b) => b));

const stringCases: { name: string; data: unknown[]; flat: string[] }[] = [
  { name: 'empty and short ASCII', data: ['', 'a', 'hello'], flat: ['', 'a', 'hello'] },
  { name: 'nested arrays, in order', data: [['x', ['y']], [], ['z']], flat: ['x', 'y', 'z'] },
  { name: 'multi-byte UTF-8 and emoji (surrogate pairs)', data: ['é', 'données', '🚀x', '識別子'], flat: ['é', 'données', '🚀x', '識別子'] },
  { name: 'a lone surrogate (written as U+FFFD, as Buffer.from does)', data: ['a\ud800b'], flat: ['a\ud800b'] },
  { name: 'ASCII longer than the char-by-char path', data: ['q'.repeat(65), 'r'.repeat(1000)], flat: ['q'.repeat(65), 'r'.repeat(1000)] },
  { name: 'NUL and control chars', data: ['\u0000', '\n\t"\\'], flat: ['\u0000', '\n\t"\\'] },
  {
    name: 'many elements: the buffer grows past its first guess',
    data: Array.from({ length: 20_000 }, (_, i) => (i % 3 === 0 ? `é${i}` : String(i).repeat(i % 9))),
    flat: Array.from({ length: 20_000 }, (_, i) => (i % 3 === 0 ? `é${i}` : String(i).repeat(i % 9))),
  },
];

for (const c of stringCases) {
  test(`JSON strings → serialized BYTES: ${c.name}`, () => {
    const expected = serialized(c.flat.map((s) => Buffer.from(s, 'utf8')));
    // count 1: the first buffer is as small as it gets, so every case grows it.
    for (const count of [1, c.flat.length]) {
      const r = serializeJsonStrings(c.data, count, 1 << 30);
      assert.equal(r.byteSize, expected.length);
      assert.ok(Buffer.from(r.data).equals(expected), `count ${count}`);
    }
  });
}

test('JSON strings → serialized BYTES: past the limit the size is still counted in full, the bytes dropped', () => {
  const data = Array.from({ length: 1000 }, (_, i) => 'é'.repeat(i % 5));
  const whole = serialized(data.map((s) => Buffer.from(s))).length;
  const r = serializeJsonStrings(data, data.length, 100);
  assert.equal(r.byteSize, whole);
  assert.equal(r.data.byteLength, 0);
});

test('JSON strings → serialized BYTES: a leaf that is not a string gets the frontend error', () => {
  assert.throws(() => serializeJsonStrings(['a', ['b', 3]], 3, 1 << 20), {
    message: "Unable to parse 'data': attempt to access JSON non-string as string",
  });
});

const outputCases: { name: string; elements: Buffer[] }[] = [
  { name: 'empty elements', elements: [Buffer.alloc(0), Buffer.alloc(0)] },
  { name: 'every byte value, one element each', elements: [...every].map((b) => Buffer.from([b])) },
  { name: 'every byte value in one element', elements: [every] },
  { name: 'valid UTF-8 (2, 3, 4 bytes) and escapes', elements: ['é', '€', '🚀', 'a"b\\c\u007f\u2028'].map((s) => Buffer.from(s)) },
  {
    name: 'invalid UTF-8: stray continuation, cut-off sequences at the end of an element, encoded surrogates, overlong',
    elements: [
      [0x80],
      [0xe2, 0x82],
      [0xf0, 0x9f, 0x9a],
      [0xc3],
      [0xed, 0xa0, 0x80],
      [0xc0, 0xaf],
      [0xe2, 0x0a, 0x41],
      [0xff, 0xfe],
      [0xf4, 0x90, 0x80, 0x80],
    ].map((b) => Buffer.from(b)),
  },
  {
    name: 'past one chunk (65,536 elements), pseudo-random bytes',
    elements: Array.from({ length: 70_000 }, (_, i) => Buffer.from(Array.from({ length: i % 7 }, (_, k) => (i * 131 + k * 29) & 0xff))),
  },
];

for (const c of outputCases) {
  test(`serialized BYTES → JSON data text: ${c.name}`, () => {
    const data = serialized(c.elements);
    const text = tensorDataJson('OUTPUT0', 'BYTES', data, c.elements.length);
    assert.equal(text, plainJson(c.elements));
  });
}

test('serialized BYTES → JSON data text: a view at an offset into a larger buffer (the arena)', () => {
  const elements = ['a', 'é', ''].map((s) => Buffer.from(s));
  const inner = serialized(elements);
  const outer = Buffer.concat([Buffer.from([9, 9, 9]), inner, Buffer.from([7])]);
  assert.equal(tensorDataJson('O', 'BYTES', outer.subarray(3, 3 + inner.length), 3), plainJson(elements));
});

test('serialized BYTES → JSON data text: the budget refuses a text that would pass it', () => {
  const elements = Array.from({ length: 10 }, () => Buffer.from('"'.repeat(10)));
  const text = plainJson(elements);
  assert.equal(tensorDataJson('O', 'BYTES', serialized(elements), 10, text.length), text);
  assert.equal(tensorDataJson('O', 'BYTES', serialized(elements), 10, text.length - 1), undefined);
});
