/**
 * `POST /v1/embeddings`' request and response (openai-embedding-request.ts,
 * and the model request openai-embeddings.ts builds), table-driven: what
 * each body becomes, the 400 each bad one gets naming the field, which
 * models take the embedding contract, and the float/base64 bodies.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { embeddingsBody, isEmbeddingModel, parseEmbeddingRequest, type EmbeddingRequest } from '../../src/frontend/http/openai-embedding-request';
import { embeddingRequest } from '../../src/frontend/http/openai-embeddings';
import { bytesText } from '../../src/frontend/http/openai-llm-request';
import { OpenAIError } from '../../src/frontend/http/openai-request';
import type { ValidationPlan } from '../../src/request/validation-plan';

const b = (v: unknown): Buffer => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));

const GOOD: [string, unknown, Partial<EmbeddingRequest>][] = [
  ['one string', { model: 'e', input: 'hi' }, { model: 'e', inputs: ['hi'], encoding: 'float' }],
  [
    'strings, base64, dimensions; unknown fields ignored',
    { model: 'e', input: ['a', 'b'], encoding_format: 'base64', dimensions: 4, user: 'u' },
    { inputs: ['a', 'b'], encoding: 'base64', dimensions: 4 },
  ],
  ['token ids', { model: 'e', input: [3, 4] }, { inputs: [[3, 4]] }],
  ['token-id arrays', { model: 'e', input: [[3], [4, 5]] }, { inputs: [[3], [4, 5]] }],
  ['nulls read as absent', { model: 'e', input: 'x', encoding_format: null, dimensions: null }, { encoding: 'float', dimensions: undefined }],
];

for (const [name, body, want] of GOOD) {
  test(`parse: ${name}`, () => {
    const got = parseEmbeddingRequest(b(body)) as unknown as Record<string, unknown>;
    for (const [k, v] of Object.entries(want)) assert.deepEqual(got[k], v, k);
  });
}

const BAD: [string, unknown, string, RegExp][] = [
  ['not JSON', '[', 'body', /could not parse the JSON body/],
  ['no model', { input: 'x' }, 'model', /'model' is required/],
  ['no input', { model: 'e' }, 'input', /'input' is required.*got a undefined/],
  ['an empty array', { model: 'e', input: [] }, 'input', /got an empty array/],
  ['an empty string', { model: 'e', input: ['a', ''] }, 'input', /input\[1\] is an empty string/],
  ['mixed', { model: 'e', input: ['a', 1] }, 'input', /token-id arrays/],
  ['too many', { model: 'e', input: Array.from({ length: 2049 }, () => 'a') }, 'input', /holds 2049 entries; one request takes at most 2048/],
  ['an unknown encoding', { model: 'e', input: 'x', encoding_format: 'int8' }, 'encoding_format', /"float" or "base64", got "int8"/],
  ['dimensions 0', { model: 'e', input: 'x', dimensions: 0 }, 'dimensions', /positive integer, got 0/],
];

for (const [name, body, param, message] of BAD) {
  test(`refuse: ${name}`, () => {
    assert.throws(
      () => parseEmbeddingRequest(b(body)),
      (e: unknown) => {
        assert.ok(e instanceof OpenAIError);
        assert.equal(e.status, 400);
        assert.equal(e.param, param);
        assert.match(e.message, message);
        return true;
      },
    );
  });
}

function plan(inputs: [string, string][], outputs: [string, string][], maxBatchSize = 0): ValidationPlan {
  return {
    modelName: 'e',
    maxBatchSize,
    inputs: inputs.map(([name, datatype]) => ({ name, datatype, dims: [1], optional: false, isShapeTensor: false })),
    outputs: outputs.map(([name, datatype]) => ({ name, datatype, dims: [-1] })),
  } as unknown as ValidationPlan;
}

const CONTRACT: [string, ValidationPlan, boolean][] = [
  ['text_input → FP32 embedding', plan([['text_input', 'BYTES']], [['embedding', 'FP32']]), true],
  ['an LLM', plan([['text_input', 'BYTES']], [['text_output', 'BYTES']]), false],
  ['an FP16 embedding', plan([['text_input', 'BYTES']], [['embedding', 'FP16']]), false],
  ['a tensor input', plan([['INPUT0', 'FP32']], [['embedding', 'FP32']]), false],
];
for (const [name, p, want] of CONTRACT) test(`contract: ${name}`, () => assert.equal(isEmbeddingModel(p), want));

test('the model request: text_input [1] (batched [1, 1]), dimensions as a request parameter', () => {
  const d = embeddingRequest(plan([['text_input', 'BYTES']], [['embedding', 'FP32']], 8), 'hello', 4, 1 << 20);
  assert.deepEqual(
    d.inputs.map((i) => [i.name, i.datatype, i.shape]),
    [['text_input', 'BYTES', [1, 1]]],
  );
  assert.equal(bytesText(d.inputs[0]!.data), 'hello');
  assert.deepEqual(d.parameters, { dimensions: 4 });
  assert.deepEqual(embeddingRequest(plan([['text_input', 'BYTES']], [['embedding', 'FP32']]), 'x', undefined, 1 << 20).inputs[0]!.shape, [1]);
});

test('the response: float arrays or base64 of the little-endian float32 bytes, in input order, usage', () => {
  const v = [new Float32Array([0.5, -1]), new Float32Array([2])];
  assert.deepEqual(JSON.parse(embeddingsBody('e', v, 'float', 3)), {
    object: 'list',
    model: 'e',
    usage: { prompt_tokens: 3, total_tokens: 3 },
    data: [
      { object: 'embedding', index: 0, embedding: [0.5, -1] },
      { object: 'embedding', index: 1, embedding: [2] },
    ],
  });
  const b64 = JSON.parse(embeddingsBody('e', v, 'base64', 3)).data[0].embedding as string;
  const raw = Buffer.from(b64, 'base64');
  assert.deepEqual([raw.readFloatLE(0), raw.readFloatLE(4)], [0.5, -1]);
});
