/**
 * ModelTexts (openai-model-text.ts): when a model folder's tokenizer files
 * are looked at again, on a fake clock. A request within RECHECK_MS of the
 * last look takes the text read before; a later one sees a changed file;
 * the model's next load (a reload) reads the files at once, whatever the
 * clock and even when they look the same; a file that cannot be used is
 * reported and not kept. The files
 * are real (a temporary folder), read by the real tokenizer and template.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { ModelTexts, RECHECK_MS } from '../../src/frontend/http/openai-model-text';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-model-text-'));
after(() => fs.rmSync(root, { recursive: true, force: true }));

const MESSAGES = [{ role: 'user', content: 'hello world' }];
const WORD_LEVEL = (vocab: string[]): string =>
  JSON.stringify({
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [],
    normalizer: null,
    pre_tokenizer: { type: 'Whitespace' },
    post_processor: null,
    decoder: null,
    model: { type: 'WordLevel', vocab: Object.fromEntries(['[UNK]', ...vocab].map((w, i) => [w, i])), unk_token: '[UNK]' },
  });

let folders = 0;
function folder(template: string | undefined): string {
  const dir = path.join(root, String(folders++));
  fs.mkdirSync(dir);
  if (template !== undefined) fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify({ chat_template: template }));
  return dir;
}

function setTemplate(dir: string, template: string): void {
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify({ chat_template: template }));
}

async function chat(texts: ModelTexts, dir: string): Promise<string> {
  return (await texts.get(dir, 'm')).renderChat(MESSAGES);
}

test('a changed template: unseen within RECHECK_MS of the last look, seen after it', async () => {
  let now = 1_000_000;
  const texts = new ModelTexts(() => now);
  const dir = folder('A {{ messages[0].content }}');
  assert.equal(await chat(texts, dir), 'A hello world');
  setTemplate(dir, 'BB {{ messages[0].content }}');
  now += RECHECK_MS - 1;
  assert.equal(await chat(texts, dir), 'A hello world', 'looked at less than RECHECK_MS ago: the text read before');
  now += 1;
  assert.equal(await chat(texts, dir), 'BB hello world', 'RECHECK_MS after the last look: the files are looked at again');
});

test("a reload (the model's next load) reads the files again, whatever the clock, even when they look the same", async () => {
  const now = 5_000_000;
  const texts = new ModelTexts(() => now);
  const dir = folder('A {{ messages[0].content }}');
  const config = path.join(dir, 'tokenizer_config.json');
  fs.utimesSync(config, 1e9, 1e9);
  assert.equal(await chat(texts, dir), 'A hello world');
  // Same size, same mtime: a look at the files alone would take them as unchanged.
  setTemplate(dir, 'B {{ messages[0].content }}');
  fs.utimesSync(config, 1e9, 1e9);
  assert.equal(await chat(texts, dir), 'A hello world', 'the same load, looked at just now: the text read before');
  // The snapshot that brings the reload reads it at once; a request asked meanwhile waits for that read.
  texts.warm([{ dir, name: 'm', load: 1 }]);
  const text = await texts.get(dir, 'm', 1);
  assert.equal(text.renderChat(MESSAGES), 'B hello world');
});

test('a reload that brings a tokenizer.json: the next request counts and decodes with it', async () => {
  const texts = new ModelTexts(() => 0);
  const dir = folder(undefined);
  assert.equal((await texts.get(dir, 'm', 3)).hasTokenizer, false);
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), WORD_LEVEL(['hello']));
  const text = await texts.get(dir, 'm', 4);
  assert.equal(text.hasTokenizer, true);
  assert.deepEqual([text.count('hello world'), text.decode([1, 0])], [2, 'hello [UNK]']);
});

test('files removed: the fallbacks (role lines, words) after the next look', async () => {
  let now = 0;
  const texts = new ModelTexts(() => now);
  const dir = folder('A {{ messages[0].content }}');
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), WORD_LEVEL(['hello', 'world']));
  assert.equal((await texts.get(dir, 'm')).hasTokenizer, true);
  fs.rmSync(path.join(dir, 'tokenizer.json'));
  fs.rmSync(path.join(dir, 'tokenizer_config.json'));
  now += RECHECK_MS;
  const text = await texts.get(dir, 'm');
  assert.deepEqual([text.renderChat(MESSAGES), text.hasTokenizer, text.count('a b  c')], ['user: hello world\nassistant:', false, 3]);
});

test('a file that cannot be used: the error names it, and once mended the next look reads it', async () => {
  let now = 0;
  const texts = new ModelTexts(() => now);
  const dir = folder(undefined);
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), '{not json');
  await assert.rejects(texts.get(dir, 'm'), /model 'm': tokenizer_config\.json in its folder cannot be used \(it is not a JSON object\)/);
  setTemplate(dir, 'ok {{ messages[0].content }}');
  // A failed read is not kept: the next request reads the files, however soon.
  assert.equal(await chat(texts, dir), 'ok hello world');
  now += 1;
  assert.equal(await chat(texts, dir), 'ok hello world');
});

test('a folder the snapshot no longer has is forgotten; one without a folder has the fallbacks', async () => {
  const texts = new ModelTexts(() => 0);
  const dir = folder('A {{ messages[0].content }}');
  assert.equal(await chat(texts, dir), 'A hello world');
  texts.warm([]);
  setTemplate(dir, 'BB {{ messages[0].content }}');
  assert.equal(await chat(texts, dir), 'BB hello world', 'read again: nothing was kept of it');
  assert.equal((await texts.get(undefined, 'm')).renderChat(MESSAGES), 'user: hello world\nassistant:');
});
