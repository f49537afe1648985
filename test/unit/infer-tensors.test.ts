/** `nodetron infer`'s pure parts, table-driven: --input values against metadata, and how values print. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseInferArgs } from '../../src/client/infer-args';
import { decodeOutput, makeInput, valuesText } from '../../src/client/infer-tensors';

const noFiles = (): Uint8Array => {
  throw new Error('no file here');
};

const INPUTS: [string, { datatype: string; shape: number[] }, string, { shape: number[]; data: unknown[] } | RegExp][] = [
  ['a flat list, no batch', { datatype: 'FP32', shape: [4] }, '[1,2,3,4]', { shape: [4], data: [1, 2, 3, 4] }],
  ['a flat list gets the batch dimension', { datatype: 'INT32', shape: [-1, 3] }, '[1,2,3]', { shape: [1, 3], data: [1, 2, 3] }],
  ['a nested list keeps its shape', { datatype: 'INT32', shape: [-1, 2] }, '[[1,2],[3,4]]', { shape: [2, 2], data: [1, 2, 3, 4] }],
  ['a scalar is one element', { datatype: 'INT32', shape: [1] }, '7', { shape: [1], data: [7] }],
  ['a bare word for BYTES is its text', { datatype: 'BYTES', shape: [1] }, 'hello', { shape: [1], data: ['hello'] }],
  ['ragged lists are refused', { datatype: 'INT32', shape: [-1, 2] }, '[[1,2],[3]]', /the nested lists are not all the same length/],
  ['not JSON for a number input', { datatype: 'FP32', shape: [1] }, 'abc', /not a JSON literal/],
];
for (const [name, meta, value, want] of INPUTS) {
  test(`infer input: ${name}`, () => {
    const run = (): ReturnType<typeof makeInput> => makeInput('m', { name: 'X', ...meta }, 'X', value, noFiles);
    if (want instanceof RegExp) return assert.throws(run, want);
    const t = run();
    assert.deepEqual({ shape: t.shape, data: t.data }, want);
  });
}

test('infer input: an unknown input name says so', () => {
  assert.throws(() => makeInput('m', undefined, 'Y', '[1]', noFiles), /model 'm' has no input 'Y'/);
});

test('infer output: short values whole, long ones numpy-like with count and range', () => {
  const f32 = (xs: number[]) => decodeOutput('o', 'FP32', [xs.length], new Uint8Array(new Float32Array(xs).buffer));
  assert.equal(valuesText(f32([1, 2.5])), '[1, 2.5]');
  assert.equal(valuesText(f32(Array.from({ length: 20 }, (_, i) => i))), '[0, 1, 2, ..., 17, 18, 19] (20 elements, min 0, max 19, mean 9.5)');
  const bytes = new Uint8Array([2, 0, 0, 0, 0x68, 0x69]);
  assert.deepEqual(decodeOutput('o', 'BYTES', [1], bytes).data, ['hi']);
});

test('infer args: -u takes host:port or a URL; -u and --model-repository together are refused', () => {
  assert.equal(parseInferArgs(['-m', 'x', '-u', 'localhost:8123']).url, 'http://localhost:8123');
  assert.equal(parseInferArgs(['-m', 'x', '--url=https://h/']).url, 'https://h');
  assert.throws(() => parseInferArgs(['-m', 'x', '-u', 'h:1', '--model-repository', '/r']), /either -u .* or --model-repository/);
  assert.throws(() => parseInferArgs(['-m', 'x', '--input', 'novalue']), /expected NAME=VALUE/);
});
