import { test } from 'node:test';
import assert from 'node:assert/strict';
import { modelMetadataJson } from '../../src/frontend/model-metadata';
import type { ModelConfig } from '../../src/core/model-config';

function config(fields: Record<string, unknown>): ModelConfig {
  return { name: 'simple', platform: '', backend: '', max_batch_size: 0, input: [], output: [], ...fields } as unknown as ModelConfig;
}

const rows: { name: string; config: ModelConfig; versions: string[]; json: string }[] = [
  {
    name: 'batching ONNX model (§1.6 example)',
    config: config({
      platform: 'onnxruntime_onnx',
      backend: 'onnxruntime',
      max_batch_size: 8,
      input: [{ name: 'INPUT0', data_type: 'TYPE_INT32', dims: [16] }],
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_INT32', dims: [16] }],
    }),
    versions: ['1', '2'],
    json:
      '{"name":"simple","versions":["1","2"],"platform":"onnxruntime_onnx",' +
      '"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[-1,16]}],"outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[-1,16]}]}',
  },
  {
    name: 'python model: platform falls back to backend; TYPE_STRING is BYTES; no batch dim',
    config: config({
      backend: 'python',
      input: [
        { name: 'A', data_type: 'TYPE_STRING', dims: [-1] },
        { name: 'B', data_type: 'TYPE_FP16', dims: [2, 3] },
      ],
      output: [{ name: 'C', data_type: 'TYPE_BOOL', dims: [1] }],
    }),
    versions: ['3'],
    json:
      '{"name":"simple","versions":["3"],"platform":"python","inputs":[{"name":"A","datatype":"BYTES","shape":[-1]},' +
      '{"name":"B","datatype":"FP16","shape":[2,3]}],"outputs":[{"name":"C","datatype":"BOOL","shape":[1]}]}',
  },
  {
    name: 'ensemble, no versions ready',
    config: config({ platform: 'ensemble' }),
    versions: [],
    json: '{"name":"simple","versions":[],"platform":"ensemble","inputs":[],"outputs":[]}',
  },
];

for (const row of rows) {
  test(`modelMetadataJson: ${row.name}`, () => {
    assert.equal(modelMetadataJson(row.config, row.versions), row.json);
  });
}
