/**
 * The direct response path with a real instance thread (worker-instance.ts +
 * instance-thread.ts + the allocating test backend): responses whose request
 * carries a reply address go from the instance thread to the "frontend" on
 * the pair's ring (here the test's own thread plays the frontend: it owns a
 * doorbell and drains the rings reply-rings.ts announces to it), with their
 * outputs given to it; main's result carries them without outputs, marked
 * delivered. A frontend that registers later is reached too; one that is
 * gone from the table gets nothing directly (main sends); one whose thread
 * died refuses the outputs, which the instance frees.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Worker, threadId } from 'node:worker_threads';
import type { BackendInstanceArgs } from '../../src/backends/backend';
import type { ModelConfig } from '../../src/core/model-config';
import type { InferRequest, InferResponse } from '../../src/core/request';
import { Arena } from '../../src/dataplane/arena';
import { MainPort } from '../../src/dataplane/main-port';
import type { ResponseMessage } from '../../src/dataplane/protocol';
import type { ReplyRingNotice } from '../../src/dataplane/reply-rings';
import { Inbox } from '../../src/dataplane/ring';
import { WorkerInstance } from '../../src/instances/worker-instance';

const request = (id: string): InferRequest => ({
  id,
  model: 'm',
  version: 3,
  latest: false,
  batchSize: 1,
  inputs: [],
  requestedOutputs: null,
  parameters: {},
  arrivalNs: 0,
});

const ARGS = {
  config: { name: 'm' } as ModelConfig,
  modelDir: '',
  version: 3,
  modelPath: '',
  instanceName: 'm_0',
  kind: 'KIND_CPU',
  deviceId: 0,
  backendConfig: {},
  instanceCountHint: 1,
} satisfies BackendInstanceArgs;
const BACKEND = path.join(__dirname, 'fixtures', 'allocating-backend.js');

/** A frontend played by this thread: its doorbell, the rings announced to it, what arrived on them. */
class TestFrontend {
  readonly bell;
  readonly inbox;
  readonly got: ResponseMessage[] = [];
  readonly notices: ReplyRingNotice['t'][] = [];
  constructor(port: MainPort) {
    this.bell = port.bells.create();
    this.inbox = new Inbox(this.bell);
  }
  readonly post = (n: ReplyRingNotice): void => {
    this.notices.push(n.t);
    if (n.t === 'reply_ring_add') this.inbox.add(n.ring, (m: ResponseMessage) => this.got.push(m));
    else this.inbox.remove(n.ring);
  };
  async take(count: number): Promise<ResponseMessage[]> {
    for (let i = 0; i < 400 && this.got.length < count; i++) {
      this.inbox.drain();
      if (this.got.length < count) await new Promise((r) => setTimeout(r, 5));
    }
    assert.equal(this.got.length, count, 'direct responses that arrived');
    return this.got.splice(0, count);
  }
}

function assertDelivered(r: InferResponse | undefined): void {
  assert.deepEqual(r, { outputs: [], final: true, delivered: true });
}

test('responses with a reply address go straight to the frontend, outputs given to it; main gets them without outputs', async () => {
  const port = new MainPort();
  port.start();
  const arena = Arena.create({ initialBytes: 1 << 20 });
  const baseline = arena.usedBytes();
  const early = new TestFrontend(port);
  const earlyPort = port.replies.addFrontend(threadId, early.bell, early.post);
  const inst = await WorkerInstance.start(port, arena, BACKEND, ARGS, { info: () => undefined, error: () => undefined });
  try {
    // One of two requests offers a reply address: only that one goes direct.
    const res = await inst.execute([request('a'), request('b')], undefined, [{ port: earlyPort, key: 41 }, null]);
    assertDelivered(res.responses[0]);
    assert.equal(res.responses[1]!.delivered, undefined);
    assert.equal(res.responses[1]!.outputs.length, 1, 'the other comes whole, through main');
    arena.free(res.responses[1]!.outputs[0]!);
    const [m] = await early.take(1);
    assert.equal(m!.key, 41);
    assert.equal(m!.version, 3, 'the version the request ran on');
    const out = m!.response.outputs[0]!;
    assert.equal(arena.ownerOf(out), threadId, 'given to the frontend before sending');
    assert.ok(arena.bytes(out.offset, 4000).every((v) => v === 7));
    arena.free(out);

    // A frontend that registers after the instance started is reached through a `peers` update.
    const late = new TestFrontend(port);
    const latePort = port.replies.addFrontend(threadId, late.bell, late.post);
    const res2 = await inst.execute([request('c')], undefined, [{ port: latePort, key: 7 }]);
    assertDelivered(res2.responses[0]);
    const [m2] = await late.take(1);
    assert.equal(m2!.key, 7);
    arena.free(m2!.response.outputs[0]!);

    // Gone from the table: the offer is declined and main gets the whole response.
    port.replies.removeFrontend(latePort);
    const res3 = await inst.execute([request('d')], undefined, [{ port: latePort, key: 8 }]);
    assert.equal(res3.responses[0]!.delivered, undefined);
    assert.equal(arena.ownerOf(res3.responses[0]!.outputs[0]!), 0, 'adopted by main as before');
    arena.free(res3.responses[0]!.outputs[0]!);
    assert.equal(late.got.length, 0);
    assert.equal(arena.usedBytes(), baseline);
  } finally {
    await inst.stop();
    port.stop();
  }
  // The stopped instance's ring is taken out of the frontend that was still registered.
  for (let i = 0; i < 200 && !early.notices.includes('reply_ring_remove'); i++) await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual(early.notices, ['reply_ring_add', 'reply_ring_remove']);
  assert.equal(port.replies.ringCount(), 0);
  assert.equal(arena.usedBytes(), baseline);
});

test('a frontend thread that died refuses the outputs: the instance frees them and main hears the response was handled', async () => {
  const port = new MainPort();
  port.start();
  const arena = Arena.create({ initialBytes: 1 << 20 });
  const baseline = arena.usedBytes();
  // A real thread that attaches the arena (so it is registered), then ends.
  const worker = new Worker(path.join(__dirname, 'fixtures', 'arena-thread-worker.js'), { workerData: { arena: arena.handle, mode: 'hold-still' } });
  await new Promise((resolve) => worker.once('message', resolve));
  const deadId = worker.threadId;
  const frontend = new TestFrontend(port);
  const replyPort = port.replies.addFrontend(deadId, frontend.bell, frontend.post);
  const inst = await WorkerInstance.start(port, arena, BACKEND, ARGS, { info: () => undefined, error: () => undefined });
  try {
    await worker.terminate();
    arena.threadDied(deadId); // what http-frontend.ts does when its thread exits (before removeFrontend)
    const res = await inst.execute([request('a'), request('b')], undefined, [
      { port: replyPort, key: 1 },
      { port: replyPort, key: 2 },
    ]);
    assertDelivered(res.responses[0]);
    assertDelivered(res.responses[1]);
    frontend.inbox.drain();
    assert.equal(frontend.got.length, 0, 'nothing is sent to a dead thread');
    assert.equal(arena.usedBytes(), baseline, 'the outputs it refused were freed by the instance');
    assert.deepEqual(arena.checkHeap(), []);
  } finally {
    await inst.stop();
    port.stop();
  }
});
