/**
 * A rescheduled request cancelled while it waits for its next step, through
 * the real server and real Python stubs, on two instances (one execution
 * pool each). iterative_waits (fixtures/python_models) is decoupled, sends
 * one response per execution and is rescheduled after each but the last;
 * its direct strategy holds a lone sequence's rescheduled request 2 s in
 * its slot before the next step. A gRPC stream cancelled in that window
 * answers the request CANCELLED once (counted CANCELED, its executions so
 * far counted, never run again); the other sequences, on either instance,
 * get every response; and the instance's pool drains, so an explicit
 * unload and (on a server of its own) a stop each finish in bounded time
 * (they hung while the request stayed counted in flight by the pool that
 * ran it). A cancel that reaches a step while it runs (iterative_slow: the
 * same model, each step 1.5 s, no queue delay), whose model never asks
 * is_cancelled() and reschedules it anyway, ends the request as it comes
 * back: no further step runs.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { createClient, int32Bytes, int32Values } from './grpc-test-client';
import type { GrpcTestClient } from './grpc-test-client';
import { post, repoIndex, waitFor } from './repo-kit';
import { REPO_ROOT, startServer, untilPending } from './server-process';
import type { ServerProcess } from './server-process';

const MODEL = 'iterative_waits';
const SLOW = 'iterative_slow';
const FIXTURE = path.join(REPO_ROOT, 'test/integration/fixtures/python_models', MODEL);
/** The server's own stop budget (--exit-timeout-secs): a stop that hangs exits 1 after it. */
const EXIT_TIMEOUT_SECS = 15;

let server: ServerProcess;
let client: GrpcTestClient;
let repo: string;

/** A server (and its gRPC client) on the repository; explicit: the model is loaded by name. */
async function serve(explicit: boolean): Promise<void> {
  server = await startServer([
    `--model-repository=${repo}`,
    ...(explicit ? ['--model-control-mode=explicit', `--load-model=${MODEL}`] : []),
    '--allow-grpc=true',
    '--grpc-port=0',
    `--exit-timeout-secs=${EXIT_TIMEOUT_SECS}`,
  ]);
  client = createClient(server.grpcPort);
}

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-reschedule-cancel-'));
  fs.cpSync(FIXTURE, path.join(repo, MODEL), { recursive: true });
  fs.cpSync(FIXTURE, path.join(repo, SLOW), { recursive: true });
  const config = path.join(repo, SLOW, 'config.pbtxt');
  const text = fs.readFileSync(config, 'utf8');
  const slow = text.replace(/ {2}direct \{[^}]*\}\n/, '') + 'parameters { key: "STEP_MS" value: { string_value: "1500" } }\n';
  assert.ok(!slow.includes('direct {'), 'the queue delay is gone');
  fs.writeFileSync(config, slow);
  await serve(true);
});

after(async () => {
  client?.close();
  if (server !== undefined && server.child.exitCode === null) await server.stop({ checkArena: false });
  fs.rmSync(repo, { recursive: true, force: true });
});

interface Reply {
  error_message: string;
  infer_response?: { raw_output_contents: Buffer[]; parameters?: Record<string, { bool_param?: boolean }> };
}

interface Countdown {
  /** OUT of each response so far. */
  outs: number[];
  /** Every reply's error text ('' for none). */
  errors: string[];
  /** Settles when the stream ends: the gRPC status it ended with (0 = OK). */
  ended: Promise<grpc.status>;
  cancel(): void;
}

/** One request (IN = n) to `model` on its own ModelStreamInfer stream; `onOut` sees each OUT as it comes. */
function countdown(n: number, onOut?: (out: number, c: Countdown) => void, model = MODEL): Countdown {
  const s = client.inference.ModelStreamInfer() as grpc.ClientDuplexStream<object, Reply>;
  const c: Countdown = {
    outs: [],
    errors: [],
    ended: new Promise((resolve) => {
      s.on('end', () => resolve(0));
      s.on('error', (err: grpc.ServiceError) => resolve(err.code));
    }),
    cancel: () => s.cancel(),
  };
  s.on('data', (r: Reply) => {
    c.errors.push(r.error_message);
    const raw = r.infer_response?.raw_output_contents[0];
    if (raw !== undefined && raw.length > 0) {
      const out = int32Values(raw)[0]!;
      c.outs.push(out);
      onOut?.(out, c);
    }
    if (r.error_message !== '' || r.infer_response?.parameters?.['triton_final_response']?.bool_param === true) s.end();
  });
  s.write({
    model_name: model,
    parameters: { triton_enable_empty_final_response: { bool_param: true } },
    inputs: [{ name: 'IN', datatype: 'INT32', shape: [1, 1] }],
    raw_input_contents: [int32Bytes([n])],
  });
  return c;
}

/**
 * IN = 5, cancelled 500 ms after its 2nd response: its request was
 * rescheduled then and waits 2 s for its 3rd step.
 */
function cancelledAfterTwo(): Countdown {
  return countdown(5, (out, c) => {
    if (out === 3) setTimeout(() => c.cancel(), 500);
  });
}

interface Stats {
  execution_count: number;
  inference_count: number;
  inference_stats: Record<string, { count: number }>;
}

async function stats(model = MODEL): Promise<Stats> {
  const res = await fetch(`${server.url}/v2/models/${model}/stats`);
  assert.equal(res.status, 200);
  return ((await res.json()) as { model_stats: Stats[] }).model_stats[0]!;
}

async function metric(name: string, labels: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  assert.ok(line !== undefined, `${name}{${labels}} is on /metrics`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

const canceled = (model = MODEL): Promise<number> => metric('nv_inference_request_failure', `model="${model}",reason="CANCELED",version="1"`);

/** The model's state in the repository index. */
async function indexed(): Promise<{ state?: string; reason?: string } | undefined> {
  return (await repoIndex(server.url)).find((e) => e.name === MODEL);
}

test('a rescheduled request cancelled while it waits in its slot is answered once, CANCELLED; the other sequences on both instances get every response', async () => {
  const before = await stats();
  const canceledBefore = await canceled();
  // The bystander takes a slot of the first instance; the cancelled sequence then goes to the second one.
  const bystander = countdown(3);
  await untilPending(server, MODEL, 1);
  const cancelled = cancelledAfterTwo();
  assert.equal(await cancelled.ended, 1 /* CANCELLED */);
  assert.deepEqual(cancelled.outs, [4, 3], 'the responses of the two executions before the cancel');
  await waitFor('the cancel is counted', async () => (await canceled()) === canceledBefore + 1, 40);
  // A new sequence takes the freed slot (the second instance, whose pool answered the cancelled request).
  const after = countdown(2);
  assert.equal(await bystander.ended, 0);
  assert.equal(await after.ended, 0);
  assert.deepEqual(bystander.outs, [2, 1, 0]);
  assert.deepEqual(after.outs, [1, 0]);
  for (const c of [bystander, after])
    assert.deepEqual(
      c.errors,
      c.errors.map(() => ''),
    );

  await waitFor('nothing pending', async () => (await metric('nv_inference_pending_request_count', `model="${MODEL}",version="1"`)) === 0, 40);
  const now = await stats();
  assert.equal(now.execution_count - before.execution_count, 3 + 2 + 2, "every execution, the cancelled request's two among them, and no third");
  assert.equal(now.inference_count - before.inference_count, 7);
  assert.equal(now.inference_stats['success']!.count - before.inference_stats['success']!.count, 2);
  assert.equal(now.inference_stats['fail']!.count - (before.inference_stats['fail']?.count ?? 0), 1, 'the cancelled request fails once');
  assert.equal(await canceled(), canceledBefore + 1, 'and only once');
});

test('explicit unload then ends within a bound: the pool that held the cancelled request drains', async () => {
  const unload = await post(server.url, `/v2/repository/models/${MODEL}/unload`);
  assert.equal(unload.status, 200, unload.text);
  await waitFor(`${MODEL} unloaded`, async () => (await indexed())?.reason === 'unloaded', 40);
  assert.deepEqual(await indexed(), { name: MODEL, version: '1', state: 'UNAVAILABLE', reason: 'unloaded' });
});

test('a cancel that reaches a running step of a model that reschedules anyway ends the request as it comes back: no further step runs', async () => {
  client.close();
  if (server.child.exitCode === null) await server.stop({ checkArena: false });
  await serve(false);
  const before = await stats(SLOW);
  const canceledBefore = await canceled(SLOW);
  // Step 2 starts as the 1st response arrives and runs 1.5 s: the cancel reaches it halfway.
  const cancelled = countdown(
    5,
    (out, c) => {
      if (out === 4) setTimeout(() => c.cancel(), 500);
    },
    SLOW,
  );
  assert.equal(await cancelled.ended, 1 /* CANCELLED */);
  await waitFor('the cancelled request is answered', async () => (await canceled(SLOW)) === canceledBefore + 1, 40);
  const next = countdown(2, undefined, SLOW);
  assert.equal(await next.ended, 0);
  assert.deepEqual(next.outs, [1, 0]);
  const now = await stats(SLOW);
  assert.equal(now.execution_count - before.execution_count, 2 + 2, 'the cancelled request ran the step the cancel reached, and no more');
  assert.equal(now.inference_stats['success']!.count - before.inference_stats['success']!.count, 1);
  assert.equal(now.inference_stats['fail']!.count - (before.inference_stats['fail']?.count ?? 0), 1);
});

test('on a server of its own, after another such cancel, the server stops cleanly (exit 0) well within --exit-timeout-secs', async () => {
  const canceledBefore = await canceled();
  const cancelled = cancelledAfterTwo();
  assert.equal(await cancelled.ended, 1 /* CANCELLED */);
  await waitFor('the cancel is counted', async () => (await canceled()) === canceledBefore + 1, 40);
  // Another sequence answered after the cancel: the model still serves.
  const next = countdown(1);
  assert.equal(await next.ended, 0);
  assert.deepEqual(next.outs, [0]);
  const started = Date.now();
  assert.equal(await server.stop(), 0, 'a clean stop: no model left draining');
  const tookMs = Date.now() - started;
  assert.ok(tookMs < EXIT_TIMEOUT_SECS * 1000, `stopped in ${tookMs} ms`);
});
