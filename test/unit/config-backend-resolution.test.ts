import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseModelConfigText } from '../../src/repository/config/pbtxt';
import { defaultModelFilename, resolveBackend } from '../../src/repository/config/backend-resolution';

interface Case {
  name: string;
  text: string;
  files: string[];
  dir?: string;
  want?: [backend: string, platform: string, file: string];
  error?: string;
}

const cases: Case[] = [
  { name: 'model.onnx detected', text: '', files: ['model.onnx'], want: ['onnxruntime', 'onnxruntime_onnx', 'model.onnx'] },
  { name: 'onnxruntime backend fills platform', text: 'backend: "onnxruntime"', files: [], want: ['onnxruntime', 'onnxruntime_onnx', 'model.onnx'] },
  { name: 'onnxruntime_onnx platform fills backend', text: 'platform: "onnxruntime_onnx"', files: [], want: ['onnxruntime', 'onnxruntime_onnx', 'model.onnx'] },
  { name: 'model file name decides', text: 'default_model_filename: "model.onnx"', files: [], want: ['onnxruntime', 'onnxruntime_onnx', 'model.onnx'] },
  {
    name: 'custom onnx file name kept',
    text: 'backend: "onnxruntime" default_model_filename: "net.onnx"',
    files: [],
    want: ['onnxruntime', 'onnxruntime_onnx', 'net.onnx'],
  },
  { name: 'model.py detected', text: '', files: ['model.py'], want: ['python', '', 'model.py'] },
  { name: 'python backend', text: 'backend: "python"', files: [], want: ['python', '', 'model.py'] },
  // FIL: the file is Triton FIL's default for the model_type parameter (its default type is 'xgboost').
  { name: 'fil without model_type', text: 'backend: "fil"', files: [], want: ['fil', '', 'xgboost.model'] },
  {
    name: 'fil lightgbm',
    text: 'backend: "fil" parameters [{ key: "model_type" value: { string_value: "lightgbm" } }]',
    files: [],
    want: ['fil', '', 'model.txt'],
  },
  {
    name: 'fil xgboost_json',
    text: 'backend: "fil" parameters [{ key: "model_type" value: { string_value: "xgboost_json" } }]',
    files: [],
    want: ['fil', '', 'xgboost.json'],
  },
  {
    name: 'fil xgboost_ubj',
    text: 'backend: "fil" parameters [{ key: "model_type" value: { string_value: "xgboost_ubj" } }]',
    files: [],
    want: ['fil', '', 'xgboost.ubj'],
  },
  {
    name: 'fil treelite_checkpoint',
    text: 'backend: "fil" parameters [{ key: "model_type" value: { string_value: "treelite_checkpoint" } }]',
    files: [],
    want: ['fil', '', 'checkpoint.tl'],
  },
  { name: 'fil file name kept', text: 'backend: "fil" default_model_filename: "trees.json"', files: [], want: ['fil', '', 'trees.json'] },
  {
    name: 'fil unknown model_type: left for the backend to refuse',
    text: 'backend: "fil" parameters [{ key: "model_type" value: { string_value: "catboost" } }]',
    files: [],
    want: ['fil', '', ''],
  },
  { name: 'model.plan detected', text: '', files: ['model.plan'], want: ['tensorrt', 'tensorrt_plan', 'model.plan'] },
  { name: 'tensorrt_plan platform', text: 'platform: "tensorrt_plan"', files: [], want: ['tensorrt', 'tensorrt_plan', 'model.plan'] },
  // Triton fills the file name only when it fills the platform in the PyTorch branch itself.
  { name: 'model.pt detected, file name left empty', text: '', files: ['model.pt'], want: ['pytorch', 'pytorch_libtorch', ''] },
  { name: 'pytorch_libtorch platform leaves file name empty', text: 'platform: "pytorch_libtorch"', files: [], want: ['pytorch', 'pytorch_libtorch', ''] },
  { name: 'pytorch backend', text: 'backend: "pytorch"', files: [], want: ['pytorch', 'pytorch_libtorch', 'model.pt'] },
  { name: 'model.xml detected', text: '', files: ['model.xml'], want: ['openvino', '', 'model.xml'] },
  { name: 'savedmodel directory', text: '', files: ['model.savedmodel'], want: ['tensorflow', 'tensorflow_savedmodel', 'model.savedmodel'] },
  { name: 'graphdef file', text: '', files: ['model.graphdef'], want: ['tensorflow', 'tensorflow_graphdef', 'model.graphdef'] },
  {
    name: 'tensorflow backend needs a platform',
    text: 'backend: "tensorflow" platform: "tensorflow_graphdef"',
    files: [],
    want: ['tensorflow', 'tensorflow_graphdef', 'model.graphdef'],
  },
  { name: 'ensemble untouched', text: 'platform: "ensemble"', files: [], want: ['', 'ensemble', ''] },
  { name: 'onnx wins over python when both present', text: '', files: ['model.py', 'model.onnx'], want: ['onnxruntime', 'onnxruntime_onnx', 'model.onnx'] },
  {
    name: 'files ignored when platform given',
    text: 'platform: "onnxruntime_onnx"',
    files: ['model.py'],
    want: ['onnxruntime', 'onnxruntime_onnx', 'model.onnx'],
  },
  { name: 'custom backend from <x>.<backend> dir', text: '', files: [], dir: 'm.identity', want: ['identity', '', 'model.identity'] },
  { name: 'custom backend split at first dot', text: '', files: [], dir: 'a.b.c', want: ['b.c', '', 'model.b.c'] },
  { name: 'custom backend named in config', text: 'backend: "identity"', files: [], want: ['identity', '', ''] },
  {
    name: 'nothing to go on',
    text: '',
    files: ['weights.bin'],
    dir: 'plain',
    error:
      "Invalid model name: Could not determine backend for model 'plain' with no backend in model configuration. Expected model name of the form 'model.<backend_name>'.",
  },
  { name: 'unknown platform', text: 'platform: "caffe2"', files: [], dir: 'c', error: "unexpected platform type 'caffe2' for c" },
];

for (const c of cases) {
  test(`resolveBackend: ${c.name}`, () => {
    const config = parseModelConfigText(c.text, 'x');
    const dir = c.dir ?? 'model_dir';
    if (c.error !== undefined) {
      assert.throws(() => resolveBackend(config, c.files, dir), { code: 'INVALID_ARG', message: c.error });
      return;
    }
    const before = structuredClone(config);
    const out = resolveBackend(config, c.files, dir);
    assert.deepEqual([out.backend, out.platform, out.default_model_filename], c.want);
    assert.equal(out.name, dir);
    assert.deepEqual(config, before, 'input not modified');
  });
}

test('resolveBackend: model.plan must be a file, model.savedmodel a directory', () => {
  const none = parseModelConfigText('', 'x');
  assert.throws(() => resolveBackend(none, ['model.plan'], 'm', { isDirectory: () => true }), /Invalid model name/);
  assert.throws(() => resolveBackend(none, ['model.savedmodel'], 'm', { isDirectory: () => false }), /Invalid model name/);
  const tf = resolveBackend(none, ['model.savedmodel'], 'm', { isDirectory: () => true });
  assert.equal(tf.platform, 'tensorflow_savedmodel');
});

test('defaultModelFilename', () => {
  const table: [string, string, string][] = [
    ['onnxruntime', 'onnxruntime_onnx', 'model.onnx'],
    ['tensorrt', '', 'model.plan'],
    ['pytorch', 'pytorch_libtorch', 'model.pt'],
    ['pytorch', 'torch_aoti', 'model.pt2'],
    ['python', '', 'model.py'],
    ['openvino', '', 'model.xml'],
    ['tensorflow', 'tensorflow_savedmodel', 'model.savedmodel'],
    ['tensorflow', 'tensorflow_graphdef', 'model.graphdef'],
    ['', 'ensemble', ''],
    ['custom', '', ''],
  ];
  for (const [b, p, f] of table) assert.equal(defaultModelFilename(b, p), f, `${b}/${p}`);
});
