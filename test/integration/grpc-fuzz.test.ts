/**
 * A seeded, bounded fuzz of the gRPC endpoint of a real server, over
 * loopback. Each case breaks a request in one known way (protobuf cut,
 * wrong wire type, huge declared length, over-long varint, deep groups, a
 * gRPC prefix that lies or is cut off, no or two messages on a unary call,
 * compression, oversized metadata) or sends a stream (bursts of hundreds
 * of requests mixing good, refused and unparseable ones, in either error
 * mode; half-closed, open and reset streams), and asserts the status and
 * the message the server must answer with; after every case a known-good
 * ModelInfer must still answer with the right outputs. The server's arena
 * must be back at its baseline when it stops (server-process.ts).
 *
 * NODETRON_FUZZ_SEED and NODETRON_FUZZ_CASES change the seed (default 13)
 * and the count (default 300); a failure names the seed, the case number,
 * its family and what it sent, so it can be replayed.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FuzzCase, FuzzEnv } from './grpc-fuzz-kit';
import { Rng, expectedOutputs } from './grpc-fuzz-kit';
import { streamFamilies } from './grpc-fuzz-stream';
import { unaryFamilies } from './grpc-fuzz-unary';
import { metadataFamilies } from './grpc-fuzz-metadata';
import { RawGrpcClient } from './grpc-raw-client';
import { createClient, int32Bytes, int32Values } from './grpc-test-client';
import { MODEL_REPOSITORY, startServer } from './server-process';
import type { ServerProcess } from './server-process';

const SEED = Number(process.env.NODETRON_FUZZ_SEED ?? 13);
const CASES = Number(process.env.NODETRON_FUZZ_CASES ?? 300);
/** Past this, no new case starts (the machine may be shared); the count run is reported. */
const TIME_BUDGET_MS = 40_000;

const families = { ...unaryFamilies, ...metadataFamilies, ...streamFamilies };

let server: ServerProcess;
let env: FuzzEnv;
before(async () => {
  server = await startServer([`--model-repository=${MODEL_REPOSITORY}`, '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1']);
  env = { raw: new RawGrpcClient(server.grpcPort), client: createClient(server.grpcPort), port: server.grpcPort };
});
after(async () => {
  env?.raw.close();
  env?.client.close();
  assert.equal(await server.stop(), 0, 'server exits 0 on SIGTERM, its arena back at the baseline');
});

/** A ModelInfer on `simple` through the grpc-js client, with fresh inputs: the server still serves. */
async function knownGood(rng: Rng, n: number): Promise<void> {
  const in0 = Array.from({ length: 16 }, () => rng.int(-1000, 1000));
  const in1 = Array.from({ length: 16 }, () => rng.int(-1000, 1000));
  const res = await env.client.call<{ id: string; raw_output_contents: Buffer[] }>('ModelInfer', {
    model_name: 'simple',
    id: `good-${n}`,
    inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16] })),
    raw_input_contents: [int32Bytes(in0), int32Bytes(in1)],
  });
  assert.equal(res.id, `good-${n}`);
  const want = expectedOutputs({ in0, in1 });
  assert.deepEqual([int32Values(res.raw_output_contents[0]), int32Values(res.raw_output_contents[1])], [want.sum, want.diff]);
}

test(`gRPC fuzz: ${CASES} seeded cases (seed ${SEED}), each answered with its status and message, the server serving after each`, async () => {
  const rng = new Rng(SEED);
  const weights = Object.fromEntries(Object.entries(families).map(([k, f]) => [k, f.weight])) as Record<string, number>;
  const ran: Record<string, number> = {};
  const start = Date.now();
  let n = 0;
  for (; n < CASES && Date.now() - start < TIME_BUDGET_MS; n++) {
    // Every family once first, then drawn by weight.
    const name = n < Object.keys(families).length ? Object.keys(families)[n] : rng.weighted(weights);
    const c: FuzzCase = families[name].make(rng, n);
    try {
      await c.run(env);
      await knownGood(rng, n);
    } catch (err) {
      (err as Error).message = `seed ${SEED}, case ${n} (${c.family}: ${c.detail}): ${(err as Error).message}`;
      throw err;
    }
    ran[name] = (ran[name] ?? 0) + 1;
  }
  // The ran counts show in the test output; every family must have run.
  console.log(`gRPC fuzz: ${n} cases in ${Date.now() - start} ms, seed ${SEED}: ${JSON.stringify(ran)}`);
  for (const name of Object.keys(families)) assert.ok((ran[name] ?? 0) > 0, `family ${name} ran`);
});
