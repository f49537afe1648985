/**
 * InlineGates (scheduler/inline-gates.ts), table-driven: when the gates of
 * hosted instances open, and how an inline run is counted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InferRequest } from '../../src/core/request';
import type { InlineMessage } from '../../src/dataplane/protocol';
import type { InlineRuns, ModelInstance } from '../../src/instances/instance';
import { InlineGates } from '../../src/scheduler/inline-gates';
import { RequestAccounting } from '../../src/scheduler/request-accounting';
import type { RequestDoneStats, SchedulerHooks } from '../../src/scheduler/scheduler-hooks';

function hosted(): { instance: ModelInstance; opens: boolean[]; run: (r: InferRequest, m: InlineMessage) => void } {
  const opens: boolean[] = [];
  let listener: ((r: InferRequest, m: InlineMessage) => void) | undefined;
  const inline: InlineRuns = { setOpen: (o) => opens.push(o), onRun: (l) => (listener = l) };
  const instance = {
    name: 'm_0',
    inline,
    execute: () => Promise.reject(new Error('not used')),
    stop: () => Promise.resolve(),
    kill: () => Promise.resolve(),
  } as unknown as ModelInstance;
  return { instance, opens, run: (r, m) => listener!(r, m) };
}

// Each step: what the pool reports, then whether the gate is open.
const steps: { what: string; serve?: boolean; inflight: number; inBatches: number; open: boolean }[] = [
  { what: 'loaded, not yet serving', inflight: 0, inBatches: 0, open: false },
  { what: 'serving, nothing queued', serve: true, inflight: 0, inBatches: 0, open: true },
  { what: 'a request admitted, not yet on an instance', inflight: 1, inBatches: 0, open: false },
  { what: 'it runs', inflight: 1, inBatches: 1, open: true },
  { what: 'a second waits behind it', inflight: 2, inBatches: 1, open: false },
  { what: 'both run', inflight: 2, inBatches: 2, open: true },
  { what: 'all answered', inflight: 0, inBatches: 0, open: true },
  { what: 'an unload begins', serve: false, inflight: 0, inBatches: 0, open: false },
  { what: 'still not serving, nothing queued', inflight: 0, inBatches: 0, open: false },
];

test('inline gates: open only while serving with nothing waiting, and written only when that changes', () => {
  const h = hosted();
  const gates = new InlineGates([h.instance], undefined, new RequestAccounting(undefined));
  let state = false;
  let writes = 0;
  for (const s of steps) {
    if (s.serve !== undefined) gates.serve(s.serve, s.inflight, s.inBatches);
    else gates.update(s.inflight, s.inBatches);
    if (s.open !== state) writes++;
    state = s.open;
    assert.equal(h.opens.at(-1) ?? false, s.open, s.what);
  }
  assert.equal(h.opens.length, writes, 'one write per change');
});

test('inline gates: an inline run is one execution and one successful request, with its own timings', () => {
  const h = hosted();
  const done: { batch: number; count: number }[] = [];
  const requests: RequestDoneStats[] = [];
  const hooks: SchedulerHooks = {
    executionDone: (batch, count) => done.push({ batch, count }),
    requestDone: (_r, s) => requests.push({ ...s }),
  };
  new InlineGates([h.instance], hooks, new RequestAccounting(hooks));
  const timings = { computeStartNs: 110, computeInputEndNs: 120, computeInferEndNs: 150, computeEndNs: 160 };
  const req = {
    id: 'r',
    model: 'm',
    version: 1,
    latest: false,
    batchSize: 4,
    inputs: [],
    requestedOutputs: null,
    parameters: {},
    arrivalNs: 100,
  } as InferRequest;
  h.run(req, { t: 'inline', id: 'r', batchSize: 4, queueStartNs: 100, endNs: 170, ok: true, timings });
  h.run(req, { t: 'inline', id: 'r', batchSize: 4, queueStartNs: 100, endNs: 170, ok: false, timings });
  assert.deepEqual(done, [
    { batch: 4, count: 1 },
    { batch: 4, count: 1 },
  ]);
  assert.equal(requests.length, 2);
  assert.equal(requests[0]!.success, true);
  assert.equal(requests[0]!.queueStartNs, 100);
  assert.equal(requests[0]!.computeStartNs, 110);
  assert.equal(requests[0]!.endNs, 170);
  assert.equal(requests[1]!.success, false);
  assert.equal(requests[1]!.failure, undefined, 'a backend failure (BACKEND)');
});
