/**
 * The unary families of the gRPC fuzz suite (grpc-fuzz.test.ts): one
 * ModelInfer call each, over the raw HTTP/2 client, whose bytes are broken
 * in one known way, so that each case knows the status and the message the
 * server must answer with.
 */
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import type { FuzzCase, Rng } from './grpc-fuzz-kit';
import {
  INPUT_FIELDS,
  TOP_FIELDS,
  WT,
  decodeInferResponse,
  escapeRe,
  expectStatus,
  expectedOutputs,
  layout,
  lenField,
  parseErrorParts,
  requestBytes,
  simpleOutputs,
  simpleRequest,
  tag,
  undecompressableText,
  varint,
} from './grpc-fuzz-kit';
import { grpcFrame } from './grpc-raw-client';

const INVALID = grpc.status.INVALID_ARGUMENT;

/** model_name 'simple' and id, in random order: what the server reads before the broken part. */
function head(rng: Rng, id: string): { bytes: Buffer; id: string; model: string } {
  const withModel = rng.chance(0.7);
  const withId = rng.chance(0.7);
  const parts = [withModel ? lenField(1, 'simple') : Buffer.alloc(0), withId ? lenField(3, id) : Buffer.alloc(0)];
  if (rng.chance(0.5)) parts.reverse();
  return { bytes: Buffer.concat(parts), id: withId ? id : '', model: withModel ? 'simple' : '' };
}

/** A value of wire type `wt` (varint, fixed64 or fixed32). */
function valueOf(rng: Rng, wt: number): Buffer {
  if (wt === WT.VARINT) return varint(rng.int(0, 2 ** 31));
  return rng.bytes(wt === WT.FIXED64 ? 8 : 4);
}

function parseFailure(bytes: Buffer, h: { id: string; model: string }, reason: string | RegExp): FuzzCase['run'] {
  const { head: start, tail } = parseErrorParts(bytes.length, h.id, h.model);
  const expected = typeof reason === 'string' ? `${start}${reason}${tail}` : new RegExp(`^${escapeRe(start)}${reason.source}${escapeRe(tail)}$`);
  return async ({ raw }) => expectStatus(await raw.call('ModelInfer', grpcFrame(bytes)), INVALID, expected);
}

export const unaryFamilies: Record<string, { weight: number; make(rng: Rng, n: number): FuzzCase }> = {
  // A valid request cut inside one of its fields: the fields before the cut name the request.
  protobufCut: {
    weight: 14,
    make(rng, n) {
      const req = simpleRequest(rng, `cut-${n}`);
      const { bytes, spans } = layout(req.fields);
      const span = rng.pick(spans);
      const at = span.start + 1 + rng.int(0, span.end - span.start - 2);
      const known = (name: string): boolean => spans.some((s) => s.name === name && s.end <= at);
      return {
        family: 'protobufCut',
        detail: `cut at byte ${at} of ${bytes.length}, inside ${span.name}`,
        run: parseFailure(
          bytes.subarray(0, at),
          { id: known('id') ? req.id : '', model: known('model_name') ? 'simple' : '' },
          /protobuf message truncated[^]*/,
        ),
      };
    },
  },
  // A known field (top level or in an input) sent with a wire type it cannot have.
  wrongWireType: {
    weight: 12,
    make(rng, n) {
      const h = head(rng, `wt-${n}`);
      const nested = rng.chance(0.4);
      const field = nested ? rng.int(1, 5) : rng.int(1, 7);
      const wt = nested && field === 3 ? rng.pick([WT.FIXED64, WT.FIXED32]) : rng.pick([WT.VARINT, WT.FIXED64, WT.FIXED32]);
      const bad = Buffer.concat([tag(field, wt), valueOf(rng, wt)]);
      const bytes = Buffer.concat([h.bytes, nested ? lenField(5, bad) : bad]);
      const name = nested ? INPUT_FIELDS[field] : TOP_FIELDS[field];
      return {
        family: 'wrongWireType',
        detail: `${nested ? 'inputs.' : ''}${name} with wire type ${wt}`,
        run: parseFailure(bytes, h, `protobuf field '${name}' has unexpected wire type ${wt}`),
      };
    },
  },
  // A length-delimited field that declares far more bytes than the message has.
  hugeFieldLength: {
    weight: 12,
    make(rng, n) {
      const h = head(rng, `len-${n}`);
      const field = rng.chance(0.6) ? rng.int(1, 7) : rng.int(8, 2000);
      const left = rng.int(0, 64);
      const declared = Math.min(2 ** 32 - 1, left + 1 + Math.floor(2 ** (rng.next() * 32)));
      const prefix = Buffer.concat([h.bytes, tag(field, WT.LEN), varint(declared)]);
      return {
        family: 'hugeFieldLength',
        detail: `field ${field} declares ${declared} bytes, ${left} follow`,
        run: parseFailure(
          Buffer.concat([prefix, rng.bytes(left)]),
          h,
          `protobuf message truncated: a length-delimited field at byte ${prefix.length} declares ${declared} bytes, ${left} remain`,
        ),
      };
    },
  },
  // A varint (a tag, or an unknown field's value) of more than 10 bytes.
  overlongVarint: {
    weight: 6,
    make(rng, n) {
      const h = head(rng, `varint-${n}`);
      const inTag = rng.chance(0.5);
      const before = inTag ? h.bytes : Buffer.concat([h.bytes, tag(rng.int(8, 2000), WT.VARINT)]);
      const bytes = Buffer.concat([before, Buffer.alloc(rng.int(10, 20), 0xff), Buffer.from([0x01])]);
      return {
        family: 'overlongVarint',
        detail: inTag ? 'in a tag' : 'in a value',
        run: parseFailure(bytes, h, `protobuf varint at byte ${before.length} is longer than 10 bytes`),
      };
    },
  },
  // An unknown field with wire type 4 (a stray end-group), 6 or 7 (no such types).
  invalidWireType: {
    weight: 6,
    make(rng, n) {
      const h = head(rng, `inv-${n}`);
      const wt = rng.pick([4, 6, 7]);
      const before = Buffer.concat([h.bytes, tag(rng.int(8, 2000), wt)]);
      return {
        family: 'invalidWireType',
        detail: `wire type ${wt}`,
        run: parseFailure(Buffer.concat([before, rng.bytes(rng.int(0, 16))]), h, `invalid protobuf wire type ${wt} at byte ${before.length}`),
      };
    },
  },
  // Groups nested past protobuf's recursion limit.
  deepGroups: {
    weight: 2,
    make(rng, n) {
      const h = head(rng, `group-${n}`);
      const depth = rng.int(101, 5000);
      const group = tag(9, WT.START_GROUP);
      return {
        family: 'deepGroups',
        detail: `${depth} nested groups`,
        run: parseFailure(
          Buffer.concat([h.bytes, Buffer.concat(Array(depth).fill(group))]),
          h,
          `protobuf groups nested deeper than 100 at byte ${h.bytes.length + 101 * group.length}`,
        ),
      };
    },
  },
  // The gRPC prefix or body cut off by the client's half-close.
  frameCut: {
    weight: 10,
    make(rng, n) {
      const body = requestBytes(simpleRequest(rng, `frame-${n}`));
      const kind = rng.pick(['prefix', 'body', 'declaredMore'] as const);
      const tail = '. Send each message whole: the 5-byte prefix (compressed flag, then the length as 4 bytes big-endian) and then exactly that many bytes';
      let bytes: Buffer;
      let expected: string;
      if (kind === 'prefix') {
        const k = rng.int(1, 4);
        bytes = grpcFrame(body).subarray(0, k);
        expected = `the request stream ended inside the 5-byte gRPC prefix of a ModelInferRequest message (${k} of its bytes came)${tail}`;
      } else {
        const came = kind === 'body' ? rng.int(0, body.length - 1) : body.length;
        const declared = kind === 'body' ? body.length : body.length + 1 + rng.int(0, 2 ** 31 - 2 - body.length);
        bytes = grpcFrame(body.subarray(0, came), declared);
        expected = `the request stream ended inside a ModelInferRequest message: its gRPC prefix declares ${declared} bytes, ${came} came${tail}`;
      }
      return {
        family: 'frameCut',
        detail: `${kind}: ${bytes.length} bytes sent`,
        run: async ({ raw }) => expectStatus(await raw.call('ModelInfer', bytes), INVALID, expected),
      };
    },
  },
  // A gRPC prefix declaring more than the server's receive limit (INT32_MAX, as Triton).
  frameOverLimit: {
    weight: 4,
    make(rng) {
      const declared = 2 ** 31 + rng.int(0, 2 ** 31 - 1);
      return {
        family: 'frameOverLimit',
        detail: `declares ${declared} bytes`,
        run: async ({ raw }) =>
          expectStatus(
            await raw.call('ModelInfer', grpcFrame(rng.bytes(rng.int(0, 32)), declared)),
            grpc.status.RESOURCE_EXHAUSTED,
            `Received message larger than max (${declared} vs 2147483647)`,
          ),
      };
    },
  },
  // A unary call with no message, or with two.
  messageCount: {
    weight: 4,
    make(rng, n) {
      const two = rng.chance(0.5);
      const body = two ? [grpcFrame(requestBytes(simpleRequest(rng, `a-${n}`))), grpcFrame(requestBytes(simpleRequest(rng, `b-${n}`)))] : [];
      const expected = two
        ? 'ModelInfer received a second request message: a unary call carries exactly one ModelInferRequest message'
        : 'ModelInfer received no request message: a unary call carries exactly one ModelInferRequest message';
      return {
        family: 'messageCount',
        detail: two ? 'two messages' : 'no message',
        run: async ({ raw }) => expectStatus(await raw.call('ModelInfer', body), INVALID, expected),
      };
    },
  },
  // Compressed requests: gzip answers; a corrupt gzip is refused INVALID_ARGUMENT, an unknown encoding by grpc-js.
  compression: {
    weight: 5,
    make(rng, n) {
      const req = simpleRequest(rng, `gz-${n}`);
      const kind = rng.pick(['gzip', 'corrupt', 'unknown'] as const);
      const gz = gzipSync(requestBytes(req));
      if (kind === 'corrupt') gz[rng.int(10, gz.length - 9)] ^= 0xff;
      const headers = { 'grpc-encoding': kind === 'unknown' ? 'br' : 'gzip' };
      return {
        family: 'compression',
        detail: kind,
        run: async ({ raw }) => {
          const res = await raw.call('ModelInfer', grpcFrame(gz, gz.length, 1), { headers });
          if (kind === 'unknown') return expectStatus(res, grpc.status.UNIMPLEMENTED, 'Received message compressed with unsupported encoding "br"');
          // A flipped byte breaks the deflate stream or its CRC, either way a failed decompression.
          if (kind === 'corrupt') return expectStatus(res, INVALID, undecompressableText(gz.length));
          expectStatus(res, grpc.status.OK, 'OK');
          assert.deepEqual(simpleOutputs(decodeInferResponse(res.messages[0])), expectedOutputs(req));
        },
      };
    },
  },
};
