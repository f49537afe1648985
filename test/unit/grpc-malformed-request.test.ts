/**
 * The texts and decisions behind gRPC's answers to malformed requests, table-driven:
 * readModelInferRequest (a MalformedRequest naming what was read before the
 * bad byte, never a throw), the tolerant deserializer of the other rpcs,
 * call-guard.ts's cut-off check over grpc-js's decoder states, and its
 * metadata measure.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { cutOffMessage, metadataSize, metadataTooLargeText } from '../../src/frontend/grpc/call-guard';
import { MalformedRequest, readModelInferRequest, tolerantDeserializer } from '../../src/frontend/grpc/malformed-request';

const str = (field: number, s: string): Buffer => Buffer.concat([Buffer.from([(field << 3) | 2, s.length]), Buffer.from(s)]);
const TAIL = ". Send a ModelInferRequest serialized from Triton's grpc_service.proto";

const reads: { name: string; bytes: Buffer; message?: string; id?: string; model?: string }[] = [
  { name: 'a valid request decodes', bytes: Buffer.concat([str(1, 'simple'), str(3, 'r1')]) },
  { name: 'an empty message is a valid request', bytes: Buffer.alloc(0) },
  {
    name: 'nothing read before the bad byte',
    bytes: Buffer.from([0x0a, 0x7f, 0x41]),
    message: `unable to parse the ModelInferRequest message (3 bytes): protobuf message truncated: a length-delimited field at byte 2 declares 127 bytes, 1 remain${TAIL}`,
    id: '',
    model: '',
  },
  {
    name: 'model and id read first are named',
    bytes: Buffer.concat([str(3, 'r7'), str(1, 'simple'), Buffer.from([0x28, 0x01])]),
    message: `[request id: r7] unable to parse the ModelInferRequest message (14 bytes) for model 'simple': protobuf field 'inputs' has unexpected wire type 0${TAIL}`,
    id: 'r7',
    model: 'simple',
  },
  {
    name: 'a model read first, no id',
    bytes: Buffer.concat([str(1, 'm'), Buffer.from([0x7f])]),
    message: `unable to parse the ModelInferRequest message (4 bytes) for model 'm': invalid protobuf wire type 7 at byte 4${TAIL}`,
    id: '',
    model: 'm',
  },
];

for (const c of reads) {
  test(`readModelInferRequest: ${c.name}`, () => {
    const r = readModelInferRequest(c.bytes);
    if (c.message === undefined) {
      assert.ok(!(r instanceof MalformedRequest), 'decoded');
      return;
    }
    assert.ok(r instanceof MalformedRequest);
    assert.deepEqual(
      { message: r.message, id: r.id, model: r.model, byteLength: r.byteLength },
      { message: c.message, id: c.id, model: c.model, byteLength: c.bytes.length },
    );
    assert.equal(r.error().code, 'INVALID_ARG');
    assert.equal(r.error().message, c.message);
  });
}

test('tolerantDeserializer: a throwing deserializer gives a MalformedRequest naming the type; a working one its value', () => {
  const failing = tolerantDeserializer('ServerLiveRequest', () => {
    throw new Error('index out of range: 4 + 10 > 5');
  });
  const r = failing(Buffer.alloc(5));
  assert.ok(r instanceof MalformedRequest);
  assert.equal(
    r.message,
    "unable to parse the ServerLiveRequest message (5 bytes): index out of range: 4 + 10 > 5. Send a ServerLiveRequest serialized from Triton's grpc_service.proto",
  );
  assert.deepEqual(tolerantDeserializer('X', () => ({ ok: 1 }))(Buffer.alloc(0)), { ok: 1 });
});

const CUT_TAIL = '. Send each message whole: the 5-byte prefix (compressed flag, then the length as 4 bytes big-endian) and then exactly that many bytes';
const NO_DATA = 0;
const READING_SIZE = 1;
const READING_MESSAGE = 2;

const cuts: { name: string; decoder: Parameters<typeof cutOffMessage>[1]; message?: string }[] = [
  { name: 'between messages: not cut', decoder: { readState: NO_DATA, readSizeRemaining: 4, readMessageSize: 0, readMessageRemaining: 0 } },
  { name: "grpc-js's decoder not found: no verdict", decoder: undefined },
  {
    name: 'only the flag byte',
    decoder: { readState: READING_SIZE, readSizeRemaining: 4, readMessageSize: 0, readMessageRemaining: 0 },
    message: `the request stream ended inside the 5-byte gRPC prefix of a ModelInferRequest message (1 of its bytes came)${CUT_TAIL}`,
  },
  {
    name: 'flag and three length bytes',
    decoder: { readState: READING_SIZE, readSizeRemaining: 1, readMessageSize: 0, readMessageRemaining: 0 },
    message: `the request stream ended inside the 5-byte gRPC prefix of a ModelInferRequest message (4 of its bytes came)${CUT_TAIL}`,
  },
  {
    name: 'a body cut short',
    decoder: { readState: READING_MESSAGE, readSizeRemaining: 0, readMessageSize: 1 << 30, readMessageRemaining: (1 << 30) - 95 },
    message: `the request stream ended inside a ModelInferRequest message: its gRPC prefix declares 1073741824 bytes, 95 came${CUT_TAIL}`,
  },
];

for (const c of cuts) {
  test(`cutOffMessage: ${c.name}`, () => {
    assert.equal(cutOffMessage('ModelInferRequest', c.decoder)?.message, c.message);
  });
}

const sizes: { name: string; entries: [string, string | Buffer][]; bytes: number; largest: string }[] = [
  { name: 'no metadata', entries: [], bytes: 0, largest: '' },
  {
    name: 'name + value + 32 per entry',
    entries: [
      ['a', 'xyz'],
      ['bb', ''],
    ],
    bytes: 1 + 3 + 32 + 2 + 0 + 32,
    largest: 'a',
  },
  {
    name: 'repeated keys count each value',
    entries: [
      ['k', '12345'],
      ['k', '1'],
    ],
    bytes: 1 + 5 + 32 + (1 + 1 + 32),
    largest: 'k',
  },
  {
    name: 'binary values count as base64',
    entries: [
      ['d-bin', Buffer.alloc(4)],
      ['e', 'v'],
    ],
    bytes: 5 + 8 + 32 + (1 + 1 + 32),
    largest: 'd-bin',
  },
];

for (const c of sizes) {
  test(`metadataSize: ${c.name}`, () => {
    const md = new grpc.Metadata();
    for (const [k, v] of c.entries) md.add(k, v);
    const size = metadataSize(md);
    assert.equal(size.bytes, c.bytes);
    assert.equal(size.largest, c.largest);
  });
}

test('metadataTooLargeText names the size, the limit and the largest entry', () => {
  assert.equal(
    metadataTooLargeText({ bytes: 20035, largest: 'big', largestBytes: 20035 }, 16384),
    "received metadata size exceeds hard limit (20035 vs. 16384): request metadata (headers) is counted as name + value + 32 bytes per entry, and the largest entry is 'big' (20035 bytes); send less metadata",
  );
});
