/**
 * The metadata family of the gRPC fuzz suite (grpc-fuzz.test.ts): request
 * metadata of random size and shape on unary and stream calls, from the
 * raw HTTP/2 client (whose headers the case knows exactly, so it can say
 * which side of the 16 KiB limit it is on) and from the grpc-js client.
 * Over the limit the call ends RESOURCE_EXHAUSTED naming the size and the
 * largest entry, before any handler runs; under it the call is served.
 *
 * Not covered: one header field over 64 KiB, which nghttp2 (inside
 * node:http2) refuses as a connection error (GOAWAY COMPRESSION_ERROR)
 * before any JavaScript sees it.
 */
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import type { FuzzCase, Rng } from './grpc-fuzz-kit';
import { decodeInferResponse, decodeStreamResponse, expectStatus, expectedOutputs, requestBytes, simpleOutputs, simpleRequest } from './grpc-fuzz-kit';
import { grpcFrame } from './grpc-raw-client';
import { int32Bytes } from './grpc-test-client';

const LIMIT = 16 * 1024;
const TOO_LARGE =
  /^received metadata size exceeds hard limit \((\d+) vs\. 16384\): request metadata \(headers\) is counted as name \+ value \+ 32 bytes per entry, and the largest entry is '([^']+)' \((\d+) bytes\); send less metadata$/;

function entries(rng: Rng, n: number): { headers: Record<string, string>; total: number; largest: string } {
  const headers: Record<string, string> = {};
  let total = 0;
  const count = rng.int(1, 30);
  for (let i = 0; i < count; i++) headers[`x-fuzz-${n}-${i}`] = 'v'.repeat(rng.int(0, 300));
  // One entry clearly the largest, sized so the total lands on either side of the limit.
  const largest = `x-fuzz-big-${n}`;
  headers[largest] = String.fromCharCode(rng.int(97, 122)).repeat(rng.int(2000, 40_000));
  for (const [k, v] of Object.entries(headers)) total += k.length + v.length + 32;
  return { headers, total, largest };
}

export const metadataFamilies: Record<string, { weight: number; make(rng: Rng, n: number): FuzzCase }> = {
  metadata: {
    weight: 10,
    make(rng, n) {
      const { headers, total, largest } = entries(rng, n);
      const stream = rng.chance(0.4);
      const viaClient = !stream && rng.chance(0.4) && Math.abs(total - LIMIT) > 512;
      const req = simpleRequest(rng, `md-${n}`);
      return {
        family: 'metadata',
        detail: `${Object.keys(headers).length} entries, ${total} bytes, ${stream ? 'ModelStreamInfer' : 'ModelInfer'}${viaClient ? ' (grpc-js client)' : ''}`,
        run: async ({ raw, client }) => {
          const over = total > LIMIT;
          if (viaClient) {
            const md = new grpc.Metadata();
            for (const [k, v] of Object.entries(headers)) md.set(k, v);
            const call = client.call<{ id: string }>(
              'ModelInfer',
              {
                model_name: 'simple',
                id: req.id,
                inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16] })),
                raw_input_contents: [int32Bytes(req.in0), int32Bytes(req.in1)],
              },
              md,
            );
            if (!over) {
              assert.equal((await call).id, req.id);
              return;
            }
            await assert.rejects(call, (err: grpc.ServiceError) => {
              assert.equal(err.code, grpc.status.RESOURCE_EXHAUSTED);
              const m = TOO_LARGE.exec(err.details);
              assert.ok(m, `details: ${err.details}`);
              assert.ok(Number(m[1]) > total && m[2] === largest, err.details);
              return true;
            });
            return;
          }
          const res = await raw.call(stream ? 'ModelStreamInfer' : 'ModelInfer', grpcFrame(requestBytes(req)), { headers });
          if (over) {
            expectStatus(res, grpc.status.RESOURCE_EXHAUSTED, TOO_LARGE);
            const m = TOO_LARGE.exec(res.message)!;
            assert.deepEqual([Number(m[1]), m[2], Number(m[3])], [total, largest, largest.length + headers[largest].length + 32]);
            assert.equal(res.messages.length, 0, 'refused before any handler ran');
            return;
          }
          expectStatus(res, grpc.status.OK, 'OK');
          assert.equal(res.messages.length, 1);
          const r = stream ? decodeStreamResponse(res.messages[0]).infer_response! : decodeInferResponse(res.messages[0]);
          assert.equal(r.id, req.id);
          assert.deepEqual(simpleOutputs(r), expectedOutputs(req));
        },
      };
    },
  },
};
