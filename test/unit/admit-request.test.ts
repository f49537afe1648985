/**
 * admitAll (request/admit-request.ts): several requests of one client
 * request admitted together, in order, or none of them: when the arena
 * cannot take one, what the earlier ones took is freed and the arena's
 * error comes out.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Arena } from '../../src/dataplane/arena';
import { admitAll, releaseInputs } from '../../src/request/admit-request';
import type { DecodedRequest } from '../../src/request/decoded-request';

const KB = 1024;

function decoded(id: string, bytes: number): { decoded: DecodedRequest; batchSize: number } {
  return {
    decoded: {
      id,
      inputs: [{ name: 'in', datatype: 'UINT8', shape: [bytes], data: new Uint8Array(bytes).fill(7), parameters: {} }],
      outputs: null,
      parameters: {},
      binaryDataOutput: false,
    },
    batchSize: bytes,
  };
}

const TARGET = { model: 'm', version: 1, latest: true, arrivalNs: 5 };

test('admitAll: every request admitted, in order, each with its own batch size and bytes', () => {
  const arena = Arena.create({ initialBytes: 64 * KB, maxBytes: 64 * KB });
  const requests = admitAll(arena, [decoded('a', 100), decoded('b', 200)], TARGET);
  assert.deepEqual(
    requests.map((r) => [r.id, r.model, r.version, r.latest, r.batchSize, r.arrivalNs]),
    [
      ['a', 'm', 1, true, 100, 5],
      ['b', 'm', 1, true, 200, 5],
    ],
  );
  assert.deepEqual([...arena.bytes(requests[1]!.inputs[0]!.offset, 3)], [7, 7, 7]);
  for (const r of requests) releaseInputs(arena, r.inputs);
  assert.equal(arena.usedBytes(), 0);
});

const ROLLBACK: [string, number[]][] = [
  ['the first does not fit', [200 * KB, 100]],
  ['the second does not fit', [100, 200 * KB]],
  ['the last of three does not fit', [100, 4 * KB, 200 * KB]],
];
for (const [name, sizes] of ROLLBACK) {
  test(`admitAll: ${name}: none admitted, the arena as it was, the arena's error rethrown`, () => {
    const arena = Arena.create({ initialBytes: 64 * KB, maxBytes: 64 * KB });
    assert.throws(
      () =>
        admitAll(
          arena,
          sizes.map((s, i) => decoded(String(i), s)),
          TARGET,
        ),
      /arena/i,
    );
    assert.equal(arena.usedBytes(), 0);
  });
}
