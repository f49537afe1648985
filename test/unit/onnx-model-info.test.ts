import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { OnnxParseError, parseOnnxModelInfo, readOnnxModelInfo } from '../../src/backends/onnxruntime/onnx-model-info';
import type { OnnxTensorInfo } from '../../src/backends/onnxruntime/onnx-model-info';
import {
  dataTypeToOrtType,
  onnxElemTypeName,
  onnxElemTypeToConfigType,
  onnxElemTypeToDataType,
  ortTypeToDataType,
} from '../../src/backends/onnxruntime/ort-types';
import { DATATYPES } from '../../src/core/datatypes';
import { fieldBytes, fieldVarint, modelBytes as model, tensorType, valueInfo, varint } from './fixtures/onnx-builder';
import { modelFile } from './fixtures/repo-paths';

const brief = (ts: OnnxTensorInfo[]): [string, string | null, number[] | null][] => ts.map((t) => [t.name, t.datatype, t.dims]);

test('generated models: inputs and outputs', () => {
  const cases: { model: string; inputs: [string, string | null, number[] | null][]; outputs: [string, string | null, number[] | null][] }[] = [
    {
      model: 'simple',
      inputs: [
        ['INPUT0', 'INT32', [-1, 16]],
        ['INPUT1', 'INT32', [-1, 16]],
      ],
      outputs: [
        ['OUTPUT0', 'INT32', [-1, 16]],
        ['OUTPUT1', 'INT32', [-1, 16]],
      ],
    },
    { model: 'dense_classifier', inputs: [['input', 'FP32', [-1, 64]]], outputs: [['logits', 'FP32', [-1, 10]]] },
    { model: 'image_classifier', inputs: [['input', 'FP32', [-1, 3, 224, 224]]], outputs: [['probabilities', 'FP32', [-1, 1000]]] },
  ];
  for (const c of cases) {
    const info = readOnnxModelInfo(modelFile(c.model));
    assert.deepEqual(brief(info.inputs), c.inputs, c.model);
    assert.deepEqual(brief(info.outputs), c.outputs, c.model);
    assert.deepEqual(info.overridableInitializers, [], c.model);
    // The windowed file reader and the in-memory parse agree.
    assert.deepEqual(parseOnnxModelInfo(fs.readFileSync(modelFile(c.model))), info, c.model);
  }
});

test('identity_types has one identity per datatype onnxruntime-node supports', () => {
  const info = readOnnxModelInfo(modelFile('identity_types'));
  const supported = DATATYPES.filter((d) => dataTypeToOrtType(d) !== null);
  assert.deepEqual(
    info.inputs.map((t) => t.datatype),
    supported,
  );
  for (const t of [...info.inputs, ...info.outputs]) {
    assert.equal(t.kind, 'tensor');
    assert.deepEqual(t.dims, [-1, -1]);
    assert.match(t.name, new RegExp(`_${t.datatype}$`));
  }
});

test('ort-types: ONNX elem type, Triton datatype and ORT type agree', () => {
  const table: [number, string, string | null, string, string | null][] = [
    [1, 'FLOAT', 'FP32', 'TYPE_FP32', 'float32'],
    [8, 'STRING', 'BYTES', 'TYPE_STRING', 'string'],
    [9, 'BOOL', 'BOOL', 'TYPE_BOOL', 'bool'],
    [10, 'FLOAT16', 'FP16', 'TYPE_FP16', 'float16'],
    [13, 'UINT64', 'UINT64', 'TYPE_UINT64', 'uint64'],
    [16, 'BFLOAT16', 'BF16', 'TYPE_BF16', null],
    [14, 'COMPLEX64', null, 'TYPE_INVALID', null],
    [0, 'UNDEFINED', null, 'TYPE_INVALID', null],
    [99, '<elem type 99>', null, 'TYPE_INVALID', null],
  ];
  for (const [elem, name, dt, cfg, ort] of table) {
    assert.equal(onnxElemTypeName(elem), name);
    assert.equal(onnxElemTypeToDataType(elem), dt);
    assert.equal(onnxElemTypeToConfigType(elem), cfg);
    if (dt !== null) assert.equal(dataTypeToOrtType(dt as never), ort);
    if (ort !== null) assert.equal(ortTypeToDataType(ort), dt);
  }
});

test('hand-built graph: dims, initializers, non-tensors, unknown fields', () => {
  const graph = [
    ...fieldBytes(1, fieldBytes(4, 'Identity')), // a node (skipped)
    ...fieldBytes(2, 'g'),
    ...fieldBytes(5, [...fieldVarint(1, 4), ...fieldVarint(2, 1), ...fieldBytes(9, new Array(300).fill(7)), ...fieldBytes(8, 'W')]),
    ...fieldBytes(15, fieldBytes(1, fieldBytes(8, 'S'))),
    ...fieldBytes(11, valueInfo('x', tensorType(1, ['batch', 3, null, -5]))),
    ...fieldBytes(11, valueInfo('W', tensorType(1, [4]))),
    ...fieldBytes(11, valueInfo('S', tensorType(1, [2]))),
    ...fieldBytes(11, valueInfo('noshape', tensorType(7, null))),
    ...fieldBytes(11, valueInfo('seq', fieldBytes(4, fieldBytes(1, tensorType(1, [1]))))),
    ...fieldBytes(11, valueInfo('big', tensorType(7, [2 ** 40, 0]))),
    ...fieldVarint(99, 12345), // unknown field
    ...[...varint(101 * 8 + 5), 1, 2, 3, 4], // unknown fixed32 field
    ...[...varint(102 * 8 + 1), 1, 2, 3, 4, 5, 6, 7, 8], // unknown fixed64 field
    ...fieldBytes(12, valueInfo('y', tensorType(10, [-1]))),
  ];
  const info = parseOnnxModelInfo(model(graph));
  assert.deepEqual(brief(info.inputs), [
    ['x', 'FP32', [-1, 3, -1, -1]],
    ['noshape', 'INT64', null],
    ['seq', null, null],
    ['big', 'INT64', [2 ** 40, 0]],
  ]);
  assert.equal(info.inputs[2].kind, 'sequence');
  assert.deepEqual(
    info.overridableInitializers.map((t) => t.name),
    ['W', 'S'],
  );
  assert.deepEqual(brief(info.outputs), [['y', 'FP16', [-1]]]);
});

test('malformed bytes throw OnnxParseError', () => {
  const good = model(fieldBytes(11, valueInfo('x', tensorType(1, [1]))));
  const cases: [string, Uint8Array][] = [
    ['empty file', new Uint8Array()],
    ['text', Buffer.from('name: "simple"\nplatform: "onnxruntime_onnx"\n')],
    ['truncated', good.subarray(0, good.length - 3)],
    ['group wire type', Uint8Array.from([...varint(7 * 8 + 3), 0])],
    ['length past the end', Uint8Array.from([...varint(7 * 8 + 2), 50, 1, 2])],
    ['no graph', Uint8Array.from(fieldVarint(1, 8))],
  ];
  for (const [label, bytes] of cases) {
    assert.throws(() => parseOnnxModelInfo(bytes), OnnxParseError, label);
  }
});

test('readOnnxModelInfo reads a file with weights larger than its window', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'onnx-info-'));
  try {
    const weights = fieldBytes(5, [...fieldBytes(8, 'W'), ...fieldBytes(9, new Array(200_000).fill(1))]);
    const file = path.join(dir, 'model.onnx');
    fs.writeFileSync(
      file,
      model([...weights, ...fieldBytes(11, valueInfo('x', tensorType(6, [-1, 2]))), ...fieldBytes(12, valueInfo('y', tensorType(6, [-1, 2])))]),
    );
    const info = readOnnxModelInfo(file);
    assert.deepEqual(brief(info.inputs), [['x', 'INT32', [-1, 2]]]);
    assert.deepEqual(brief(info.outputs), [['y', 'INT32', [-1, 2]]]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
