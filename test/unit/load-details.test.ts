import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseModelConfigText } from '../../src/repository/config/pbtxt';
import { autoCompleteDetail, backendDetail, configSourceDetail, defaultsDetail } from '../../src/repository/load-details';
import type { ModelConfig } from '../../src/core/model-config';

const cfg = (text: string): ModelConfig => parseModelConfigText(`name: "m"\n${text}`, 'm/config.pbtxt');
const IO = 'input [ { name: "A" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "B" data_type: TYPE_FP32 dims: [ 4 ] } ]';

const CASES: [string, () => string | undefined, string | undefined][] = [
  ['config read', () => configSourceDetail('m', '/r/m/config.pbtxt', 'file'), "model 'm': reading config /r/m/config.pbtxt"],
  [
    'config from the load request',
    () => configSourceDetail('m', '/r/m/config.pbtxt', 'override'),
    "model 'm': config from the load request; /r/m/config.pbtxt is not read",
  ],
  [
    'backend from files',
    () =>
      backendDetail('m', cfg(''), { ...cfg(''), backend: 'onnxruntime', platform: 'onnxruntime_onnx', default_model_filename: 'model.onnx' }, 'm/1/', [
        'model.onnx',
      ]),
    "model 'm': backend 'onnxruntime', platform 'onnxruntime_onnx', default_model_filename 'model.onnx'; backend, platform, default_model_filename filled in from the files in m/1/: model.onnx",
  ],
  [
    'backend as written',
    () =>
      backendDetail('m', cfg('backend: "python" default_model_filename: "model.py"'), cfg('backend: "python" default_model_filename: "model.py"'), 'm/1/', [
        'model.py',
      ]),
    "model 'm': backend 'python', platform '', default_model_filename 'model.py', as the config says",
  ],
  [
    'auto-complete filled',
    () => autoCompleteDetail('m', cfg(''), cfg(`max_batch_size: 8 ${IO} dynamic_batching {}`), '/r/m/1/model.onnx', true),
    "model 'm': auto-complete from /r/m/1/model.onnx: filled max_batch_size 8; input A; output B; dynamic_batching {}",
  ],
  [
    'auto-complete, nothing to fill',
    () => autoCompleteDetail('m', cfg(IO), cfg(IO), '/r/m/1/model.onnx', true),
    "model 'm': auto-complete from /r/m/1/model.onnx: nothing to fill; the config matches it",
  ],
  [
    'auto-complete off',
    () => autoCompleteDetail('m', cfg(IO), cfg(IO), '/r/m/1/model.onnx', false),
    "model 'm': auto-complete is off (--disable-auto-complete-config); /r/m/1/model.onnx is only checked against the config",
  ],
  [
    'instance groups written: no default to report',
    () => defaultsDetail('m', cfg('instance_group [ { count: 1 } ]'), cfg('instance_group [ { count: 1 } ]')),
    undefined,
  ],
];

for (const [name, make, want] of CASES) {
  test(`load detail: ${name}`, () => assert.equal(make(), want));
}
