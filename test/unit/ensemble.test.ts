/**
 * The ensemble plan's load-time checks (Triton's texts) and the ensemble
 * scheduler over a real arena, with composing "models" answered in-process
 * by the route: composition, outputs subset, a failing step, and every
 * arena block freed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileValidationPlan } from '../../src/request/validation-plan';
import { Arena } from '../../src/dataplane/arena';
import type { ModelConfig } from '../../src/core/model-config';
import { compileEnsemblePlan } from '../../src/scheduler/ensemble-plan';
import { EnsembleScheduler, type EnsembleServices } from '../../src/scheduler/ensemble-scheduler';
import type { InferRequest, InferResponse, TensorRef } from '../../src/core/request';

type Io = [string, string, number[]];
function model(name: string, mbs: number, inputs: Io[], outputs: Io[], extra: Partial<ModelConfig> = {}): ModelConfig {
  return {
    name,
    platform: '',
    backend: 'x',
    runtime: '',
    version_policy: {},
    max_batch_size: mbs,
    input: inputs.map(([n, t, d]) => ({
      name: n,
      data_type: t,
      format: 'FORMAT_NONE',
      dims: d,
      is_shape_tensor: false,
      allow_ragged_batch: false,
      optional: false,
      is_non_linear_format_io: false,
    })),
    output: outputs.map(([n, t, d]) => ({ name: n, data_type: t, dims: d, label_filename: '', is_shape_tensor: false, is_non_linear_format_io: false })),
    batch_input: [],
    batch_output: [],
    instance_group: [],
    default_model_filename: '',
    cc_model_filenames: {},
    metric_tags: {},
    parameters: {},
    model_warmup: [],
    ...extra,
  } as ModelConfig;
}

/** `addsub`: (A, B) → (A+B, A-B), INT32 [4]. */
const ADDSUB = model(
  'addsub',
  8,
  [
    ['A', 'TYPE_INT32', [4]],
    ['B', 'TYPE_INT32', [4]],
  ],
  [
    ['SUM', 'TYPE_INT32', [4]],
    ['DIFF', 'TYPE_INT32', [4]],
  ],
);

type Step = { model_name: string; model_version: number; input_map: Record<string, string>; output_map: Record<string, string> };
function ensemble(
  steps: Step[],
  inputs: Io[] = [
    ['X', 'TYPE_INT32', [4]],
    ['Y', 'TYPE_INT32', [4]],
  ],
  outputs: Io[] = [
    ['P', 'TYPE_INT32', [4]],
    ['Q', 'TYPE_INT32', [4]],
  ],
  mbs = 8,
): ModelConfig {
  return model('ens', mbs, inputs, outputs, { platform: 'ensemble', backend: '', ensemble_scheduling: { step: steps } });
}
const TWO_STEPS: Step[] = [
  { model_name: 'addsub', model_version: -1, input_map: { A: 'X', B: 'Y' }, output_map: { SUM: 's', DIFF: 'd' } },
  { model_name: 'addsub', model_version: -1, input_map: { A: 's', B: 'd' }, output_map: { SUM: 'P', DIFF: 'Q' } },
];

const configs = new Map<string, ModelConfig>([['addsub', ADDSUB]]);
const composing = (e: string, m: string): ModelConfig => {
  const c = configs.get(m);
  if (c === undefined) throw new Error(`ensemble ${e} contains models that are not available or ambiguous: ${m}`);
  return c;
};

test('compileEnsemblePlan: slots, consumers and producers of a two-step chain', () => {
  const plan = compileEnsemblePlan(ensemble(TWO_STEPS), composing);
  const slot = (n: string): number => plan.slotNames.indexOf(n);
  assert.deepEqual(
    plan.steps.map((s) => s.inputSlots),
    [
      [slot('X'), slot('Y')],
      [slot('s'), slot('d')],
    ],
  );
  assert.deepEqual(plan.consumers[slot('s')], [1]);
  assert.equal(plan.producer[slot('X')], -1);
  assert.equal(plan.producer[slot('P')], 1);
  assert.deepEqual(
    plan.outputs.map((o) => o.name),
    ['P', 'Q'],
  );
});

test("compileEnsemblePlan: Triton's texts for mapping, type, shape and batch-size mismatches", () => {
  const step = (x: Partial<Step>): Step[] => [{ ...TWO_STEPS[0]!, ...x }, TWO_STEPS[1]!];
  const cases: [ModelConfig, string][] = [
    [ensemble(step({ input_map: { A: 'X', B: 'Y', C: 'Y' } })), 'in ensemble ens, ensemble tensor Y is mapping to non-existing input C in model addsub'],
    [ensemble(step({ input_map: { A: 'X' } })), 'in ensemble ens, input B in model addsub is not mapped to any ensemble tensors'],
    [
      ensemble(step({ output_map: { SUM: 's', DIFF: 'd', NOPE: 'z' } })),
      'in ensemble ens, ensemble tensor z is mapped from non-existing output NOPE in model addsub',
    ],
    [
      ensemble(TWO_STEPS, [
        ['X', 'TYPE_FP32', [4]],
        ['Y', 'TYPE_INT32', [4]],
      ]),
      'in ensemble ens, ensemble tensor X: inconsistent data type: TYPE_FP32 is inferred from model ens while TYPE_INT32 is inferred from model addsub',
    ],
    [
      ensemble(TWO_STEPS, [
        ['X', 'TYPE_INT32', [5]],
        ['Y', 'TYPE_INT32', [4]],
      ]),
      'in ensemble ens, ensemble tensor X: inconsistent shape: [-1,5] is inferred from model ens while [-1,4] is inferred from model addsub',
    ],
    [
      ensemble(TWO_STEPS, undefined, undefined, 16),
      'ensemble ens allows maximum batch size 16, but it contains model addsub which only allows maximum batch size to be 8',
    ],
    [ensemble(step({ model_name: 'ghost' })), 'ensemble ens contains models that are not available or ambiguous: ghost'],
  ];
  for (const [config, message] of cases) assert.throws(() => compileEnsemblePlan(config, composing), { message });
  // A -1 dim matches anything; a non-batching model's [-1,4] matches a batching [4].
  assert.doesNotThrow(() =>
    compileEnsemblePlan(
      ensemble(TWO_STEPS, [
        ['X', 'TYPE_INT32', [-1]],
        ['Y', 'TYPE_INT32', [4]],
      ]),
      composing,
    ),
  );
});

/** Services whose route runs `addsub` in-process (asynchronously), failing when A[0] is 99. */
function services(arena: Arena, log: InferRequest[], cancelled: InferRequest[] = []): EnsembleServices {
  const plan = compileValidationPlan(ADDSUB);
  const alloc = (name: string, values: number[], shape: number[]): TensorRef => {
    const { offset, gen } = arena.alloc(values.length * 4);
    new Int32Array(arena.bytes(offset, values.length * 4).buffer, offset, values.length).set(values);
    return { name, datatype: 'INT32', shape, offset, gen, byteSize: values.length * 4 };
  };
  return {
    arena,
    composingConfig: composing,
    resolve: () => ({ version: 1, plan }),
    cancel: (r) => cancelled.push(r),
    route: (r, respond) => {
      log.push(r);
      setImmediate(() => {
        const read = (n: string): Int32Array => {
          const t = r.inputs.find((i) => i.name === n)!;
          return new Int32Array(arena.bytes(t.offset, t.byteSize).slice().buffer);
        };
        const a = read('A');
        const b = read('B');
        if (a[0] === 99) {
          respond({ outputs: [], error: { code: 'INVALID_ARG', message: 'addsub refuses 99' }, final: true });
          return;
        }
        const shape = r.inputs[0]!.shape;
        respond({
          outputs: [
            alloc(
              'SUM',
              [...a].map((x, i) => x + b[i]!),
              shape,
            ),
            alloc(
              'DIFF',
              [...a].map((x, i) => x - b[i]!),
              shape,
            ),
          ],
          final: true,
        });
      });
    },
  };
}

function run(
  s: EnsembleScheduler,
  arena: Arena,
  x: number[],
  y: number[],
  requestedOutputs: string[] | null = null,
  sent: (r: InferRequest) => void = () => undefined,
): Promise<InferResponse> {
  const inputs = [
    ['X', x],
    ['Y', y],
  ].map(([name, v]) => {
    const values = v as number[];
    const { offset, gen } = arena.alloc(16);
    new Int32Array(arena.bytes(offset, 16).buffer, offset, 4).set(values);
    return { name: name as string, datatype: 'INT32' as const, shape: [1, 4], offset, gen, byteSize: 16 };
  });
  const request: InferRequest = { id: 'r', model: 'ens', version: 1, latest: false, batchSize: 1, inputs, requestedOutputs, parameters: {}, arrivalNs: 0 };
  return new Promise((resolve) => {
    s.enqueue(request, (response) => {
      for (const t of inputs) arena.free(t); // what the frontend does after the final response
      resolve(response);
    });
    sent(request);
  });
}

const valuesOf = (arena: Arena, t: TensorRef): number[] => [...new Int32Array(arena.bytes(t.offset, t.byteSize).slice().buffer)];

test('EnsembleScheduler: steps compose inside the server, tensors handed over without copies, every block freed', async () => {
  const arena = Arena.create();
  const base = arena.usedBytes();
  const log: InferRequest[] = [];
  const s = new EnsembleScheduler(ensemble(TWO_STEPS), services(arena, log));
  const r = await run(s, arena, [1, 2, 3, 4], [1, 1, 1, 1]);
  assert.equal(r.error, undefined);
  assert.deepEqual(
    r.outputs.map((o) => [o.name, valuesOf(arena, o)]),
    [
      ['P', [2, 4, 6, 8]],
      ['Q', [2, 2, 2, 2]],
    ],
  );
  assert.deepEqual(
    log.map((q) => [q.model, q.version, q.batchSize, q.inputs.map((i) => i.name), q.requestedOutputs]),
    [
      ['addsub', 1, 1, ['A', 'B'], ['SUM', 'DIFF']],
      ['addsub', 1, 1, ['A', 'B'], ['SUM', 'DIFF']],
    ],
  );
  for (const o of r.outputs) arena.free(o);
  assert.equal(arena.usedBytes(), base, "intermediates freed, outputs were the requester's");

  const only = await run(s, arena, [1, 2, 3, 4], [1, 1, 1, 1], ['Q']);
  assert.deepEqual(
    only.outputs.map((o) => o.name),
    ['Q'],
  );
  for (const o of only.outputs) arena.free(o);
  assert.equal(arena.usedBytes(), base, 'an output not asked for is freed too');
  assert.equal(s.inflightCount(), 0);
  await s.stop();
});

test("EnsembleScheduler: a failing step fails the request with the step's message prefixed with the ensemble, nothing leaks", async () => {
  const arena = Arena.create();
  const base = arena.usedBytes();
  const s = new EnsembleScheduler(ensemble(TWO_STEPS), services(arena, []));
  // Step 1 gets X=[98..] + Y=[1..] = 99 in SUM: step 2 fails.
  const r = await run(s, arena, [98, 0, 0, 0], [1, 0, 0, 0]);
  assert.deepEqual(r, { outputs: [], error: { code: 'INVALID_ARG', message: "in ensemble 'ens', addsub refuses 99" }, final: true });
  assert.equal(arena.usedBytes(), base);
  await s.stop();
  const late = await run(s, arena, [1, 1, 1, 1], [1, 1, 1, 1]);
  assert.equal(late.error?.code, 'UNAVAILABLE', 'a stopped ensemble admits nothing');
});

test('EnsembleScheduler: a cancelled request cancels its running step, starts no other, ends CANCELLED, nothing leaks', async () => {
  const arena = Arena.create();
  const base = arena.usedBytes();
  const log: InferRequest[] = [];
  const cancelled: InferRequest[] = [];
  const failures: (string | undefined)[] = [];
  const s = new EnsembleScheduler(ensemble(TWO_STEPS), services(arena, log, cancelled), {
    requestDone: (_r, st) => failures.push(st.failure),
  });
  let request: InferRequest | undefined;
  const r = await run(s, arena, [1, 2, 3, 4], [1, 1, 1, 1], null, (q) => {
    request = q;
    s.cancel(q);
    s.cancel(q); // twice: one cancel of the step
  });
  assert.equal(r.error?.code, 'CANCELLED');
  assert.equal(
    r.error?.message,
    "in ensemble 'ens', [request id: r] request for model 'ens' version 1 was cancelled between its steps (its client cancelled it or went away)",
  );
  assert.deepEqual(log.length, 1, 'the second step never started');
  assert.deepEqual(cancelled, [log[0]], 'the running step was cancelled in its model');
  assert.deepEqual(failures, ['CANCELED']);
  assert.equal(arena.usedBytes(), base, "the step's outputs were freed");
  s.cancel(request!); // finished: nothing
  assert.deepEqual(cancelled.length, 1);
  await s.stop();
});

/** Services whose route holds each composing request until the test answers it (addsub on the spot). */
function heldServices(arena: Arena, held: { r: InferRequest; answer: () => void }[]): EnsembleServices {
  const inner = services(arena, []);
  return {
    ...inner,
    route: (r, respond) => {
      held.push({ r, answer: () => inner.route(r, respond) });
    },
  };
}

test('EnsembleScheduler max_inflight_requests: a step over the limit waits (not refused) until a request of that step ends', async () => {
  const arena = Arena.create();
  const base = arena.usedBytes();
  const held: { r: InferRequest; answer: () => void }[] = [];
  const config = ensemble(TWO_STEPS);
  config.ensemble_scheduling!.max_inflight_requests = 1;
  const s = new EnsembleScheduler(config, heldServices(arena, held));
  const results = [run(s, arena, [1, 1, 1, 1], [0, 0, 0, 0]), run(s, arena, [2, 2, 2, 2], [0, 0, 0, 0]), run(s, arena, [3, 3, 3, 3], [0, 0, 0, 0])];
  const inputX = (r: InferRequest): number => new Int32Array(arena.bytes(r.inputs[0]!.offset, 16).slice().buffer)[0]!;
  // Step 1 of three requests, limit 1: one is sent, two wait.
  assert.equal(held.length, 1);
  assert.equal(inputX(held[0]!.r), 1);
  const answer = async (): Promise<void> => {
    held.shift()!.answer();
    await new Promise((r) => setImmediate(r)); // the in-process addsub answers on the next turn
  };
  await answer(); // request 1 step 1 ends: its step 2 starts, and request 2's step 1 gets the slot
  assert.deepEqual(
    held.map((h) => inputX(h.r)),
    [1, 2],
    "request 1's step 2 (A = SUM = 1) and request 2's step 1",
  );
  await answer();
  await answer();
  await answer();
  await answer();
  await answer();
  assert.equal(held.length, 0);
  const out = await Promise.all(results);
  assert.deepEqual(
    out.map((r) => valuesOf(arena, r.outputs[0]!)),
    [
      [2, 2, 2, 2],
      [4, 4, 4, 4],
      [6, 6, 6, 6],
    ],
    'every request ran both steps',
  );
  for (const r of out) for (const o of r.outputs) arena.free(o);
  assert.equal(arena.usedBytes(), base);
  await s.stop();
});

test('EnsembleScheduler max_inflight_requests: slots come back from failed requests too; nothing leaks', async () => {
  const arena = Arena.create();
  const base = arena.usedBytes();
  const held: { r: InferRequest; answer: () => void }[] = [];
  // Two independent steps reading the inputs; limit 1: the second request's steps queue behind the first's.
  const parallel: Step[] = [
    { model_name: 'addsub', model_version: -1, input_map: { A: 'X', B: 'Y' }, output_map: { SUM: 'P' } },
    { model_name: 'addsub', model_version: -1, input_map: { A: 'Y', B: 'X' }, output_map: { DIFF: 'Q' } },
  ];
  const config = ensemble(parallel);
  config.ensemble_scheduling!.max_inflight_requests = 1;
  const s = new EnsembleScheduler(config, heldServices(arena, held));
  const failing = run(s, arena, [99, 0, 0, 0], [0, 0, 0, 0]); // step 1 (A = X = 99) fails; step 2 (A = Y = 0) passes
  const ok = run(s, arena, [1, 1, 1, 1], [1, 1, 1, 1]);
  assert.equal(held.length, 2, "each step of the first request holds its step's one slot");
  held.shift()!.answer(); // step 1 of the failing request: INVALID_ARG
  await new Promise((r) => setImmediate(r));
  // The ok request's step 1 got the slot; the failing request waits for its step 2.
  assert.equal(held.length, 2);
  while (held.length > 0) {
    held.shift()!.answer();
    await new Promise((r) => setImmediate(r));
  }
  assert.deepEqual((await failing).error, { code: 'INVALID_ARG', message: "in ensemble 'ens', addsub refuses 99" });
  const r = await ok;
  assert.equal(r.error, undefined);
  for (const o of r.outputs) arena.free(o);
  assert.equal(arena.usedBytes(), base);
  assert.equal(s.inflightCount(), 0);
});

test('EnsembleScheduler max_inflight_requests: a step that waited while its request failed is never sent', async () => {
  const arena = Arena.create();
  const base = arena.usedBytes();
  const held: { r: InferRequest; answer: () => void }[] = [];
  const sent: InferRequest[] = [];
  const parallel: Step[] = [
    { model_name: 'addsub', model_version: -1, input_map: { A: 'X', B: 'Y' }, output_map: { SUM: 'P' } },
    { model_name: 'addsub', model_version: -1, input_map: { A: 'Y', B: 'X' }, output_map: { DIFF: 'Q' } },
  ];
  const config = ensemble(parallel);
  config.ensemble_scheduling!.max_inflight_requests = 1;
  const inner = heldServices(arena, held);
  const s = new EnsembleScheduler(config, { ...inner, route: (r, respond) => (sent.push(r), inner.route(r, respond)) });
  const first = run(s, arena, [1, 1, 1, 1], [1, 1, 1, 1]);
  const failing = run(s, arena, [99, 0, 0, 0], [0, 0, 0, 0]); // its step 1 (A = X = 99) fails
  const settle = (): Promise<void> => new Promise((r) => setImmediate(r));
  held.shift()!.answer(); // first's step 1 ends: failing's step 1 gets the slot
  await settle();
  held.pop()!.answer(); // failing's step 1: INVALID_ARG, while its step 2 still waits behind first's
  await settle();
  held.shift()!.answer(); // first's step 2 ends: failing's step 2 gets the slot, and is not sent
  await settle();
  assert.equal(held.length, 0);
  assert.equal(sent.length, 3, "failing's step 2 never reached its model");
  assert.deepEqual((await failing).error, { code: 'INVALID_ARG', message: "in ensemble 'ens', addsub refuses 99" });
  const r = await first;
  assert.equal(r.error, undefined);
  for (const o of r.outputs) arena.free(o);
  assert.equal(arena.usedBytes(), base);
  assert.equal(s.inflightCount(), 0);
});
