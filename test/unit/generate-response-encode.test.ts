/**
 * The generate extension's response object and SSE framing
 * (generate-response-encode.ts), table-driven.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeGenerateResponse, sseEvent, type GenerateOutput } from '../../src/frontend/http/generate-response-encode';

function i32(name: string, shape: number[], values: number[]): GenerateOutput {
  return { name, datatype: 'INT32', shape, data: new Uint8Array(new Int32Array(values).buffer) };
}

function str(name: string, shape: number[], ...items: string[]): GenerateOutput {
  const parts: Buffer[] = [];
  for (const s of items) {
    const len = Buffer.alloc(4);
    len.writeUInt32LE(Buffer.byteLength(s));
    parts.push(len, Buffer.from(s));
  }
  return { name, datatype: 'BYTES', shape, data: new Uint8Array(Buffer.concat(parts)) };
}

const CASES: [string, { id?: string; parameters?: Record<string, string | number | boolean>; outputs: GenerateOutput[] }, unknown][] = [
  [
    'one string element is a bare string',
    { outputs: [str('text_output', [1], 'hello "you"')] },
    { model_name: 'm', model_version: '2', text_output: 'hello "you"' },
  ],
  [
    'several elements are an array, id first',
    { id: 'x', outputs: [i32('OUT', [1, 3], [1, -2, 3])] },
    { id: 'x', model_name: 'm', model_version: '2', OUT: [1, -2, 3] },
  ],
  [
    'response parameters become keys',
    { parameters: { finish_reason: 'length', n: 2 }, outputs: [str('t', [2], 'a', 'b')] },
    { model_name: 'm', model_version: '2', finish_reason: 'length', n: 2, t: ['a', 'b'] },
  ],
  ['no outputs', { outputs: [] }, { model_name: 'm', model_version: '2' }],
];

for (const [name, a, want] of CASES) {
  test(`generate response: ${name}`, () => {
    const text = encodeGenerateResponse({
      id: a.id ?? '',
      modelName: 'm',
      modelVersion: '2',
      parameters: a.parameters,
      outputs: a.outputs,
      maxJsonChars: 1 << 20,
    });
    assert.deepEqual(JSON.parse(text), want);
  });
}

test('generate response: a parameter past 2^53 is written exactly', () => {
  const text = encodeGenerateResponse({
    id: '',
    modelName: 'm',
    modelVersion: '1',
    parameters: { seed: 9007199254740993n },
    outputs: [],
    maxJsonChars: 1 << 20,
  });
  assert.equal(text.includes('"seed":9007199254740993'), true, text);
});

test('generate response: past --http-max-json-response-size it is refused, naming the output and the flag', () => {
  assert.throws(
    () =>
      encodeGenerateResponse({ id: '', modelName: 'm', modelVersion: '1', outputs: [i32('BIG', [1000], new Array<number>(1000).fill(7))], maxJsonChars: 100 }),
    /the JSON of output 'BIG' \(1000 elements\) of model 'm' would make the generate response larger than 100 bytes.*--http-max-json-response-size/,
  );
});

test('an SSE event is one data line and a blank line', () => {
  assert.equal(sseEvent('{"a":1}'), 'data: {"a":1}\n\n');
});
