/**
 * Cancellation end to end, with the real server and real Python stubs: an
 * HTTP client that disconnects, a gRPC cancel and a gRPC deadline each reach
 * `request.is_cancelled()` in the model running the request; a request still
 * in the dynamic batcher's queue leaves it without running (execution count,
 * no marker) and is counted as Triton counts it (`fail`, and
 * nv_inference_request_failure reason CANCELED), and so does one waiting in
 * a Python stub's pipe or for the rate limiter's resources (cancelled
 * through BLS, whose caller reports the CANCELLED text); a cancelled
 * request of a sequence ends the sequence (the later queued ones are
 * answered CANCELLED with the reason); a decoupled model's response
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
  for (const m of ['cancel_watch', 'cancel_plain', 'cancel_stream', 'bls_cancel', 'bls_cancel_waiting'])
    fs.cpSync(path.join(FIXTURES, m), path.join(repo, m), { recursive: true });
  // The same model behind a dynamic batcher (max batch 1): a second request waits in the scheduler's queue.
  watchCopy('cancel_watch_queue', (c) => `${c.replace('max_batch_size: 0', 'max_batch_size: 1')}dynamic_batching { }\n`);
  // Behind the sequence batcher (one slot): a sequence's next requests wait in its slot's queue.
  watchCopy('cancel_watch_seq', (c) => `${c}sequence_batching { }\n`);
  // Two instances sharing one unit of a rate-limiter resource: while one runs, the other's batch waits for it.
  watchCopy('cancel_watch_limited', (c) =>
    c.replace(
      'instance_group [ { count: 1 kind: KIND_CPU } ]',
      'instance_group [ { count: 2 kind: KIND_CPU rate_limiter { resources [ { name: "R" global: true count: 1 } ] } } ]',
    ),
  );
  server = await startServer([`--model-repository=${repo}`, '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1', '--rate-limit=execution_count']);
  client = createClient(server.grpcPort);
});

after(async () => {
  client?.close();
  if (server !== undefined) assert.equal(await server.stop(), 0, 'the server stops cleanly with every arena block back');
  fs.rmSync(repo, { recursive: true, force: true });
  fs.rmSync(marks, { recursive: true, force: true });
});

/** cancel_watch under another name, its config changed by `edit`. */
function watchCopy(name: string, edit: (config: string) => string): void {
  const dir = path.join(repo, name);
  fs.cpSync(path.join(FIXTURES, 'cancel_watch'), dir, { recursive: true });
  const config = fs.readFileSync(path.join(dir, 'config.pbtxt'), 'utf8').replace('name: "cancel_watch"', `name: "${name}"`);
  const edited = edit(config);
  assert.notEqual(edited, config, `the config of ${name} changed`);
  fs.writeFileSync(path.join(dir, 'config.pbtxt'), edited);
}

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
    req = http.request(
      { host: '127.0.0.1', port: server.port, path: p, method: 'POST', agent: false, headers: { 'Content-Type': 'application/json' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
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
  await until(
    'the cancelled request is counted',
    async () => (await stats('cancel_watch')).inference_stats.fail!.count === before.inference_stats.fail!.count + 1,
  );
});

test('a gRPC cancel reaches is_cancelled() in the model running the request', async () => {
  let status: grpc.status | undefined;
  const call = (client.inference.ModelInfer as (...a: unknown[]) => grpc.ClientUnaryCall)(
    watchMessage('cancel_watch', 20_000, 'grpc-cancel'),
    new grpc.Metadata(),
    (err: grpc.ServiceError | null) => (status = err?.code),
  );
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
      watchMessage('cancel_watch', 20_000, 'grpc-deadline'),
      new grpc.Metadata(),
      { deadline },
      resolve,
    );
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

/**
 * Through bls_cancel_waiting: a BLS request to `target` while its instance
 * is busy with another request, cancelled while it waits there; the caller
 * reports the CANCELLED answer and its text.
 */
async function cancelWhileWaiting(target: string, tag: string): Promise<{ code: number; text: string }> {
  const res = await fetch(`${server.url}/v2/models/bls_cancel_waiting/infer`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      inputs: [
        { name: 'TARGET', datatype: 'BYTES', shape: [1], data: [target] },
        { name: 'WAIT_MS', datatype: 'INT32', shape: [1], data: [100] },
        { name: 'DELAY_MS', datatype: 'INT32', shape: [1], data: [300] },
        { name: 'MARKER', datatype: 'BYTES', shape: [1], data: [marker(tag)] },
      ],
    }),
  });
  const body = (await res.json()) as { outputs?: { name: string; data: (number | string)[] }[]; error?: string };
  assert.equal(res.status, 200, JSON.stringify(body));
  const out = (name: string): number | string => body.outputs!.find((o) => o.name === name)!.data[0]!;
  return { code: Number(out('CODE')), text: String(out('TEXT')) };
}

/** A busy request on `model`, a second one cancelled while it waits behind it: never run, CANCELLED, counted CANCELED. */
async function waitingCancelLeavesUnrun(model: string, tag: string): Promise<void> {
  const before = await stats(model);
  const canceledBefore = await failureMetric(model, 'CANCELED');
  const busy = startPost(`/v2/models/${model}/infer`, watchBody(20_000, `${tag}-busy`));
  await waitMark(`${tag}-busy`, 'started');
  const got = await cancelWhileWaiting(model, `${tag}-next`);
  assert.equal(got.code, 1, 'the waiting request was answered CANCELLED');
  assert.equal(
    got.text,
    `[request id: <id_unknown>] request for model '${model}' version 1 was cancelled before it ran (its client cancelled it or went away)`,
  );
  assert.ok(!seen(`${tag}-next`, 'started'), 'the model never saw the cancelled request');
  assert.equal(await failureMetric(model, 'CANCELED'), canceledBefore + 1, 'counted as Triton counts a request cancelled before it ran');
  assert.ok(!seen(`${tag}-busy`, 'cancelled'), 'the running request is not the one cancelled');
  busy.gone();
  await waitMark(`${tag}-busy`, 'cancelled');
  await until('both are counted', async () => (await stats(model)).inference_stats.fail!.count === before.inference_stats.fail!.count + 2);
  const after = await stats(model);
  assert.equal(after.execution_count, before.execution_count + 1, 'only the busy request executed');
  assert.equal(after.inference_stats.success!.count, before.inference_stats.success!.count);
  assert.equal(await failureMetric(model, 'CANCELED'), canceledBefore + 1, 'the one the model answered counts as BACKEND, not CANCELED');
}

test("a request waiting in a Python stub's pipe (behind the batch it runs) leaves unrun when cancelled, answered CANCELLED", async () => {
  await waitingCancelLeavesUnrun('cancel_watch', 'pipe');
});

test("a model that never asks is_cancelled(): the request waiting in its stub's pipe is still left unrun, answered when its turn comes", async () => {
  const model = 'cancel_plain';
  const before = await stats(model);
  const canceledBefore = await failureMetric(model, 'CANCELED');
  const busy = startPost(`/v2/models/${model}/infer`, watchBody(1500, 'plain-busy'));
  await waitMark('plain-busy', 'started');
  // The stub reads nothing while execute() runs: it sees the cancel just before the waiting batch would begin.
  const got = await cancelWhileWaiting(model, 'plain-next');
  assert.equal(got.code, 1);
  assert.equal(
    got.text,
    `[request id: <id_unknown>] request for model '${model}' version 1 was cancelled before it ran (its client cancelled it or went away)`,
  );
  assert.equal(await busy.answer, 200, 'the running request finished normally');
  assert.ok(seen('plain-busy', 'done'));
  assert.ok(!seen('plain-next', 'started'), 'the model never saw the cancelled request');
  assert.equal(await failureMetric(model, 'CANCELED'), canceledBefore + 1);
  const after = await stats(model);
  assert.equal(after.execution_count, before.execution_count + 1, 'only the busy request executed');
});

test("a request waiting for the rate limiter's resources leaves unrun when cancelled, answered CANCELLED", async () => {
  await waitingCancelLeavesUnrun('cancel_watch_limited', 'limited');
});

/** A sequence request to cancel_watch_seq over HTTP (id `id`), that can go away. */
function seqPost(
  id: string,
  waitMs: number,
  tag: string,
  params: Record<string, unknown>,
): { gone(): void; answer: Promise<number | Error>; body: Promise<string> } {
  let req!: http.ClientRequest;
  let text!: (t: string) => void;
  const body = new Promise<string>((resolve) => (text = resolve));
  const answer = new Promise<number | Error>((resolve) => {
    req = http.request(
      {
        host: '127.0.0.1',
        port: server.port,
        path: '/v2/models/cancel_watch_seq/infer',
        method: 'POST',
        agent: false,
        headers: { 'Content-Type': 'application/json' },
      },
      (res) => {
        let b = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (b += c));
        res.on('end', () => {
          text(b);
          resolve(res.statusCode ?? 0);
        });
      },
    );
    req.on('error', (err) => {
      text('');
      resolve(err);
    });
    req.end(JSON.stringify({ id, parameters: { sequence_id: 42, ...params }, ...(JSON.parse(watchBody(waitMs, tag)) as object) }));
  });
  return { gone: () => req.destroy(), answer, body };
}

test('a cancelled request of a sequence ends the sequence, as Triton does: it and the later queued ones CANCELLED, a new request needs START', async () => {
  const model = 'cancel_watch_seq';
  const before = await stats(model);
  const canceledBefore = await failureMetric(model, 'CANCELED');
  const first = seqPost('s1', 20_000, 'seq-1', { sequence_start: true });
  await waitMark('seq-1', 'started');
  const second = seqPost('s2', 100, 'seq-2', {});
  const third = seqPost('s3', 100, 'seq-3', { sequence_end: true });
  await until('both wait in the slot', async () => (await metric('nv_inference_pending_request_count', `model="${model}",version="1"`)) === 3);
  second.gone();
  assert.equal(await third.answer, 400, 'the later request of the sequence is answered too');
  assert.deepEqual(JSON.parse(await third.body), {
    error:
      `[request id: s3] request for model '${model}' version 1 was cancelled before it ran: request 's2' of its sequence 42 was cancelled, ` +
      'which ends the sequence (send a new START to begin again)',
  });
  await until('both are counted CANCELED', async () => (await failureMetric(model, 'CANCELED')) === canceledBefore + 2);
  const fourth = seqPost('s4', 100, 'seq-4', {});
  assert.equal(await fourth.answer, 400);
  assert.match(
    await fourth.body,
    /inference request for sequence 42 to model 'cancel_watch_seq' must specify the START flag on the first request of the sequence/,
  );
  first.gone();
  await waitMark('seq-1', 'cancelled');
  await until('the running one is counted', async () => (await stats(model)).inference_stats.fail!.count === before.inference_stats.fail!.count + 3);
  const after = await stats(model);
  assert.equal(after.execution_count, before.execution_count + 1, 'only the first request executed');
  for (const t of ['seq-2', 'seq-3', 'seq-4']) assert.ok(!seen(t, 'started'), `${t} never reached the model`);
  // The id is free again: a new START begins a new sequence.
  const again = seqPost('s5', 0, 'seq-5', { sequence_start: true, sequence_end: true });
  assert.equal(await again.answer, 200, await again.body);
});

test('a cancel that reaches the running request of a sequence ends it too: the later queued ones CANCELLED, never run', async () => {
  const model = 'cancel_watch_seq';
  const canceledBefore = await failureMetric(model, 'CANCELED');
  const first = seqPost('r1', 20_000, 'run-1', { sequence_start: true });
  await waitMark('run-1', 'started');
  const second = seqPost('r2', 100, 'run-2', {});
  const third = seqPost('r3', 100, 'run-3', { sequence_end: true });
  await until('both wait in the slot', async () => (await metric('nv_inference_pending_request_count', `model="${model}",version="1"`)) === 3);
  first.gone();
  await waitMark('run-1', 'cancelled');
  for (const [later, id] of [
    [second, 'r2'],
    [third, 'r3'],
  ] as const) {
    assert.equal(await later.answer, 400, `${id} is answered`);
    assert.deepEqual(JSON.parse(await later.body), {
      error:
        `[request id: ${id}] request for model '${model}' version 1 was cancelled before it ran: request 'r1' of its sequence 42 was cancelled, ` +
        'which ends the sequence (send a new START to begin again)',
    });
  }
  await until('the running one and both later ones are counted CANCELED', async () => (await failureMetric(model, 'CANCELED')) >= canceledBefore + 2);
  for (const t of ['run-2', 'run-3']) assert.ok(!seen(t, 'started'), `${t} never reached the model`);
  const again = seqPost('r4', 0, 'run-4', { sequence_start: true, sequence_end: true });
  assert.equal(await again.answer, 200, await again.body);
});

interface StreamResponse {
  error_message: string;
  infer_response: { outputs: { name: string }[]; raw_output_contents: Buffer[] };
}

test("a cancelled gRPC stream reaches a decoupled model's response_sender.is_cancelled() and request.is_cancelled()", async () => {
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

test("a BLS response stream's cancel() reaches the model it calls; the caller reads on to the CANCELLED end", async () => {
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
