/**
 * The pytorch backend's load-time decisions (src/python-backend/stub/
 * _nt_torch_plan.py, _nt_torch_params.py), run in real Python without
 * torch, table-driven: which forward() argument or result each config
 * tensor is under Triton's three naming conventions and AOTInductor's
 * names, and the texts for configs that cannot load; the parameters'
 * parsing (backend_common's bool and integer rules) and their texts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const STUB = path.resolve(__dirname, '../../../src/python-backend/stub');

interface Case {
  name: string;
  /** Python expression evaluated with P (_nt_torch_plan) and Q (_nt_torch_params) imported. */
  expr: string;
  /** The JSON of the result, or the error text (prefix 'error: '). */
  want: unknown;
}

const io = (name: string, dt = 'TYPE_FP32', dims = [4]) => ({ name, data_type: dt, dims });
const cfg = (inputs: unknown[], outputs: unknown[] = [io('OUTPUT__0')], mbs = 8, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ name: 'm', max_batch_size: mbs, input: inputs, output: outputs, ...extra });
const args2 = `[("a", "Tensor", "tensor"), ("b", "Tensor", "tensor")]`;
const ins = (config: string, forward = args2) =>
  `[(s.name, s.index, s.key) for s in P.torchscript_inputs(json.loads(${JSON.stringify(config)}), "m", ${forward})[0]]`;
const warns = (config: string, forward = args2) => `P.torchscript_inputs(json.loads(${JSON.stringify(config)}), "m", ${forward})[2]`;
const outs = (config: string) => `[(s.name, s.index) for s in P.torchscript_outputs(json.loads(${JSON.stringify(config)}), "m")[0]]`;

const CASES: Case[] = [
  {
    name: 'forward() argument names, in any config order',
    expr: ins(cfg([io('b'), io('a')])),
    want: [
      ['b', 1, null],
      ['a', 0, null],
    ],
  },
  {
    name: '<name>__<index>',
    expr: ins(cfg([io('INPUT__1'), io('INPUT__0')])),
    want: [
      ['INPUT__1', 1, null],
      ['INPUT__0', 0, null],
    ],
  },
  {
    name: 'neither: the config order',
    expr: ins(cfg([io('x'), io('y')])),
    want: [
      ['x', 0, null],
      ['y', 1, null],
    ],
  },
  {
    name: "neither: Triton's warning",
    expr: warns(cfg([io('a'), io('y')])),
    want: [
      "input 'y' or previous input(s) are neither an input argument to the model 'm' nor do they follow the <name>__<index> naming convention. Falling back to enforcing strict ordering from model configuration.",
    ],
  },
  {
    name: 'a Dict[str, Tensor] forward() takes the config names as keys',
    expr: ins(cfg([io('x'), io('y')]), `[("d", "Dict(str, Tensor)", "dict")]`),
    want: [
      ['x', 0, 'x'],
      ['y', 0, 'y'],
    ],
  },
  {
    name: 'input count differs from forward()',
    expr: ins(cfg([io('a')])),
    want: "error: unable to load model 'm', configuration expects 1 inputs, model provides 2",
  },
  {
    name: 'a forward() argument that is not a tensor',
    expr: ins(cfg([io('a'), io('b')]), `[("a", "Tensor", "tensor"), ("b", "int", "other")]`),
    want: "error: An input of type 'int' was detected in the model. Only a single input of type Dict(str, Tensor) or input(s) of type Tensor are supported.",
  },
  {
    name: 'two Dict arguments',
    expr: ins(cfg([io('a'), io('b')]), `[("a", "Tensor", "tensor"), ("b", "Dict(str, Tensor)", "dict")]`),
    want: 'error: Multiple inputs of kind DictType were detected. Only a single input of type Dict(str, Tensor) is supported.',
  },
  { name: 'no inputs', expr: ins(cfg([]), '[]'), want: 'error: model configuration must contain at least one input, none were specified.' },
  {
    name: 'a datatype torch has no tensor for',
    expr: ins(cfg([io('a', 'TYPE_UINT16'), io('b')])),
    want: "error: unsupported datatype TYPE_UINT16 for input 'a' for model 'm'",
  },
  {
    name: 'a 2-D string input with batching',
    expr: ins(cfg([io('a', 'TYPE_STRING', [2]), io('b')])),
    want: "error: Triton only supports 1 dimensional List of String as input for 'a' for model 'm'",
  },
  {
    name: 'a 1-D string input without batching',
    expr: ins(cfg([io('a', 'TYPE_STRING', [-1]), io('b')], undefined, 0)),
    want: [
      ['a', 0, null],
      ['b', 1, null],
    ],
  },
  {
    name: "an index past forward()'s arguments",
    expr: ins(cfg([io('INPUT__0'), io('INPUT__5')])),
    want: "error: input 'INPUT__5' of model 'm' names forward() argument 5, but forward(a, b) takes 2: number the inputs from __0 to __1, or name them after the arguments",
  },
  {
    name: 'two inputs with one index',
    expr: ins(cfg([io('X__0'), io('Y__0')])),
    want: "error: inputs 'X__0' and 'Y__0' of model 'm' both name index 0 of the model: give each input its own <name>__<index>",
  },
  {
    name: 'outputs by <name>__<index>',
    expr: outs(cfg([io('a')], [io('B__1'), io('A__0')])),
    want: [
      ['B__1', 1],
      ['A__0', 0],
    ],
  },
  {
    name: 'outputs in config order otherwise',
    expr: outs(cfg([io('a')], [io('sum'), io('diff')])),
    want: [
      ['sum', 0],
      ['diff', 1],
    ],
  },
  { name: 'no outputs', expr: outs(cfg([io('a')], [])), want: 'error: model configuration must contain at least one output, none were specified.' },
  {
    name: 'named_index: digits only after the first "__"',
    expr: '[P.named_index(n) for n in ["A__3", "A__", "A__x", "A", "A__1__2", "A__\u0663"]]',
    want: [3, null, null, null, null, null],
  },
  {
    name: 'AOTI: ARGS[i], KWARGS[k] and INPUT__n',
    expr: `[(s.name, s.index, s.key) for s in P.aoti_inputs(json.loads(${JSON.stringify(cfg([io('ARGS[1]'), io('INPUT__0'), io('KWARGS[scale]')]))}), "m", "m_0", 2, ["scale"])]`,
    want: [
      ['ARGS[1]', 1, null],
      ['INPUT__0', 0, null],
      ['KWARGS[scale]', 2, 'scale'],
    ],
  },
  {
    name: 'AOTI: a name the package does not have',
    expr: `P.aoti_inputs(json.loads(${JSON.stringify(cfg([io('x')]))}), "m", "m_0", 1, [])`,
    want: 'error: Input "x" for model instance "m_0" is not found in model input map. The package takes \'ARGS[0]\', \'INPUT__0\'.',
  },
  {
    name: 'AOTI: input count',
    expr: `P.aoti_inputs(json.loads(${JSON.stringify(cfg([io('INPUT__0')]))}), "m", "m_0", 2, [])`,
    want: 'error: Failed to load model "m" configuration expects 1 inputs, but model expects 2 inputs.',
  },
  {
    name: 'AOTI: one tensor out is RESULT or OUTPUT__0',
    expr: `[(s.name, s.index) for s in P.aoti_outputs(json.loads(${JSON.stringify(cfg([io('a')], [io('RESULT')]))}), "m", "m_0", None)]`,
    want: [['RESULT', 0]],
  },
  {
    name: 'AOTI: no strings',
    expr: `P.aoti_inputs(json.loads(${JSON.stringify(cfg([io('INPUT__0', 'TYPE_STRING', [])]))}), "m", "m_0", 1, [])`,
    want: "error: unsupported datatype TYPE_STRING for input 'INPUT__0' for model 'm'",
  },
  {
    name: 'parameters: defaults',
    expr: 'vars(Q.parse_parameters({}, "m")) | {"given": []}',
    want: {
      present: false,
      optimized_execution: true,
      inference_mode: true,
      cudnn: true,
      cache_cleaning: false,
      weight_sharing: false,
      tensor_fuser: null,
      jit_profiling: null,
      jit_executor: null,
      intra_op_threads: -1,
      inter_op_threads: -1,
      given: [],
    },
  },
  {
    name: "parameters: Triton's spellings of true and false, inverted DISABLE_ ones",
    expr: `(lambda p: [p.optimized_execution, p.inference_mode, p.cudnn, p.jit_profiling, p.intra_op_threads, p.inter_op_threads])(Q.parse_parameters({"parameters": {
      "DISABLE_OPTIMIZED_EXECUTION": {"string_value": "ON"}, "INFERENCE_MODE": {"string_value": "0"}, "DISABLE_CUDNN": {"string_value": "False"},
      "ENABLE_JIT_PROFILING": {"string_value": "1"}, "INTRA_OP_THREAD_COUNT": {"string_value": " 4 threads"}, "INTER_OP_THREAD_COUNT": {"string_value": "-2"}}}, "m"))`,
    want: [false, false, true, true, 4, -2],
  },
  {
    name: 'parameters: a bool that is not one',
    expr: 'Q.parse_parameters({"parameters": {"ENABLE_WEIGHT_SHARING": {"string_value": "yes"}}}, "m")',
    want: "error: Failed to parse 'ENABLE_WEIGHT_SHARING' parameter for model 'm': failed to convert 'yes' to boolean. Use true or false.",
  },
  {
    name: 'parameters: a count that is not a number',
    expr: 'Q.parse_parameters({"parameters": {"INTRA_OP_THREAD_COUNT": {"string_value": "four"}}}, "m")',
    want: "error: Failed to parse 'INTRA_OP_THREAD_COUNT' parameter for model 'm': failed to convert 'four' to integral number. Use a thread count such as 4.",
  },
  {
    name: 'parameters: GPU-only notes on the CPU',
    expr: 'Q.cpu_notes(Q.parse_parameters({"parameters": {"DISABLE_CUDNN": {"string_value": "true"}, "ENABLE_CACHE_CLEANING": {"string_value": "true"}}}, "m"), "m_0", False)',
    want: [
      "DISABLE_CUDNN has no effect for model instance 'm_0': it runs on the CPU, where cuDNN is not used",
      "ENABLE_CACHE_CLEANING has no effect for model instance 'm_0': it empties the CUDA caching allocator, and this instance runs on the CPU",
    ],
  },
];

const SCRIPT = String.raw`
import json, sys
sys.path.insert(0, sys.argv[1])
import _nt_torch_plan as P
import _nt_torch_params as Q
out = []
for expr in json.loads(sys.stdin.read()):
    try:
        out.append(json.dumps(eval(expr)))
    except (P.PlanError, Q.ParameterError) as e:
        out.append(json.dumps("error: " + str(e)))
print(json.dumps(out))
`;

test("the pytorch backend's naming, checks and parameters, case by case", () => {
  const raw = execFileSync('python3', ['-c', SCRIPT, STUB], { input: JSON.stringify(CASES.map((c) => c.expr)) }).toString();
  const got = (JSON.parse(raw) as string[]).map((s) => JSON.parse(s) as unknown);
  for (const [i, c] of CASES.entries()) assert.deepEqual(got[i], c.want, c.name);
});

test('no torch is imported by the plan and parameter modules (they run where torch is missing)', () => {
  const raw = execFileSync('python3', [
    '-c',
    'import sys; sys.path.insert(0, sys.argv[1]); import _nt_torch_plan, _nt_torch_params; print("torch" in sys.modules)',
    STUB,
  ]);
  assert.equal(raw.toString().trim(), 'False');
});
