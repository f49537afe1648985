/**
 * ModelStreamInfer backpressure, with a raw HTTP/2 client that sends many
 * requests on one stream and does not read its responses (a small
 * flow-control window and a paused stream): the server stops reading the
 * stream once its write buffer is full, so it runs only a bounded number of
 * the requests, holds nothing queued and little arena, and still answers
 * another client at once; when the client reads again every response
 * arrives, in request order, and the stream ends OK.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http2 from 'node:http2';
import { createClient, int32Bytes, int32Values } from './grpc-test-client';
import type { GrpcTestClient } from './grpc-test-client';
import { Rng, decodeStreamResponse, expectedOutputs, requestBytes, simpleOutputs, simpleRequest } from './grpc-fuzz-kit';
import type { SimpleRequest } from './grpc-fuzz-kit';
import { grpcFrame, splitFrames } from './grpc-raw-client';
import { MODEL_REPOSITORY, startServer } from './server-process';
import type { ServerProcess } from './server-process';

/** Requests the client sends on its one stream; without backpressure the server would run them all and hold every response. */
const REQUESTS = 3000;
/**
 * What the server may run while the client reads nothing: the requests a
 * stream may hold (STREAM_MAX_HELD, infer-handlers.ts), its read buffer,
 * and the responses flow control let out.
 */
const BOUND = 400;

let server: ServerProcess;
let client: GrpcTestClient;

before(async () => {
  server = await startServer([
    `--model-repository=${MODEL_REPOSITORY}`,
    '--model-control-mode=explicit',
    '--load-model=simple',
    '--allow-grpc=true',
    '--grpc-port=0',
    '--grpc-address=127.0.0.1',
  ]);
  client = createClient(server.grpcPort);
  server.arenaBaseline = await server.arenaUsedBytes();
});

after(async () => {
  client?.close();
  if (server !== undefined) assert.equal(await server.stop(), 0, 'the server stops cleanly with every arena block back');
});

async function metrics(): Promise<string> {
  return (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
}

function series(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  assert.ok(line !== undefined, `${name}{${labels}} is on /metrics`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** Requests of `simple` that finished, successfully or not. */
async function executed(): Promise<number> {
  const text = await metrics();
  return (
    series(text, 'nv_inference_request_success', 'model="simple",version="1"') +
    series(text, 'nv_inference_request_failure', 'model="simple",reason="BACKEND",version="1"')
  );
}

function rssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Requests run since `before`, once the count has not moved for 0.5 s (at most 20 s). */
async function ranUntilStable(before: number): Promise<number> {
  let ran = (await executed()) - before;
  for (let stable = 0, i = 0; stable < 5 && i < 200; i++) {
    await sleep(100);
    const now = (await executed()) - before;
    stable = now === ran ? stable + 1 : 0;
    ran = now;
  }
  return ran;
}

/** A ModelInfer on `simple` through the grpc-js client: the server answers others while one stream is held back. */
async function knownGood(rng: Rng): Promise<void> {
  const in0 = Array.from({ length: 16 }, () => rng.int(-1000, 1000));
  const in1 = Array.from({ length: 16 }, () => rng.int(-1000, 1000));
  const res = await client.call<{ raw_output_contents: Buffer[] }>('ModelInfer', {
    model_name: 'simple',
    id: 'other-client',
    inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16] })),
    raw_input_contents: [int32Bytes(in0), int32Bytes(in1)],
  });
  const want = expectedOutputs({ in0, in1 });
  assert.deepEqual([int32Values(res.raw_output_contents[0]!), int32Values(res.raw_output_contents[1]!)], [want.sum, want.diff]);
}

/** A ModelStreamInfer stream over a fresh HTTP/2 session with a 4 KiB window, paused: nobody reads what the server sends. */
function unreadStream(): { session: http2.ClientHttp2Session; stream: http2.ClientHttp2Stream } {
  const session = http2.connect(`http://127.0.0.1:${server.grpcPort}`, { settings: { initialWindowSize: 4096 } });
  session.on('error', () => {});
  const stream = session.request({
    ':method': 'POST',
    ':path': '/inference.GRPCInferenceService/ModelStreamInfer',
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  stream.on('error', () => {});
  stream.pause();
  return { session, stream };
}

test('a ModelStreamInfer client that does not read: the server stops reading its stream, stays bounded, serves others; all answers come in order once it reads', async () => {
  const rng = new Rng(13);
  const requests: SimpleRequest[] = Array.from({ length: REQUESTS }, (_, i) => simpleRequest(rng, `r${i}`));
  const before = await executed();
  const rssBefore = rssBytes(server.child.pid!);

  // A small window for what the server sends us, and nobody reading the stream.
  const { session, stream } = unreadStream();
  let trailers: http2.IncomingHttpHeaders | undefined;
  stream.on('trailers', (t) => (trailers = t));
  for (const r of requests) stream.write(grpcFrame(requestBytes(r)));
  stream.end();

  // Until the server stops taking requests: an unbounded one runs all of them.
  const ran = await ranUntilStable(before);
  assert.ok(ran < BOUND, `the server ran ${ran} of ${REQUESTS} requests for a client that reads nothing (bound ${BOUND})`);
  const text = await metrics();
  assert.equal(series(text, 'nv_inference_pending_request_count', 'model="simple",version="1"'), 0, 'nothing queued');
  const arena = Number(/^nodetron_arena_used_bytes (\d+)$/m.exec(text)![1]);
  assert.ok(arena - server.arenaBaseline! < 1 << 20, `arena in use ${arena - server.arenaBaseline!} bytes above its baseline`);
  const rssGrowth = rssBytes(server.child.pid!) - rssBefore;
  assert.ok(rssGrowth < 64 * 1024 * 1024, `server RSS grew by ${rssGrowth} bytes`);

  // Another client is answered at once.
  await knownGood(rng);

  // Reading again: every response, in request order, and the stream ends OK.
  const chunks: Buffer[] = [];
  const closed = new Promise<void>((resolve) => stream.on('close', resolve));
  stream.on('data', (d: Buffer) => chunks.push(d));
  stream.resume();
  await Promise.race([closed, sleep(60_000).then(() => assert.fail('the stream did not end within 60 s of reading again'))]);
  session.close();
  const messages = splitFrames(Buffer.concat(chunks)).map(decodeStreamResponse);
  assert.equal(messages.length, REQUESTS, 'one response per request');
  messages.forEach((m, i) => {
    assert.equal(m.error_message, '', `response ${i}`);
    assert.equal(m.infer_response!.id, `r${i}`, 'in request order');
  });
  const last = requests[REQUESTS - 1]!;
  assert.deepEqual(simpleOutputs(messages[REQUESTS - 1]!.infer_response!), expectedOutputs(last));
  assert.equal(trailers?.['grpc-status'], '0');
});

test('a client that streams 1,000,000 small requests and never reads: the server stays bounded, serves others, and lets go of it all when the client goes', async () => {
  const rng = new Rng(29);
  const frame = grpcFrame(requestBytes(simpleRequest(rng, 'many')));
  const before = await executed();
  const rssBefore = rssBytes(server.child.pid!);
  const { session, stream } = unreadStream();
  // The same frame a million times: the client's own queue holds references, not copies.
  for (let i = 0; i < 1_000_000; i++) stream.write(frame);
  const ran = await ranUntilStable(before);
  assert.ok(ran < BOUND, `the server ran ${ran} of 1,000,000 requests for a client that reads nothing (bound ${BOUND})`);
  const rssGrowth = rssBytes(server.child.pid!) - rssBefore;
  assert.ok(rssGrowth < 64 * 1024 * 1024, `server RSS grew by ${rssGrowth} bytes`);
  await knownGood(rng);
  session.destroy();
  // Its requests cancelled and their blocks freed once it is gone.
  let arena = Infinity;
  for (let i = 0; i < 100 && arena - server.arenaBaseline! >= 1 << 16; i++) {
    await sleep(50);
    arena = Number(/^nodetron_arena_used_bytes (\d+)$/m.exec(await metrics())![1]);
  }
  assert.ok(arena - server.arenaBaseline! < 1 << 16, `arena in use ${arena - server.arenaBaseline!} bytes above its baseline after the client went`);
  await knownGood(rng);
});
