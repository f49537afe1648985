import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backendNames, findBackend, listText, missingBackend } from '../../src/backends/registry';

const HAVE = `nodetron has the backends ${listText(backendNames())}`;
const ONNX_OR_PYTHON = 'with backend: "onnxruntime", or call it from a Python model (backend: "python").';

// Each Triton backend nodetron lacks: the status, and the way out its text must give.
const MISSING: [string, string, RegExp][] = [
  ['tensorrt', 'UNSUPPORTED', /export the network it was built from to ONNX .* with backend: "onnxruntime"/],
  ['tensorflow', 'UNSUPPORTED', /tf2onnx\.convert .* with backend: "onnxruntime"/],
  ['openvino', 'UNSUPPORTED', /Serve the ONNX file the OpenVINO IR was made from with backend: "onnxruntime"/],
  ['dali', 'UNSUPPORTED', /preprocessing in a Python model \(backend: "python".*ensemble/],
  ['vllm', 'UNSUPPORTED', /Serve the LLM from a Python model \(backend: "python"\).*decoupled/],
  ['tensorrtllm', 'UNSUPPORTED', /Python model \(backend: "python"\) as a decoupled model/],
  ['onnx', 'INVALID_ARG', /did you mean backend: "onnxruntime"\?$/],
  ['pyhton', 'INVALID_ARG', /did you mean backend: "python"\?$/],
  ['fill', 'INVALID_ARG', /did you mean backend: "fil"\?$/],
  ['pytroch', 'INVALID_ARG', /did you mean backend: "pytorch"\?$/],
  ['zzzzzzzz', 'INVALID_ARG', /name one of them in config\.pbtxt$/],
];

for (const [name, code, way] of MISSING) {
  test(`missingBackend('${name}'): ${code}, the backends nodetron has, and the way out`, () => {
    const e = missingBackend(name);
    assert.equal(e.code, code);
    assert.ok(e.message.startsWith(`unable to find backend library for backend '${name}': ${HAVE}; `), e.message);
    assert.match(e.message, way);
    assert.doesNotMatch(e.message, /try specifying runtime/);
  });
}

test("the backend list is the registry's: onnxruntime, python, fil, pytorch and the test backends are there and load", () => {
  for (const name of ['onnxruntime', 'python', 'fil', 'pytorch', 'identity', 'repeat', 'square']) {
    assert.ok(backendNames().includes(name), name);
    assert.equal(findBackend(name).name, name);
  }
  assert.match(HAVE, /onnxruntime, python(, \w+)* and \w+$/);
});

test('missing backends with an ONNX way end with the ONNX and Python ways', () => {
  for (const name of ['tensorrt', 'tensorflow', 'openvino']) assert.ok(missingBackend(name).message.endsWith(ONNX_OR_PYTHON), name);
});

const LISTS: [string[], string][] = [
  [[], ''],
  [['a'], 'a'],
  [['a', 'b'], 'a and b'],
  [['a', 'b', 'c'], 'a, b and c'],
];
for (const [names, want] of LISTS) {
  test(`listText(${JSON.stringify(names)}) = '${want}'`, () => assert.equal(listText(names), want));
}
