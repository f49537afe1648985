/**
 * Cancellation end to end, with the real server and real Python stubs: an
 * HTTP client that disconnects, a gRPC cancel and a gRPC deadline each reach
 * `request.is_cancelled()` in the model running the request; a request still
 * in the dynamic batcher's queue leaves it without running (execution count,
 * no marker) and is counted as Triton counts it (`fail`, and
 * nv_inference_request_failure reason CANCELED); one waiting in a Python
 * instance's pipe runs and sees it at once; a decoupled model's response
 * sender sees a cancelled gRPC stream; a BLS response stream's `.cancel()`
 * reaches the model it calls, and the caller reads on to the CANCELLED end.
 * The models report what they saw in marker files (test fixtures
 * cancel_models/); the server's stop checks every arena block came back.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { createClient, int32Values } from './grpc-test-client';
import type { GrpcTestClient } from './grpc-test-client';
import { REPO_ROOT, startServer } from './server-process';
import type { ServerProcess } from './server-process';

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures/cancel_models');

let server: ServerProcess;
let client: GrpcTestClient;
let repo: string;
/** Where the models write their markers (the MARKER input is a path prefix in here). */
let marks: string;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-cancel-'));
  marks = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-cancel-marks-'));
  for (const m of ['cancel_watch', 'cancel_stream', 'bls_cancel']) fs.cpSync(path.join(FIXTURES, m), path.join(repo, m), { recursive: true });
  // The same model behind a dynamic batcher (max batch 1): a second request waits in the scheduler's queue.
  const queued = path.join(repo, 'cancel_watch_queue');
  fs.cpSync(path.join(FIXTURES, 'cancel_watch'), queued, { recursive: true });
  const config = fs.readFileSync(path.join(queued, 'config.pbtxt'), 'utf8')
    .replace('name: "cancel_watch"', 'name: "cancel_watch_queue"')
    .replace('max_batch_size: 0', 'max_batch_size: 1');
  fs.writeFileSync(path.join(queued, 'config.pbtxt'), `${config}dynamic_batching { }\n`);
  server = await startServer([`--model-repository=${repo}`, '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1']);
  client = createClient(server.grpcPort);
});

after(async () => {
  client?.close();
  if (server !== undefined) assert.equal(await server.stop(), 0, 'the server stops cleanly with every arena block back');
  fs.rmSync(repo, { recursive: true, force: true });
  fs.rmSync(marks, { recursive: true, force: true });
});

const marker = (tag: string): string => path.join(marks, tag);
const seen = (tag: string, what: string): boolean => fs.existsSync(`${marker(tag)}.${what}`);
const markText = (tag: string, what: string): string => fs.readFileSync(`${marker(tag)}.${what}`, 'utf8');

/** Waits (bounded) for the model to write `<tag>.<what>`. */
async function waitMark(tag: string, what: string, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!seen(tag, what)) {
    if (Date.now() > until) throw new Error(`the model did not write ${tag}.${what} within ${timeoutMs} ms`);
    await sleep(20);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** An HTTP/JSON body for cancel_watch(_queue): wait up to `waitMs`, markers at `tag`. */
function watchBody(waitMs: number, tag: string, batched = false): string {
  const shape = batched ? [1, 1] : [1];
  return JSON.stringify({
    inputs: [
      { name: 'WAIT_MS', datatype: 'INT32', shape, data: [waitMs] },
      { name: 'MARKER', datatype: 'BYTES', shape, data: [marker(tag)] },
    ],
  });
}

function watchMessage(model: string, waitMs: number, tag: string, batched = false): object {
  const shape = batched ? [1, 1] : [1];
  return {
    model_name: model,
    inputs: [
      { name: 'WAIT_MS', datatype: 'INT32', shape, contents: { int_contents: [waitMs] } },
      { name: 'MARKER', datatype: 'BYTES', shape, contents: { bytes_contents: [Buffer.from(marker(tag))] } },
    ],
  };
}

/** A POST whose client can go away: `gone()` destroys its socket; `answer` settles with the status (or the socket error). */
function startPost(p: string, body: string): { gone(): void; answer: Promise<number | Error> } {
  let req!: http.ClientRequest;
  const answer = new Promise<number | Error>((resolve) => {
    req = http.request({ host: '127.0.0.1', port: server.port, path: p, method: 'POST', agent: false, headers: { 'Content-Type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (err) => resolve(err));
    req.end(body);
  });
  return { gone: () => req.destroy(), answer };
}

interface ModelStats {
  execution_count: number;
  inference_stats: Record<string, { count: number; ns: number }>;
  response_stats: Record<string, Record<string, { count: number; ns: number }>>;
}

async function stats(model: string): Promise<ModelStats> {
  const res = await fetch(`${server.url}/v2/models/${model}/stats`);
  assert.equal(res.status, 200);
  return ((await res.json()) as { model_stats: ModelStats[] }).model_stats[0]!;
}

/** One series of /metrics, e.g. metric('nv_inference_request_failure', 'model="m",reason="CANCELED",version="1"'). */
async function metric(name: string, labels: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  assert.ok(line !== undefined, `${name}{${labels}} is on /metrics`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

const failureMetric = (model: string, reason: string): Promise<number> =>
  metric('nv_inference_request_failure', `model="${model}",reason="${reason}",version="1"`);

/** Waits (bounded) until `check` holds. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await sleep(50);
  }
}

test('an HTTP client that disconnects cancels its request: the Python model sees is_cancelled()', async () => {
  const before = await stats('cancel_watch');
  const post = startPost('/v2/models/cancel_watch/infer', watchBody(20_000, 'http'));
  await waitMark('http', 'started');
  post.gone();
  await waitMark('http', 'cancelled');
  assert.ok(Number(markText('http', 'cancelled')) < 15_000, 'seen well before WAIT_MS passed');
  assert.ok(!seen('http', 'done'));
  assert.ok((await post.answer) instanceof Error, 'the client went away without an answer');
  // The model answered the request (with its CANCELLED error): a failure of the execution, as Triton counts it.
  await until('the cancelled request is counted', async () => (await stats('cancel_watch')).inference_stats.fail!.count === before.inference_stats.fail!.count + 1);
});

test('a gRPC cancel reaches is_cancelled() in the model running the request', async () => {
  let status: grpc.status | undefined;
  const call = (client.inference.ModelInfer as (...a: unknown[]) => grpc.ClientUnaryCall)(
    watchMessage('cancel_watch', 20_000, 'grpc-cancel'), new grpc.Metadata(),
    (err: grpc.ServiceError | null) => (status = err?.code));
  await waitMark('grpc-cancel', 'started');
  call.cancel();
  await waitMark('grpc-cancel', 'cancelled');
  assert.ok(!seen('grpc-cancel', 'done'));
  await until('the client callback', async () => status !== undefined);
  assert.equal(status, grpc.status.CANCELLED);
});

test('a gRPC deadline that passes cancels the request the same way', async () => {
  const deadline = Date.now() + 1500;
  const err = await new Promise<grpc.ServiceError | null>((resolve) => {
    (client.inference.ModelInfer as (...a: unknown[]) => grpc.ClientUnaryCall)(
      watchMessage('cancel_watch', 20_000, 'grpc-deadline'), new grpc.Metadata(), { deadline }, resolve);
  });
  assert.equal(err?.code, grpc.status.DEADLINE_EXCEEDED);
  await waitMark('grpc-deadline', 'cancelled');
  assert.ok(seen('grpc-deadline', 'started'));
  assert.ok(!seen('grpc-deadline', 'done'));
});

test('a request cancelled while queued leaves the queue without running, counted as CANCELED', async () => {
  const model = 'cancel_watch_queue';
  const before = await stats(model);
  const canceledBefore = await failureMetric(model, 'CANCELED');
  const busy = startPost(`/v2/models/${model}/infer`, watchBody(20_000, 'busy', true));
  await waitMark('busy', 'started');
  // The one instance is busy: this one waits in the dynamic batcher's queue.
  const waiting = startPost(`/v2/models/${model}/infer`, watchBody(100, 'queued', true));
  await until('the second request is in', async () => (await metric('nv_inference_pending_request_count', `model="${model}",version="1"`)) === 2);
  waiting.gone();
  await until('the queued request is answered CANCELLED', async () => (await failureMetric(model, 'CANCELED')) === canceledBefore + 1);
  const s = await stats(model);
  assert.equal(s.inference_stats.fail!.count, before.inference_stats.fail!.count + 1, 'one failure: the queued request');
  assert.ok(!seen('busy', 'cancelled'), 'the running request is not the one cancelled');
  busy.gone();
  await waitMark('busy', 'cancelled');
  await until('both are counted', async () => (await stats(model)).inference_stats.fail!.count === before.inference_stats.fail!.count + 2);
  const after = await stats(model);
  assert.equal(after.execution_count, before.execution_count + 1, 'only the busy request executed');
  assert.ok(!seen('queued', 'started'), 'the cancelled request never reached the model');
  assert.equal(await failureMetric(model, 'CANCELED'), canceledBefore + 1, 'the one the model answered counts as BACKEND, not CANCELED');
});

test('a request waiting in a Python instance\'s pipe runs, and sees itself cancelled at once', async () => {
  const busy = startPost('/v2/models/cancel_watch/infer', watchBody(1500, 'pipe-busy'));
  await waitMark('pipe-busy', 'started');
  // The default scheduler hands the next batch to the stub while one runs (it waits in the stub's pipe).
  const next = startPost('/v2/models/cancel_watch/infer', watchBody(20_000, 'pipe-next'));
  await sleep(300);
  next.gone();
  assert.equal(await busy.answer, 200, 'the running request finishes normally');
  await waitMark('pipe-next', 'cancelled');
  assert.ok(Number(markText('pipe-next', 'cancelled')) < 5000, 'cancelled already when it started, long before its 20 s');
});

interface StreamResponse {
  error_message: string;
  infer_response: { outputs: { name: string }[]; raw_output_contents: Buffer[] };
}

test('a cancelled gRPC stream reaches a decoupled model\'s response_sender.is_cancelled() and request.is_cancelled()', async () => {
  const before = await stats('cancel_stream');
  const call = (client.inference.ModelStreamInfer as () => grpc.ClientDuplexStream<object, StreamResponse>)();
  const got: StreamResponse[] = [];
  const ended = new Promise<grpc.status | undefined>((resolve) => {
    call.on('error', (err: grpc.ServiceError) => resolve(err.code));
    call.on('end', () => resolve(undefined));
  });
  call.on('data', (r: StreamResponse) => {
    got.push(r);
    if (got.length === 3) call.cancel();
  });
  call.write({
    model_name: 'cancel_stream',
    inputs: [
      { name: 'MAX', datatype: 'INT32', shape: [1], contents: { int_contents: [1000] } },
      { name: 'DELAY_MS', datatype: 'INT32', shape: [1], contents: { int_contents: [20] } },
      { name: 'MARKER', datatype: 'BYTES', shape: [1], contents: { bytes_contents: [Buffer.from(marker('stream'))] } },
    ],
  });
  assert.equal(await ended, grpc.status.CANCELLED);
  await waitMark('stream', 'cancelled');
  const [sent, requestSaw] = markText('stream', 'cancelled').split(' ');
  assert.ok(Number(sent) >= 3 && Number(sent) < 1000, `the model stopped early (after ${sent} responses)`);
  assert.equal(requestSaw, 'True', 'request.is_cancelled() agrees with the sender');
  assert.deepEqual(int32Values(got[0]!.infer_response.raw_output_contents[0]!), [0]);
  // The model's final CANCELLED error is a `cancel` in response_stats (Triton's response statistics).
  await until('the cancel response is counted', async () => {
    const s = await stats('cancel_stream');
    const cancels = Object.values(s.response_stats).reduce((n, r) => n + r.cancel!.count, 0);
    const was = Object.values(before.response_stats).reduce((n, r) => n + r.cancel!.count, 0);
    return cancels === was + 1;
  });
});

test('a BLS response stream\'s cancel() reaches the model it calls; the caller reads on to the CANCELLED end', async () => {
  const res = await fetch(`${server.url}/v2/models/bls_cancel/infer`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      inputs: [
        { name: 'TAKE', datatype: 'INT32', shape: [1], data: [3] },
        { name: 'MARKER', datatype: 'BYTES', shape: [1], data: [marker('bls')] },
      ],
    }),
  });
  const body = (await res.json()) as { outputs?: { data: number[] }[]; error?: string };
  assert.equal(res.status, 200, JSON.stringify(body));
  const [read, cancelled] = body.outputs![0]!.data;
  assert.equal(cancelled, 1, 'the stream ended with a CANCELLED error');
  assert.ok(read! >= 3 && read! < 1000, `the callee stopped early (the caller read ${read} responses)`);
  await waitMark('bls', 'cancelled');
  assert.ok(!seen('bls', 'done'));
});
