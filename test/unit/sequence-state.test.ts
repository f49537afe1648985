import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Arena } from '../../src/dataplane/arena';
import { compileStates, SequenceStates } from '../../src/scheduler/sequence-state';
import { config, request } from './scheduler-test-kit';

function withStates(state: unknown[], maxBatchSize = 4): ReturnType<typeof config> {
  const c = config(maxBatchSize);
  c.sequence_batching = { state } as never;
  return c;
}

const zero = { input_name: 'S_IN', output_name: 'S_OUT', data_type: 'TYPE_FP32', dims: [2], initial_state: [{ data_type: 'TYPE_FP32', dims: [2], zero_data: true, name: 'z' }] };

const compileCases: { name: string; state: unknown[]; maxBatchSize?: number; want?: { shape: number[]; bytes: number }; error?: RegExp }[] = [
  { name: 'zero_data, batching model: batch dim 1 in front', state: [zero], want: { shape: [1, 2], bytes: 8 } },
  { name: 'zero_data, non-batching model', state: [zero], maxBatchSize: 0, want: { shape: [2], bytes: 8 } },
  { name: 'no initial_state: zeros of the state dims', state: [{ ...zero, initial_state: undefined, dims: [3] }], want: { shape: [1, 3], bytes: 12 } },
  { name: 'missing output_name', state: [{ ...zero, output_name: '' }], error: /must specify both input_name and output_name/ },
  { name: 'variable dims without an initial state', state: [{ ...zero, initial_state: undefined, dims: [-1] }], error: /needs fixed dims/ },
  { name: 'data_file without the model directory', state: [{ ...zero, initial_state: [{ data_type: 'TYPE_FP32', dims: [2], data_file: 'x.bin' }] }], error: /needs the model directory/ },
];

for (const c of compileCases) {
  test(`compileStates: ${c.name}`, () => {
    const cfg = withStates(c.state, c.maxBatchSize);
    if (c.error !== undefined) {
      assert.throws(() => compileStates(cfg), c.error);
      return;
    }
    const [spec] = compileStates(cfg);
    assert.deepEqual(spec!.initialShape, c.want!.shape);
    assert.equal(spec!.initialBytes.byteLength, c.want!.bytes);
    assert.ok(spec!.initialBytes.every((b) => b === 0));
  });
}

test('SequenceStates: inject adds the state input and asks for the state output; update takes it and hides it', () => {
  const arena = Arena.create();
  const states = new SequenceStates(compileStates(withStates([zero])), arena);
  const r = states.inject({ ...request('1'), requestedOutputs: null }, 'k', true, ['OUT']);
  assert.deepEqual(r.inputs.map((t) => t.name), ['x', 'S_IN']);
  assert.deepEqual(r.requestedOutputs, ['OUT', 'S_OUT']);
  const { offset, gen } = arena.alloc(8);
  const response = { outputs: [{ name: 'S_OUT', datatype: 'FP32' as const, shape: [1, 2], offset, gen, byteSize: 8 }], final: true };
  states.update(response, request('1'), 'k', false, ['OUT']);
  assert.deepEqual(response.outputs, []);
  const next = states.inject(request('2'), 'k', false, ['OUT']);
  assert.equal(next.inputs[1]!.offset, offset, 'the output block became the next state');
  states.dropAll();
});
