/** The stub's model-control arguments as repository calls, and python_backend's texts (model-control.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { controlFailure, modelControlCall, readinessVersion } from '../../src/python-backend/model-control';

test('is_model_ready version text: as python_backend reads it (std::stol), with its texts', () => {
  const cases: [string, number | RegExp][] = [
    ['', -1],
    ['1', 1],
    ['0', 0],
    [' 12', 12],
    ['3x', 3],
    ['abc', /^failed to get model version from specified version string 'abc' \(details: stol\), version should be an integral value > 0$/],
    ['-1', /^failed to get model version from specified version string '-1', version should be an integral value > 0$/],
    ['99999999999999999999', /\(details: stol\)/],
  ];
  for (const [text, want] of cases) {
    if (typeof want === 'number') assert.equal(readinessVersion(text), want, text);
    else assert.throws(() => readinessVersion(text), { message: want }, text);
  }
});

test('stub call arguments become repository calls', () => {
  const onnx = Buffer.from('onnx bytes');
  const cases: [string, unknown[], unknown][] = [
    ['load_model', ['m', '', {}], { op: 'load', model: 'm', files: [] }],
    ['load_model', ['m', '{"max_batch_size":2}', {}], { op: 'load', model: 'm', config: '{"max_batch_size":2}', files: [] }],
    [
      'load_model',
      ['m', '{}', { 'file:1/model.onnx': onnx.toString('base64') }],
      { op: 'load', model: 'm', config: '{}', files: [{ path: '1/model.onnx', data: new Uint8Array(onnx) }] },
    ],
    ['unload_model', ['m', true], { op: 'unload', model: 'm', unloadDependents: true }],
    ['unload_model', ['m', false], { op: 'unload', model: 'm', unloadDependents: false }],
    ['is_model_ready', ['m', ''], { op: 'ready', model: 'm', version: -1 }],
    ['is_model_ready', ['m', '2'], { op: 'ready', model: 'm', version: 2 }],
  ];
  for (const [name, args, want] of cases) assert.deepEqual(modelControlCall(name, args), want, `${name} ${JSON.stringify(args)}`);
});

test('bad stub call arguments are refused with a text that names what is wrong', () => {
  const cases: [string, unknown[], RegExp][] = [
    ['load_model', ['m', '', ['file:1/model.onnx']], /^failed to load model 'm', files should be a dictionary of file paths and file contents$/],
    ['load_model', ['m', '{}', { '1/model.onnx': 'AA==' }], /^Unrecognized load parameter '1\/model.onnx'\.$/],
    ['load_model', [7, ''], /model name must be a string/],
    ['is_model_ready', ['m', 'v1'], /specified version string 'v1'/],
    ['what', ['m'], /unknown model control call 'what'/],
  ];
  for (const [name, args, want] of cases) assert.throws(() => modelControlCall(name, args), { message: want }, `${name} ${JSON.stringify(args)}`);
});

test("failures carry python_backend's prefix per call", () => {
  assert.equal(controlFailure('load_model', 'x'), 'Failed to load model: x');
  assert.equal(controlFailure('unload_model', 'x'), 'Failed to unload model: x');
  assert.equal(controlFailure('is_model_ready', 'x'), 'Failed to check model readiness: x');
});
