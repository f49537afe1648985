import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bytesElementStarts } from '../../src/python-backend/request-wire';

function stream(elements: string[]): Uint8Array {
  return Buffer.concat(
    elements.flatMap((e) => {
      const b = Buffer.from(e);
      const len = Buffer.alloc(4);
      len.writeUInt32LE(b.length);
      return [len, b];
    }),
  );
}

// The host's element index of a BYTES tensor (ShmTensor.starts): the offset of each length prefix.
const CASES: { name: string; bytes: Uint8Array; starts: number[] | undefined }[] = [
  { name: 'no elements', bytes: new Uint8Array(0), starts: [] },
  { name: 'one empty element', bytes: stream(['']), starts: [0] },
  { name: 'three elements', bytes: stream(['ab', '', 'cde']), starts: [0, 6, 10] },
  { name: 'multi-byte UTF-8', bytes: stream(['é', 'x']), starts: [0, 6] },
  { name: 'a length prefix cut short', bytes: new Uint8Array([1, 0]), starts: undefined },
  { name: 'an element past the end', bytes: new Uint8Array([5, 0, 0, 0, 97]), starts: undefined },
  { name: 'a view inside a larger buffer', bytes: Buffer.concat([Buffer.from('zzzz'), stream(['q', 'rs'])]).subarray(4), starts: [0, 5] },
];

for (const c of CASES) {
  test(`bytesElementStarts: ${c.name}`, () => {
    const got = bytesElementStarts(c.bytes);
    assert.deepEqual(got === undefined ? undefined : [...got], c.starts);
  });
}
