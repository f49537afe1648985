/**
 * A model reloaded with a new chat template and tokenizer: the OpenAI
 * routes' next request uses them (openai-model-text.ts ModelTexts, keyed by
 * the model's load). The new files keep the old ones' size and mtime, so a
 * look at the files alone would take them as unchanged: only the reload
 * tells (a config.pbtxt comment makes the explicit load a reload). The
 * model is the decoupled Python mock LLM (fixtures/openai_models), which
 * answers its prompt's words.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, startServer } from './server-process';
import type { ServerProcess } from './server-process';

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures/openai_models');
const MODEL = 'reload_llm';
let server: ServerProcess;
let repo: string;
let dir: string;

/** A WordLevel tokenizer.json whose token 1 is `word`. */
function tokenizer(word: string): string {
  return JSON.stringify({
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [],
    normalizer: null,
    pre_tokenizer: { type: 'Whitespace' },
    post_processor: null,
    decoder: null,
    model: { type: 'WordLevel', vocab: { '[UNK]': 0, [word]: 1 }, unk_token: '[UNK]' },
  });
}

/** The model's text files as given, with one fixed mtime whatever their content. */
function writeTexts(template: string, word: string): void {
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify({ chat_template: template }));
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), tokenizer(word));
  for (const f of ['tokenizer_config.json', 'tokenizer.json']) fs.utimesSync(path.join(dir, f), 1e9, 1e9);
}

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-openai-reload-'));
  dir = path.join(repo, MODEL);
  fs.mkdirSync(path.join(dir, '1'), { recursive: true });
  fs.copyFileSync(path.join(FIXTURES, 'mock_llm/1/model.py'), path.join(dir, '1/model.py'));
  fs.writeFileSync(
    path.join(dir, 'config.pbtxt'),
    fs.readFileSync(path.join(FIXTURES, 'templated_llm/config.pbtxt'), 'utf8').replace('name: "templated_llm"', `name: "${MODEL}"`),
  );
  writeTexts('T1 {{ messages[0].content }}', 'hello');
  server = await startServer([`--model-repository=${repo}`, '--model-control-mode=explicit', `--load-model=${MODEL}`]);
});

after(async () => {
  if (server !== undefined) assert.equal(await server.stop(), 0, 'the server stops cleanly with every arena block back');
  fs.rmSync(repo, { recursive: true, force: true });
});

async function post(route: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.url}${route}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

/** The chat answer (the template's prompt, echoed) and a token-id prompt read with the tokenizer. */
async function texts(): Promise<{ chat: string; decoded: string }> {
  const chat = await post('/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
  assert.equal(chat.status, 200, JSON.stringify(chat.body));
  const completion = await post('/v1/completions', { model: MODEL, prompt: [1], max_tokens: 1 });
  assert.equal(completion.status, 200, JSON.stringify(completion.body));
  return { chat: chat.body.choices[0].message.content, decoded: completion.body.choices[0].text };
}

test('a reload with a new template and tokenizer (same sizes, same mtimes): the next requests use them', async () => {
  assert.deepEqual(await texts(), { chat: 'T1 hi', decoded: 'hello' });
  writeTexts('T2 {{ messages[0].content }}', 'howdy');
  fs.appendFileSync(path.join(dir, 'config.pbtxt'), '# reloaded\n');
  const load = await fetch(`${server.url}/v2/repository/models/${MODEL}/load`, { method: 'POST' });
  assert.equal(load.status, 200, await load.text());
  assert.deepEqual(await texts(), { chat: 'T2 hi', decoded: 'howdy' }, "the reloaded model's template and tokenizer, at once");
  // And again a moment later (the text is kept, not read per request): still the new one.
  assert.deepEqual(await texts(), { chat: 'T2 hi', decoded: 'howdy' });
});
