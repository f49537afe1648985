/**
 * BYTES elements ↔ JS strings (request/tensor-view.ts), table-driven against
 * Buffer's own UTF-8: decodeBytesElements gives each element's
 * Buffer.toString('utf8') (ASCII ones cut from one latin1 string, the rest
 * decoded one by one) and names a cut-off length or element; utf8Length,
 * writeUtf8 and encodeBytesTensor give Buffer.from's bytes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeBytesElements, encodeBytesTensor, utf8Length, writeUtf8 } from '../../src/request/tensor-view';

function serialized(elements: readonly Buffer[]): Buffer {
  return Buffer.concat(
    elements.flatMap((e) => {
      const len = Buffer.alloc(4);
      len.writeUInt32LE(e.length);
      return [len, e];
    }),
  );
}

const invalid = (what: string): Error => new Error(what);

const decodeCases: { name: string; elements: Buffer[] }[] = [
  { name: 'none', elements: [] },
  { name: 'empty elements', elements: [Buffer.alloc(0), Buffer.alloc(0)] },
  { name: 'ASCII, short and long', elements: ['a', 'hello', 'z'.repeat(300)].map((s) => Buffer.from(s)) },
  { name: 'UTF-8 between ASCII', elements: ['ab', 'é', 'cd', '🚀識', 'ef'].map((s) => Buffer.from(s)) },
  { name: 'length prefixes of 128..255 bytes (their bytes are not ASCII)', elements: [Buffer.alloc(200, 0x61), Buffer.alloc(0x80, 0x62), Buffer.from('c')] },
  { name: 'bytes that are no UTF-8', elements: [[0xff], [0xe2, 0x82], [0x61, 0x80, 0x62], [0xed, 0xa0, 0x80]].map((b) => Buffer.from(b)) },
  { name: 'NUL and control bytes (ASCII)', elements: [Buffer.from([0, 1, 0x1f, 0x7f])] },
];

for (const c of decodeCases) {
  test(`decodeBytesElements: ${c.name}`, () => {
    const data = serialized(c.elements);
    // Also as a view at an offset into a larger shared buffer (the arena).
    const shared = new Uint8Array(new SharedArrayBuffer(data.length + 5), 3, data.length);
    shared.set(data);
    for (const bytes of [data, shared]) {
      const out: string[] = ['before'];
      decodeBytesElements(bytes, out, invalid);
      assert.deepEqual(out, ['before', ...c.elements.map((e) => e.toString('utf8'))]);
    }
  });
}

test('decodeBytesElements: a cut-off length and an element past the end are named', () => {
  assert.throws(() => decodeBytesElements(Buffer.concat([serialized([Buffer.from('a')]), Buffer.from([1, 0])]), [], invalid), { message: 'length' });
  assert.throws(() => decodeBytesElements(Buffer.from([3, 0, 0, 0, 0x61]), [], invalid), { message: 'element' });
});

const strings = ['', 'a', 'ascii '.repeat(20), 'é', 'x'.repeat(63) + 'é', '🚀', 'a\ud800b', '\u0000\u007f', '識別子'.repeat(30)];

test("utf8Length and writeUtf8 give Buffer.from's bytes for ASCII, long, multi-byte and lone-surrogate strings", () => {
  for (const s of strings) {
    const expected = Buffer.from(s, 'utf8');
    assert.equal(utf8Length(s), expected.length, JSON.stringify(s));
    const buf = Buffer.alloc(expected.length + 4, 0xaa);
    assert.equal(writeUtf8(buf, 2, s), expected.length);
    assert.ok(buf.subarray(2, 2 + expected.length).equals(expected), JSON.stringify(s));
    assert.equal(buf[expected.length + 2], 0xaa, 'nothing written past the string');
  }
});

test('encodeBytesTensor serializes each string with its 4-byte length', () => {
  assert.ok(encodeBytesTensor(strings).equals(serialized(strings.map((s) => Buffer.from(s, 'utf8')))));
});
