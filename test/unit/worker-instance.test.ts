import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import type { BackendInstanceArgs } from '../../src/backends/backend';
import { Arena } from '../../src/dataplane/arena';
import { MainPort } from '../../src/dataplane/main-port';
import { WorkerInstance } from '../../src/instances/worker-instance';
import type { ModelConfig } from '../../src/core/model-config';
import type { InferRequest } from '../../src/core/request';

const request = (id: string): InferRequest => ({
  id,
  model: 'm',
  version: 1,
  latest: false,
  batchSize: 1,
  inputs: [],
  requestedOutputs: null,
  parameters: {},
  arrivalNs: 0,
});

/** The args of instance m_0 of model 'm' on the test backends (fixtures/*-backend.ts). */
function instanceArgs(): BackendInstanceArgs {
  return {
    config: { name: 'm' } as ModelConfig,
    modelDir: '',
    version: 1,
    modelPath: '',
    instanceName: 'm_0',
    kind: 'KIND_CPU',
    deviceId: 0,
    backendConfig: {},
    instanceCountHint: 1,
  };
}

test('a worker instance whose thread dies fails that batch, is restarted and serves again; stop ends it', async () => {
  const port = new MainPort();
  port.start();
  const arena = Arena.create({ initialBytes: 1 << 20 });
  const logged: string[] = [];
  const args = instanceArgs();
  const inst = await WorkerInstance.start(port, arena, path.join(__dirname, 'fixtures', 'crashing-backend.js'), args, {
    info: (m) => logged.push(`I ${m}`),
    error: (m) => logged.push(`E ${m}`),
  });
  try {
    const ok = await inst.execute([request('a'), request('b')]);
    assert.deepEqual(
      ok.responses.map((r) => r.error),
      [undefined, undefined],
    );

    const crashed = await inst.execute([request('crash'), request('c')]);
    for (const r of crashed.responses) {
      assert.equal(r.error?.code, 'INTERNAL');
      assert.match(r.error!.message, /instance m_0 of model 'm' exited \(code 3\)/);
    }
    // Bounded wait for the new thread (no timing assertion: just until it answers).
    let again = await inst.execute([request('d')]);
    for (let i = 0; i < 200 && again.responses[0].error !== undefined; i++) {
      assert.equal(again.responses[0].error?.code, 'UNAVAILABLE', 'while restarting, batches fail fast');
      await new Promise((r) => setTimeout(r, 25));
      again = await inst.execute([request('d')]);
    }
    assert.equal(again.responses[0].error, undefined);
    assert.ok(
      logged.some((l) => /^E instance m_0 of model 'm' exited \(code 3\); restarting it$/.test(l)),
      logged.join('\n'),
    );
    assert.ok(logged.includes("I instance m_0 of model 'm' restarted"), logged.join('\n'));
    // The dead thread's doorbell was retired (its counters kept in the totals): the main bell and the new one remain.
    assert.equal(port.bells.size, 2);
  } finally {
    await inst.stop();
    await inst.stop();
    port.stop();
  }
  for (let i = 0; i < 200 && port.bells.size > 1; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(port.bells.size, 1, "the stopped thread's bell is retired too");
  const after = await inst.execute([request('e')]);
  assert.equal(after.responses[0].error?.code, 'UNAVAILABLE');
});

test(
  'an instance thread that dies mid-batch, its outputs allocated: the batch fails with the reason, the outputs are reclaimed, the instance restarts and serves',
  { timeout: 60_000 },
  async () => {
    const port = new MainPort();
    port.start();
    const arena = Arena.create({ initialBytes: 1 << 20 });
    const baseline = arena.usedBytes();
    const args = instanceArgs();
    const inst = await WorkerInstance.start(port, arena, path.join(__dirname, 'fixtures', 'allocating-backend.js'), args, {
      info: () => undefined,
      error: () => undefined,
    });
    try {
      const ok = await inst.execute([request('a'), request('b')]);
      for (const r of ok.responses) {
        assert.equal(r.error, undefined);
        assert.equal(arena.ownerOf(r.outputs[0]!), 0, 'the main thread adopted the output on `executed`');
        assert.ok(arena.bytes(r.outputs[0]!.offset, 4000).every((v) => v === 7));
        arena.free(r.outputs[0]!);
      }
      assert.equal(arena.usedBytes(), baseline);

      // Two batches in flight (pipeline depth 2): the first answered, then the thread dies inside the second.
      const [sent, died] = await Promise.all([inst.execute([request('c')]), inst.execute([request('die-after-alloc'), request('d')])]);
      assert.equal(sent.responses[0]!.error, undefined, 'results sent before the death are delivered');
      assert.equal(arena.ownerOf(sent.responses[0]!.outputs[0]!), 0);
      arena.free(sent.responses[0]!.outputs[0]!);
      for (const r of died.responses) {
        assert.equal(r.error?.code, 'INTERNAL');
        assert.match(r.error!.message, /instance m_0 of model 'm' exited \(code 3\)/);
        assert.deepEqual(r.outputs, []);
      }
      assert.equal(arena.usedBytes(), baseline, 'the outputs the dead thread had allocated were reclaimed');
      assert.deepEqual(arena.checkHeap(), []);

      let again = await inst.execute([request('e')]);
      for (let i = 0; i < 200 && again.responses[0]!.error !== undefined; i++) {
        assert.equal(again.responses[0]!.error?.code, 'UNAVAILABLE', 'while restarting, batches fail fast');
        await new Promise((r) => setTimeout(r, 25));
        again = await inst.execute([request('e')]);
      }
      assert.equal(again.responses[0]!.error, undefined, 'the restarted instance serves');
      arena.free(again.responses[0]!.outputs[0]!);
      assert.equal(arena.usedBytes(), baseline);
    } finally {
      await inst.stop();
      port.stop();
    }
    assert.equal(arena.usedBytes(), baseline);
  },
);

test('a request cancelled while its batch waits at the instance thread is answered CANCELLED without running; the rest of the batch runs', async () => {
  const port = new MainPort();
  port.start();
  const arena = Arena.create({ initialBytes: 1 << 20 });
  const args = instanceArgs();
  const inst = await WorkerInstance.start(port, arena, path.join(__dirname, 'fixtures', 'crashing-backend.js'), args);
  try {
    const running = inst.execute([request('sleep')]);
    const never = request('never');
    const waiting = inst.execute([never, request('b')]);
    inst.cancel(never);
    inst.cancel(request('not-sent')); // names no batch: nothing happens
    const [first, second] = await Promise.all([running, waiting]);
    assert.equal(first.responses[0]!.error, undefined);
    assert.equal(second.responses[0]!.skipped, true, 'left unrun');
    assert.equal(second.responses[0]!.error?.code, 'CANCELLED');
    assert.match(second.responses[0]!.error!.message, /was cancelled before it ran/);
    assert.equal(second.responses[1]!.error, undefined, 'the rest of its batch ran');
    // A cancel that reaches a batch already running changes nothing.
    const again = request('sleep');
    const run = inst.execute([again]);
    await new Promise((r) => setTimeout(r, 50));
    inst.cancel(again);
    assert.equal((await run).responses[0]!.skipped, undefined);
  } finally {
    await inst.stop();
    port.stop();
  }
});
