/**
 * The stub's BYTES codec (src/python-backend/stub/_nt_tensor.py), run in real
 * Python: each case serializes a numpy array to Triton's length-prefixed
 * stream and must give the expected bytes; each stream deserializes back to
 * the same elements (with and without the host's element index), or to the
 * stub's error text for a malformed stream.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const STUB = path.resolve(__dirname, '../../../src/python-backend/stub');

const SCRIPT = String.raw`
import json, struct, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import _nt_tensor as T

def stream(items):
    return b"".join(struct.pack("<I", len(x)) + x for x in items)

cases = {
    "empty": (np.array([], dtype=object), []),
    "bytes": (np.array([b"ab", b"", b"c"], dtype=object), [b"ab", b"", b"c"]),
    "trailing NULs kept": (np.array([b"a\x00\x00", b"\x00"], dtype=object), [b"a\x00\x00", b"\x00"]),
    "str as UTF-8": (np.array(["h\u00e9llo", "x"], dtype=object), ["h\u00e9llo".encode(), b"x"]),
    "mixed objects": (np.array([b"a", "b", 7], dtype=object), [b"a", b"b", b"7"]),
    "S array": (np.array([b"ab", b"c"], dtype="S"), [b"ab", b"c"]),
    "U array": (np.array(["ab", "c"]), [b"ab", b"c"]),
    "2-D in C order": (np.array([[b"a", b"bc"], [b"def", b""]], dtype=object), [b"a", b"bc", b"def", b""]),
    "many": (np.array([b"x%d" % (i % 977) for i in range(5000)], dtype=object), [b"x%d" % (i % 977) for i in range(5000)]),
}
# The vectorised paths of _nt_bytes_codec.py (from 256 elements on): one length,
# mixed short lengths, long elements, every byte value, NULs at the ends.
def many(make, n):
    items = [make(i) for i in range(n)]
    arr = np.empty(n, dtype=object)
    arr[:] = items
    return (arr, items)
cases.update({
    "one length, 1 byte": many(lambda i: bytes([i % 256]), 3000),
    "one length, empty": many(lambda i: b"", 3000),
    "one length, 64 bytes with NULs": many(lambda i: bytes([0, i % 256]) * 31 + b"\x00\x00", 1000),
    "one length, 100 bytes (sliced)": many(lambda i: bytes([i % 256]) * 100, 1000),
    "mixed short lengths, trailing NULs": many(lambda i: bytes([(i * 7) % 256, 0]) * (i % 9) + b"\x00" * (i % 3), 5000),
    "mixed, one length past a gather block": many(lambda i: b"ab\x00" if i % 10 else b"long" * 40, 80000),
    "mixed with long elements (joined)": many(lambda i: bytes([i % 256]) * (i % 300), 2000),
    "an element past 65535 bytes among short ones": many(lambda i: b"\xff" * 70000 if i == 17 else b"k%d" % i, 600),
})
out = {}
for name, (arr, items) in cases.items():
    raw = T.serialize_bytes(arr)
    back = T.deserialize_bytes(raw)
    out[name] = [raw == stream(items), back.dtype == object, list(back) == items]
    starts, pos = [], 0
    for x in items:
        starts.append(pos)
        pos += 4 + len(x)
    indexed = T.deserialize_bytes(raw, memoryview(np.array(starts, dtype="<u4").tobytes()))
    out[name + " (host index)"] = [indexed.dtype == object, list(indexed) == items, all(type(x) is bytes for x in indexed)]
for name, raw in {"short length": b"\x01\x00", "past the end": b"\x05\x00\x00\x00ab"}.items():
    try:
        T.deserialize_bytes(raw)
        out[name] = "no error"
    except T.TritonModelException as e:
        out[name] = str(e)
print(json.dumps(out))
`;

test('the stub serializes and deserializes BYTES tensors as Triton streams them', () => {
  const got = JSON.parse(execFileSync('python3', ['-c', SCRIPT, STUB], { encoding: 'utf8' })) as Record<string, unknown>;
  const names = [
    'empty',
    'bytes',
    'trailing NULs kept',
    'str as UTF-8',
    'mixed objects',
    'S array',
    'U array',
    '2-D in C order',
    'many',
    'one length, 1 byte',
    'one length, empty',
    'one length, 64 bytes with NULs',
    'one length, 100 bytes (sliced)',
    'mixed short lengths, trailing NULs',
    'mixed, one length past a gather block',
    'mixed with long elements (joined)',
    'an element past 65535 bytes among short ones',
  ];
  for (const name of names) {
    assert.deepEqual(got[name], [true, true, true], `case '${name}': [stream as expected, object array, round trip]`);
    assert.deepEqual(
      got[`${name} (host index)`],
      [true, true, true],
      `case '${name}' with the host's element index: [object array, round trip, every element bytes]`,
    );
  }
  assert.equal(got['short length'], 'Invalid bytes tensor data: incomplete length field');
  assert.equal(got['past the end'], 'Invalid bytes tensor data: string extends beyond buffer');
});
