import { test } from 'node:test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { Arena } from '../../src/dataplane/arena';
import { compileStates, SequenceStates } from '../../src/scheduler/sequence-state';
import { config, request } from './scheduler-test-kit';

function withStates(state: unknown[], maxBatchSize = 4): ReturnType<typeof config> {
  const c = config(maxBatchSize);
  c.sequence_batching = { state } as never;
  return c;
}

const zero = {
  input_name: 'S_IN',
  output_name: 'S_OUT',
  data_type: 'TYPE_FP32',
  dims: [2],
  initial_state: [{ data_type: 'TYPE_FP32', dims: [2], zero_data: true, name: 'z' }],
};

const str = { input_name: 'T_IN', output_name: 'T_OUT', data_type: 'TYPE_STRING', dims: [2] };
const init = (extra: Record<string, unknown>): Record<string, unknown>[] => [{ data_type: 'TYPE_FP32', dims: [2], name: 'i', ...extra }];

const compileCases: {
  name: string;
  state: unknown[];
  maxBatchSize?: number;
  files?: Record<string, Uint8Array>;
  want?: { shape: number[]; bytes: number[] };
  error?: string | RegExp;
}[] = [
  { name: 'zero_data, batching model: batch dim 1 in front', state: [zero], want: { shape: [1, 2], bytes: new Array(8).fill(0) } },
  { name: 'zero_data, non-batching model', state: [zero], maxBatchSize: 0, want: { shape: [2], bytes: new Array(8).fill(0) } },
  {
    name: 'no initial_state: zeros of the state dims',
    state: [{ ...zero, initial_state: undefined, dims: [3] }],
    want: { shape: [1, 3], bytes: new Array(12).fill(0) },
  },
  {
    name: 'no initial_state: a variable dim starts as 1 (Triton)',
    state: [{ ...zero, initial_state: undefined, dims: [-1, 2] }],
    want: { shape: [1, 1, 2], bytes: new Array(8).fill(0) },
  },
  { name: 'missing output_name', state: [{ ...zero, output_name: '' }], error: /must specify both input_name and output_name/ },
  { name: 'data_file without the model directory', state: [{ ...zero, initial_state: init({ data_file: 'x.bin' }) }], error: /needs the model directory/ },
  {
    name: 'data_file: its first bytes (Triton reads what the dims need)',
    state: [{ ...zero, initial_state: init({ data_file: 'f.bin' }) }],
    files: { 'f.bin': Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9]) },
    want: { shape: [1, 2], bytes: [1, 2, 3, 4, 5, 6, 7, 8] },
  },
  {
    name: "data_file too short (Triton's text)",
    state: [{ ...zero, initial_state: init({ data_file: 'f.bin' }) }],
    files: { 'f.bin': Uint8Array.from([1, 2, 3]) },
    error: 'initial_state setting expects 8 bytes, but the data provided from f.binonly has 3 bytes.',
  },
  {
    name: 'TYPE_STRING zero_data: an empty string per element',
    state: [{ ...str, initial_state: [{ data_type: 'TYPE_STRING', dims: [2], zero_data: true, name: 'e' }] }],
    want: { shape: [1, 2], bytes: new Array(8).fill(0) },
  },
  { name: 'TYPE_STRING without initial_state: empty strings', state: [{ ...str }], maxBatchSize: 0, want: { shape: [2], bytes: new Array(8).fill(0) } },
  {
    name: 'TYPE_STRING data_file: its elements as they are',
    state: [{ ...str, initial_state: [{ data_type: 'TYPE_STRING', dims: [2], data_file: 's.bin', name: 's' }] }],
    files: { 's.bin': Uint8Array.from([1, 0, 0, 0, 0x61, 0, 0, 0, 0]) },
    want: { shape: [1, 2], bytes: [1, 0, 0, 0, 0x61, 0, 0, 0, 0] },
  },
  {
    name: 'TYPE_STRING data_file with another element count',
    state: [{ ...str, initial_state: [{ data_type: 'TYPE_STRING', dims: [2], data_file: 's.bin', name: 's' }] }],
    files: { 's.bin': Uint8Array.from([1, 0, 0, 0, 0x61]) },
    error: /holds 1 TYPE_STRING element \(each a 4-byte little-endian length, then its bytes\), expected 2 for dims \[1,2\]/,
  },
  {
    name: 'TYPE_STRING data_file cut inside an element',
    state: [{ ...str, initial_state: [{ data_type: 'TYPE_STRING', dims: [2], data_file: 's.bin', name: 's' }] }],
    files: { 's.bin': Uint8Array.from([9, 0, 0, 0, 0x61]) },
    error: /holds no whole TYPE_STRING elements/,
  },
  {
    name: "two initial states (Triton's text)",
    state: [{ ...zero, initial_state: [...init({ zero_data: true }), ...init({ zero_data: true })] }],
    error: "initial_state field for state input 'S_IN' must contain exactly one or zero element. Found '2' elements.",
  },
  {
    name: "initial state of another type (Triton's text)",
    state: [{ ...zero, initial_state: init({ data_type: 'TYPE_INT32', zero_data: true }) }],
    error: "The data type used for 'initial_state' field of state 'S_IN' does not match the state data type.",
  },
  {
    name: "initial state without a name (Triton's text)",
    state: [{ ...zero, initial_state: init({ name: '', zero_data: true }) }],
    error: "Field 'name' must be set when using initial_state for state input 'S_IN'.",
  },
  {
    name: "initial state of another rank (Triton's text)",
    state: [{ ...zero, initial_state: init({ dims: [2, 1], zero_data: true }) }],
    error: "Number of dimensions in 'initial_state' doesn't match the size of 'state' dimensions for state input 'S_IN'. 2 != 1",
  },
  {
    name: "initial state with a variable dim (Triton's text)",
    state: [{ ...zero, dims: [-1], initial_state: init({ dims: [-1], zero_data: true }) }],
    error: "'initial_state' field for state input name 'S_IN' contains variable dimensions.",
  },
  {
    name: "initial state of other dims (Triton's text)",
    state: [{ ...zero, initial_state: init({ dims: [3], zero_data: true }) }],
    error: "'initial_state' dim for input name 'S_IN' doesn't match 'state' dim description. 3 != 2",
  },
  {
    name: "initial state without zero_data or data_file (Triton's text)",
    state: [{ ...zero, initial_state: init({}) }],
    error: "initial_state setting expects state'S_IN' to have state_data set",
  },
  {
    name: "use_growable_memory without use_same_buffer_for_input_output (Triton's text)",
    state: [{ ...zero, use_growable_memory: true }],
    error: "In order to 'use_growable_memory', you must also enable 'use_single_buffer' for state input name 'S_IN'.",
  },
  {
    name: "use_growable_memory on CPU instances (Triton's text)",
    state: [{ ...zero, use_growable_memory: true, use_same_buffer_for_input_output: true }],
    error:
      "'use_growable_memory' can only work with KIND_GPU model instances right now. Please either change the instance type to KIND_GPU or set 'use_growable_memory' to false for state input 'S_IN'.",
  },
  {
    name: "the same state input twice (Triton's text)",
    state: [zero, { ...zero, output_name: 'S_OUT2' }],
    error: "State input name 'S_IN' specified more than once.",
  },
];

for (const c of compileCases) {
  test(`compileStates: ${c.name}`, () => {
    const cfg = withStates(c.state, c.maxBatchSize);
    let dir: string | undefined;
    if (c.files !== undefined) {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-state-'));
      fs.mkdirSync(path.join(dir, 'initial_state'));
      for (const [f, bytes] of Object.entries(c.files)) fs.writeFileSync(path.join(dir, 'initial_state', f), bytes);
    }
    try {
      if (c.error !== undefined) {
        assert.throws(() => compileStates(cfg, dir), typeof c.error === 'string' ? { message: c.error } : c.error);
        return;
      }
      const [spec] = compileStates(cfg, dir);
      assert.deepEqual(spec!.initialShape, c.want!.shape);
      assert.deepEqual([...spec!.initialBytes], c.want!.bytes);
    } finally {
      if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('SequenceStates: inject adds the state input and asks for the state output; update takes it and hides it', () => {
  const arena = Arena.create();
  const states = new SequenceStates(compileStates(withStates([zero])), arena);
  const r = states.inject({ ...request('1'), requestedOutputs: null }, 'k', true, ['OUT']);
  assert.deepEqual(
    r.inputs.map((t) => t.name),
    ['x', 'S_IN'],
  );
  assert.deepEqual(r.requestedOutputs, ['OUT', 'S_OUT']);
  const { offset, gen } = arena.alloc(8);
  const response = { outputs: [{ name: 'S_OUT', datatype: 'FP32' as const, shape: [1, 2], offset, gen, byteSize: 8 }], final: true };
  states.update(response, request('1'), 'k', false, ['OUT']);
  assert.deepEqual(response.outputs, []);
  const next = states.inject(request('2'), 'k', false, ['OUT']);
  assert.equal(next.inputs[1]!.offset, offset, 'the output block became the next state');
  states.dropAll();
});
