/**
 * The OpenAI routes' response shapes and stop cut (openai-response.ts), and
 * the prompt and count fallbacks of a model without tokenizer files
 * (openai-model-text.ts), table-driven.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chatBody, chunkEvent, completionBody, DONE_EVENT, errorBody, modelList, stopScan, usage } from '../../src/frontend/http/openai-response';
import { OpenAIError } from '../../src/frontend/http/openai-request';
import { fallbackChatPrompt, ModelText, wordCount } from '../../src/frontend/http/openai-model-text';

const IDS = { id: 'cmpl-1', created: 100, model: 'm' };
const U = usage(3, 2);

const SHAPES: [string, string, unknown][] = [
  ['usage totals', JSON.stringify(U), { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 }],
  [
    'a completion',
    completionBody(IDS, [{ index: 0, text: 'hi', finish: 'length' }], U),
    {
      id: 'cmpl-1',
      object: 'text_completion',
      created: 100,
      model: 'm',
      choices: [{ index: 0, text: 'hi', logprobs: null, finish_reason: 'length' }],
      usage: U,
    },
  ],
  [
    'a chat completion',
    chatBody(IDS, [{ index: 0, text: 'yo', finish: 'stop' }], U),
    {
      id: 'cmpl-1',
      object: 'chat.completion',
      created: 100,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'yo' }, logprobs: null, finish_reason: 'stop' }],
      usage: U,
    },
  ],
  [
    'two choices, in index order',
    completionBody(
      IDS,
      [
        { index: 0, text: 'a', finish: 'stop' },
        { index: 1, text: 'b', finish: 'length' },
      ],
      U,
    ),
    {
      id: 'cmpl-1',
      object: 'text_completion',
      created: 100,
      model: 'm',
      usage: U,
      choices: [
        { index: 0, text: 'a', logprobs: null, finish_reason: 'stop' },
        { index: 1, text: 'b', logprobs: null, finish_reason: 'length' },
      ],
    },
  ],
  [
    'the model list',
    modelList(['a', 'b'], 7),
    {
      object: 'list',
      data: [
        { id: 'a', object: 'model', created: 7, owned_by: 'nodetron' },
        { id: 'b', object: 'model', created: 7, owned_by: 'nodetron' },
      ],
    },
  ],
  [
    'a 404 error',
    errorBody(new OpenAIError(404, 'no model', 'model', 'model_not_found')),
    { error: { message: 'no model', type: 'invalid_request_error', param: 'model', code: 'model_not_found' } },
  ],
  ['a 500 error', errorBody(new OpenAIError(500, 'broke')), { error: { message: 'broke', type: 'server_error', param: null, code: null } }],
];

for (const [name, json, want] of SHAPES) test(`shape: ${name}`, () => assert.deepEqual(JSON.parse(json), want));

const CHUNKS: [string, string, unknown][] = [
  [
    'chat: the first chunk names the role',
    chunkEvent('chat', IDS, { role: true }),
    {
      id: 'cmpl-1',
      object: 'chat.completion.chunk',
      created: 100,
      model: 'm',
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
    },
  ],
  [
    'chat: a piece',
    chunkEvent('chat', IDS, { text: 'a' }),
    {
      id: 'cmpl-1',
      object: 'chat.completion.chunk',
      created: 100,
      model: 'm',
      choices: [{ index: 0, delta: { content: 'a' }, logprobs: null, finish_reason: null }],
    },
  ],
  [
    'chat: the finish, an empty delta',
    chunkEvent('chat', IDS, { finish: 'length' }),
    { id: 'cmpl-1', object: 'chat.completion.chunk', created: 100, model: 'm', choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'length' }] },
  ],
  [
    'completion: a piece',
    chunkEvent('completion', IDS, { text: 'b' }),
    { id: 'cmpl-1', object: 'text_completion', created: 100, model: 'm', choices: [{ index: 0, text: 'b', logprobs: null, finish_reason: null }] },
  ],
  [
    "chat: the second choice's piece carries its index",
    chunkEvent('chat', IDS, { index: 1, text: 'c' }),
    {
      id: 'cmpl-1',
      object: 'chat.completion.chunk',
      created: 100,
      model: 'm',
      choices: [{ index: 1, delta: { content: 'c' }, logprobs: null, finish_reason: null }],
    },
  ],
  [
    'include_usage: no choices',
    chunkEvent('chat', IDS, { usage: U }),
    { id: 'cmpl-1', object: 'chat.completion.chunk', created: 100, model: 'm', choices: [], usage: U },
  ],
];

for (const [name, event, want] of CHUNKS) {
  test(`chunk: ${name}`, () => {
    assert.ok(event.startsWith('data: ') && event.endsWith('\n\n'));
    assert.deepEqual(JSON.parse(event.slice(6)), want);
  });
}

test('the stream ends with data: [DONE]', () => assert.equal(DONE_EVENT, 'data: [DONE]\n\n'));

const STOPS: [string, string, string[], { stopAt?: number; safe: number }][] = [
  ['no stops: all is safe', 'abc', [], { safe: 3 }],
  ['a stop found: the text ends before it', 'one two. three', ['.'], { stopAt: 7, safe: 7 }],
  ['the earliest of two', 'a END b STOP', ['STOP', 'END'], { stopAt: 2, safe: 2 }],
  ['a tail that may start a stop is held back', 'hello EN', ['END'], { safe: 6 }],
  ['the longest such tail', 'x ab', ['bd', 'abc'], { safe: 2 }],
  ['no tail matches', 'hello', ['END'], { safe: 5 }],
];

for (const [name, text, stops, want] of STOPS) test(`stop: ${name}`, () => assert.deepEqual(stopScan(text, stops), want));

const WORDS: [string, number][] = [
  ['', 0],
  ['  ', 0],
  ['one', 1],
  [' a  b\nc ', 3],
];
for (const [text, n] of WORDS) test(`wordCount(${JSON.stringify(text)}) = ${n}`, () => assert.equal(wordCount(text), n));

test('the fallback chat prompt: one role line per message, then assistant:', () => {
  assert.equal(
    fallbackChatPrompt([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi' },
    ]),
    'system: be brief\nuser: hi\nassistant:',
  );
  const t = ModelText.NONE;
  assert.equal(t.hasTokenizer, false);
  assert.equal(t.renderChat([{ role: 'user', content: 'x' }]), 'user: x\nassistant:');
  assert.equal(t.count('a b c'), 3);
  assert.equal(t.decode([1, 2]), undefined, 'no tokenizer: token ids cannot be read');
});
