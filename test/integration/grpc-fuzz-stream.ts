/**
 * The ModelStreamInfer families of the gRPC fuzz suite (grpc-fuzz.test.ts):
 * bursts of hundreds of requests on one stream, good ones mixed with
 * refused and unparseable ones, written in chunks that split messages
 * anywhere, in the default mode (each request answered in order, errors in
 * `error_message`) and in the `triton_grpc_error` mode (the first error
 * ends the stream with its status); and half-closed, half-open and reset
 * streams.
 */
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import type { FuzzCase, Rng, SimpleRequest, StreamResponseMsg } from './grpc-fuzz-kit';
import {
  WT,
  decodeStreamResponse,
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
import { gzipSync } from 'node:zlib';
import { grpcFrame } from './grpc-raw-client';
import { int32Bytes } from './grpc-test-client';

/** One request of a burst: its frame, the status it maps to (0 = answered), and what its response must say. */
interface Item {
  kind: string;
  id: string;
  frame: Buffer;
  code: number;
  error: string | RegExp;
  req?: SimpleRequest;
}

const CUT_TAIL = '. Send each message whole: the 5-byte prefix (compressed flag, then the length as 4 bytes big-endian) and then exactly that many bytes';

/** A message compressed with gzip (the stream's grpc-encoding), or a broken one. */
function gzipFrame(rng: Rng, body: Buffer, corrupt: boolean): Buffer {
  const gz = gzipSync(body);
  if (corrupt) gz[rng.int(10, gz.length - 9)] ^= 0xff;
  return grpcFrame(gz, gz.length, 1);
}

function item(rng: Rng, kind: string, id: string, gzip: boolean): Item {
  const it = plainItem(rng, kind, id);
  if (kind === 'corruptGzip') {
    const frame = gzipFrame(rng, it.frame.subarray(5), true);
    return { kind, id: '', frame, code: grpc.status.INVALID_ARGUMENT, error: undecompressableText(frame.length - 5) };
  }
  // On a gzip stream a message may still go uncompressed (flag 0).
  if (gzip && rng.chance(0.6)) it.frame = gzipFrame(rng, it.frame.subarray(5), false);
  return it;
}

function plainItem(rng: Rng, kind: string, id: string): Item {
  switch (kind) {
    case 'unknownModel': {
      const model = `nope_${rng.int(0, 99)}`;
      return {
        kind,
        id,
        frame: grpcFrame(requestBytes(simpleRequest(rng, id, { model }))),
        code: grpc.status.NOT_FOUND,
        error: `Request for unknown model: '${model}' is not found`,
      };
    }
    case 'badShape':
      return {
        kind,
        id,
        frame: grpcFrame(requestBytes(simpleRequest(rng, id, { shape: [1, 8] }))),
        code: grpc.status.INVALID_ARGUMENT,
        error: new RegExp(`^${escapeRe(`[request id: ${id}] unexpected shape for input 'INPUT0' for model 'simple'. Expected [-1,16], got [1,8].`)}`),
      };
    case 'cut': {
      // id and model first, so the error names them; the cut falls in a later field.
      const req = simpleRequest(rng, id);
      const fields = [
        { name: 'id', bytes: lenField(3, id) },
        { name: 'model_name', bytes: lenField(1, 'simple') },
        ...req.fields.filter((f) => f.name !== 'id' && f.name !== 'model_name'),
      ];
      const { bytes, spans } = layout(fields);
      const span = rng.pick(spans.slice(2));
      const at = span.start + 1 + rng.int(0, span.end - span.start - 2);
      const { head, tail } = parseErrorParts(at, id, 'simple');
      return {
        kind,
        id,
        frame: grpcFrame(bytes.subarray(0, at)),
        code: grpc.status.INVALID_ARGUMENT,
        error: new RegExp(`^${escapeRe(head)}protobuf message truncated[^]*${escapeRe(tail)}$`),
      };
    }
    case 'wireType': {
      const field = rng.int(4, 7);
      const bytes = Buffer.concat([lenField(3, id), lenField(1, 'simple'), tag(field, WT.VARINT), varint(rng.int(0, 1000))]);
      const { head, tail } = parseErrorParts(bytes.length, id, 'simple');
      const name = ['parameters', 'inputs', 'outputs', 'raw_input_contents'][field - 4];
      return {
        kind,
        id,
        frame: grpcFrame(bytes),
        code: grpc.status.INVALID_ARGUMENT,
        error: `${head}protobuf field '${name}' has unexpected wire type 0${tail}`,
      };
    }
    default: {
      const req = simpleRequest(rng, id);
      return { kind: 'good', id, frame: grpcFrame(requestBytes(req)), code: grpc.status.OK, error: '', req };
    }
  }
}

/** The stream ends (half-close) inside a last message. */
function cutAtEnd(rng: Rng, id: string): Item {
  const body = requestBytes(simpleRequest(rng, id));
  const came = rng.int(0, body.length - 1);
  return {
    kind: 'cutAtEnd',
    id: '',
    frame: grpcFrame(body.subarray(0, came), body.length),
    code: grpc.status.INVALID_ARGUMENT,
    error: `the request stream ended inside a ModelInferRequest message: its gRPC prefix declares ${body.length} bytes, ${came} came${CUT_TAIL}`,
  };
}

function checkResponse(r: StreamResponseMsg, it: Item, k: number): void {
  const where = `response ${k} (${it.kind} '${it.id}')`;
  assert.equal(r.infer_response?.id, it.id, `${where}: id`);
  if (it.code === grpc.status.OK) {
    assert.equal(r.error_message, '', `${where}: no error`);
    assert.deepEqual(simpleOutputs(r.infer_response!), expectedOutputs(it.req!), `${where}: outputs`);
  } else if (typeof it.error === 'string') {
    assert.equal(r.error_message, it.error, where);
  } else {
    assert.match(r.error_message, it.error, where);
  }
}

/** `bytes` in 1 to 6 writes, split anywhere (inside prefixes and messages too). */
function chunks(rng: Rng, bytes: Buffer): Buffer[] {
  const cuts = Array.from({ length: rng.int(0, 5) }, () => rng.int(0, bytes.length)).sort((a, b) => a - b);
  const out: Buffer[] = [];
  let at = 0;
  for (const c of [...cuts, bytes.length]) {
    out.push(bytes.subarray(at, c));
    at = c;
  }
  return out;
}

const errorMode = { triton_grpc_error: 'true' };

export const streamFamilies: Record<string, { weight: number; make(rng: Rng, n: number): FuzzCase }> = {
  // Hundreds of requests on one stream, written at once.
  burst: {
    weight: 5,
    make(rng, n) {
      const count = rng.int(100, 300);
      const clean = rng.chance(0.3);
      const gzip = rng.chance(0.3);
      const kinds = { good: 70, unknownModel: 8, badShape: 8, cut: 7, wireType: 7, corruptGzip: gzip ? 5 : 0 };
      const items = Array.from({ length: count }, (_, i) => item(rng, clean ? 'good' : rng.weighted(kinds), `s${n}-${i}`, gzip));
      if (!clean && rng.chance(0.3)) items.push(cutAtEnd(rng, `s${n}-end`));
      const strict = rng.chance(0.3);
      const body = chunks(rng, Buffer.concat(items.map((it) => it.frame)));
      return {
        family: 'burst',
        detail: `${items.length} requests (${items.filter((it) => it.code !== 0).length} refused), ${body.length} writes${strict ? ', triton_grpc_error' : ''}${gzip ? ', gzip' : ''}`,
        run: async ({ raw }) => {
          const headers = { ...(strict ? errorMode : {}), ...(gzip ? { 'grpc-encoding': 'gzip' } : {}) };
          const res = await raw.call('ModelStreamInfer', body, { headers, timeoutMs: 30_000 });
          const failing = strict ? items.findIndex((it) => it.code !== grpc.status.OK) : -1;
          const answered = failing >= 0 ? items.slice(0, failing) : items;
          if (failing >= 0) expectStatus(res, items[failing].code, items[failing].error);
          else expectStatus(res, grpc.status.OK, 'OK');
          assert.equal(res.messages.length, answered.length, 'one response per request answered');
          res.messages.forEach((m, k) => checkResponse(decodeStreamResponse(m), answered[k], k));
        },
      };
    },
  },
  // The issue's case, with the grpc-js client: a burst on one stream, answered in order.
  clientBurst: {
    weight: 2,
    make(rng, n) {
      const reqs = Array.from({ length: rng.int(200, 400) }, (_, i) => {
        const in0 = Array.from({ length: 16 }, () => rng.int(-1000, 1000));
        const in1 = Array.from({ length: 16 }, () => rng.int(-1000, 1000));
        return { id: `c${n}-${i}`, in0, in1 };
      });
      return {
        family: 'clientBurst',
        detail: `${reqs.length} requests`,
        run: async ({ client }) => {
          const stream = client.inference.ModelStreamInfer({ deadline: Date.now() + 30_000 }) as grpc.ClientDuplexStream<object, StreamResponseMsg>;
          const got: StreamResponseMsg[] = [];
          const ended = new Promise<void>((resolve, reject) => {
            stream.on('data', (r: StreamResponseMsg) => got.push(r));
            stream.on('end', resolve);
            stream.on('error', reject);
          });
          for (const r of reqs) {
            stream.write({
              model_name: 'simple',
              id: r.id,
              inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16] })),
              raw_input_contents: [int32Bytes(r.in0), int32Bytes(r.in1)],
            });
          }
          stream.end();
          await ended;
          assert.deepEqual(
            got.map((g) => g.infer_response?.id),
            reqs.map((r) => r.id),
            'every request answered, in order',
          );
          got.forEach((g, k) => assert.deepEqual(simpleOutputs(g.infer_response!), expectedOutputs(reqs[k]), `response ${k}`));
        },
      };
    },
  },
  // Half-closed at once, kept open, reset while requests are in flight, or left inside a message.
  halfClose: {
    weight: 6,
    make(rng, n) {
      const kind = rng.pick(['empty', 'open', 'reset', 'partialThenReset'] as const);
      const items = Array.from({ length: kind === 'empty' ? 0 : rng.int(1, 40) }, (_, i) => item(rng, 'good', `h${n}-${i}`, false));
      const body = Buffer.concat(items.map((it) => it.frame));
      return {
        family: 'halfClose',
        detail: `${kind}, ${items.length} requests`,
        run: async ({ raw }) => {
          if (kind === 'empty') {
            const res = await raw.call('ModelStreamInfer', [], {});
            expectStatus(res, grpc.status.OK, 'OK');
            assert.equal(res.messages.length, 0);
            return;
          }
          if (kind === 'open') {
            // The client never half-closes: every request is still answered while the stream stays open.
            const res = await raw.call('ModelStreamInfer', body, { end: false, untilMessages: items.length });
            assert.equal(res.timedOut, false, 'answered while the stream stays open');
            assert.equal(res.status, undefined, 'no status: the stream was still open');
            res.messages.forEach((m, k) => checkResponse(decodeStreamResponse(m), items[k], k));
            return;
          }
          const sent = kind === 'reset' ? body : Buffer.concat([body, body.subarray(0, rng.int(1, body.length - 1))]);
          const res = await raw.call('ModelStreamInfer', sent, { resetAfterMs: rng.int(0, 3) });
          assert.equal(res.timedOut, false);
          // Reset by the client: what came before is a prefix of the answers, in order; a status only if all came.
          assert.ok(res.messages.length <= items.length);
          res.messages.forEach((m, k) => checkResponse(decodeStreamResponse(m), items[k], k));
          if (res.status !== undefined) {
            expectStatus(res, grpc.status.OK, 'OK');
            assert.equal(res.messages.length, items.length);
          }
        },
      };
    },
  },
};
