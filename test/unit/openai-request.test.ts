/**
 * The OpenAI routes' request mapping (openai-request.ts, and the model
 * request openai-handler.ts llmRequest builds from it), table-driven: what
 * each body becomes, and the 400 each bad one gets, naming the field.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenAIError, parseOpenAIRequest, type OpenAIRequest } from '../../src/frontend/http/openai-request';
import { bytesText, llmRequest } from '../../src/frontend/http/openai-llm-request';
import type { ValidationPlan } from '../../src/request/validation-plan';

const b = (v: unknown): Buffer => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));

const GOOD: [string, OpenAIRequest['kind'], unknown, Partial<OpenAIRequest>][] = [
  [
    'a bare completion',
    'completion',
    { model: 'm', prompt: 'hi' },
    { model: 'm', prompts: ['hi'], n: 1, stream: false, includeUsage: false, echo: false, stop: [], parameters: {} },
  ],
  ['a prompt array of one', 'completion', { model: 'm', prompt: ['hi'] }, { prompts: ['hi'] }],
  ['several prompts, n = 2', 'completion', { model: 'm', prompt: ['a', 'b'], n: 2 }, { prompts: ['a', 'b'], n: 2 }],
  ['token ids: one prompt', 'completion', { model: 'm', prompt: [1, 2] }, { prompts: [[1, 2]] }],
  ['token ids: two prompts', 'completion', { model: 'm', prompt: [[1], [2, 3]] }, { prompts: [[1], [2, 3]] }],
  [
    'logprobs and tools off pass',
    'chat',
    { model: 'm', messages: [{ role: 'user', content: 'x' }], logprobs: false, tools: [{ type: 'function' }], tool_choice: 'none' },
    { n: 1 },
  ],
  [
    'sampling fields become parameters; unknown fields are ignored',
    'completion',
    { model: 'm', prompt: 'p', max_tokens: 5, temperature: 0.2, top_p: 1, seed: 3, user: 'u', logit_bias: {}, n: 1 },
    { maxTokens: 5, parameters: { max_tokens: 5, temperature: 0.2, top_p: 1, seed: 3 } },
  ],
  ['stop as a string, empty ones dropped', 'completion', { model: 'm', prompt: 'p', stop: 'X' }, { stop: ['X'] }],
  ['stop as an array', 'completion', { model: 'm', prompt: 'p', stop: ['a', '', 'b'] }, { stop: ['a', 'b'] }],
  [
    'stream with include_usage',
    'chat',
    { model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true, stream_options: { include_usage: true } },
    { stream: true, includeUsage: true, messages: [{ role: 'user', content: 'x' }] },
  ],
  [
    'chat: max_completion_tokens wins over max_tokens',
    'chat',
    { model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 9, max_completion_tokens: 4 },
    { maxTokens: 4, parameters: { max_tokens: 4 } },
  ],
  [
    'chat: text parts are joined, null content is empty',
    'chat',
    {
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
        { role: 'assistant', content: null },
      ],
    },
    {
      messages: [
        { role: 'user', content: 'ab' },
        { role: 'assistant', content: '' },
      ],
    },
  ],
  ['nulls read as absent', 'completion', { model: 'm', prompt: 'p', temperature: null, stop: null, stream: null }, { stop: [], stream: false, parameters: {} }],
];

for (const [name, kind, body, want] of GOOD) {
  test(`parse: ${name}`, () => {
    const got = parseOpenAIRequest(b(body), kind) as unknown as Record<string, unknown>;
    for (const [k, v] of Object.entries(want)) assert.deepEqual(got[k], v, k);
  });
}

const BAD: [string, OpenAIRequest['kind'], unknown, string, RegExp][] = [
  ['not JSON', 'completion', '{', 'body', /could not parse the JSON body/],
  ['an array', 'completion', [1], 'body', /must be a JSON object, got an array/],
  ['no model', 'completion', { prompt: 'p' }, 'model', /'model' is required/],
  ['no prompt', 'completion', { model: 'm' }, 'prompt', /'prompt' is required/],
  ['an empty prompt array', 'completion', { model: 'm', prompt: [] }, 'prompt', /got an empty array/],
  ['strings and ids mixed', 'completion', { model: 'm', prompt: ['a', 1] }, 'prompt', /array of token-id arrays/],
  ['a negative token id', 'completion', { model: 'm', prompt: [1, -2] }, 'prompt', /'prompt' is required/],
  ['n = 0', 'completion', { model: 'm', prompt: 'p', n: 0 }, 'n', /between 1 and 128, got 0/],
  ['prompts × n past the bound', 'completion', { model: 'm', prompt: ['a', 'b', 'c'], n: 50 }, 'prompt', /3 prompts × n = 50 asks for 150 choices/],
  ['completion logprobs', 'completion', { model: 'm', prompt: 'p', logprobs: 2 }, 'logprobs', /'logprobs' is not supported/],
  ['chat logprobs', 'chat', { model: 'm', messages: [{ role: 'user', content: 'x' }], logprobs: true }, 'logprobs', /text only/],
  ['chat top_logprobs', 'chat', { model: 'm', messages: [{ role: 'user', content: 'x' }], top_logprobs: 3 }, 'top_logprobs', /not supported/],
  ['tools', 'chat', { model: 'm', messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function' }] }, 'tools', /no tool-call parser/],
  ['max_tokens 0', 'completion', { model: 'm', prompt: 'p', max_tokens: 0 }, 'max_tokens', /at least 1, got 0/],
  ['max_tokens a string', 'completion', { model: 'm', prompt: 'p', max_tokens: '5' }, 'max_tokens', /must be an integer, got a string/],
  ['temperature too high', 'completion', { model: 'm', prompt: 'p', temperature: 3 }, 'temperature', /between 0 and 2, got 3/],
  ['top_p a string', 'completion', { model: 'm', prompt: 'p', top_p: 'x' }, 'top_p', /must be a number/],
  ['stream a string', 'completion', { model: 'm', prompt: 'p', stream: 'yes' }, 'stream', /true or false/],
  ['five stops', 'completion', { model: 'm', prompt: 'p', stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop', /at most 4/],
  ['stop a number', 'completion', { model: 'm', prompt: 'p', stop: 1 }, 'stop', /string or an array of strings/],
  ['no messages', 'chat', { model: 'm', messages: [] }, 'messages', /non-empty array/],
  ['a message without role', 'chat', { model: 'm', messages: [{ content: 'x' }] }, 'messages[0].role', /must be a string/],
  ['an image part', 'chat', { model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url' }] }] }, 'messages[0].content[0]', /text only/],
];

for (const [name, kind, body, param, message] of BAD) {
  test(`refuse: ${name}`, () => {
    assert.throws(
      () => parseOpenAIRequest(b(body), kind),
      (e: unknown) => {
        assert.ok(e instanceof OpenAIError);
        assert.equal(e.status, 400);
        assert.equal(e.param, param);
        assert.equal(e.type, 'invalid_request_error');
        assert.match(e.message, message);
        return true;
      },
    );
  });
}

function plan(inputs: { name: string; datatype: string }[], outputs = ['text_output'], maxBatchSize = 0): ValidationPlan {
  return {
    modelName: 'llm',
    maxBatchSize,
    inputs: inputs.map((i) => ({ ...i, dims: [1], optional: false, isShapeTensor: false })),
    outputs: outputs.map((name) => ({ name })),
  } as unknown as ValidationPlan;
}

const REQ = parseOpenAIRequest(b({ model: 'llm', prompt: 'p', stream: true, temperature: 0.1, stop: ['.'] }), 'completion');

test('llmRequest: text_input and stream, sampling fields as parameters', () => {
  const d = llmRequest(
    plan([
      { name: 'text_input', datatype: 'BYTES' },
      { name: 'stream', datatype: 'BOOL' },
    ]),
    'hello',
    REQ,
    1 << 20,
  );
  assert.deepEqual(
    d.inputs.map((i) => [i.name, i.shape]),
    [
      ['text_input', [1]],
      ['stream', [1]],
    ],
  );
  assert.equal(bytesText(d.inputs[0].data), 'hello');
  assert.deepEqual([...d.inputs[1].data], [1]);
  assert.deepEqual(d.parameters, { temperature: 0.1 });
});

test('llmRequest: a batching vLLM-style model gets [1,1] shapes, exclude_input_in_output and sampling_parameters', () => {
  const d = llmRequest(
    plan(
      [
        { name: 'text_input', datatype: 'BYTES' },
        { name: 'exclude_input_in_output', datatype: 'BOOL' },
        { name: 'sampling_parameters', datatype: 'BYTES' },
      ],
      ['text_output'],
      8,
    ),
    'hi',
    REQ,
    1 << 20,
  );
  assert.deepEqual(
    d.inputs.map((i) => [i.name, i.shape]),
    [
      ['text_input', [1, 1]],
      ['exclude_input_in_output', [1, 1]],
      ['sampling_parameters', [1, 1]],
    ],
  );
  assert.deepEqual(JSON.parse(bytesText(d.inputs[2].data)), { temperature: 0.1, stop: ['.'] });
});

test('llmRequest: a model without the LLM contract is a 400 that says which routes to use', () => {
  assert.throws(
    () => llmRequest(plan([{ name: 'INPUT0', datatype: 'INT32' }], ['OUTPUT0']), 'x', REQ, 1 << 20),
    /The model 'llm' does not take Triton's LLM contract .* use \/v2\/models\/llm\/infer instead/,
  );
});

test('bytesText joins every element of a BYTES tensor', () => {
  const el = (s: string): Buffer => Buffer.concat([Buffer.from(new Uint32Array([Buffer.byteLength(s)]).buffer), Buffer.from(s)]);
  assert.equal(bytesText(new Uint8Array(Buffer.concat([el('ab'), el(''), el(' é')]))), 'ab é');
});

test('llmRequest: choice j of n is sampled with seed + j; without a seed the parameters are the same', () => {
  const seeded = parseOpenAIRequest(b({ model: 'llm', prompt: 'p', seed: 10, n: 3 }), 'completion');
  const p = plan([{ name: 'text_input', datatype: 'BYTES' }]);
  assert.deepEqual(
    [0, 1, 2].map((j) => llmRequest(p, 'x', seeded, 1 << 20, j).parameters.seed),
    [10, 11, 12],
  );
  assert.equal(seeded.parameters.seed, 10, 'the parsed request is not changed');
  assert.deepEqual(llmRequest(p, 'x', REQ, 1 << 20, 2).parameters, { temperature: 0.1 });
});
