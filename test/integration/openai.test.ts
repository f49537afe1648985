/**
 * The OpenAI-compatible routes (`/v1/models`, `/v1/completions`,
 * `/v1/chat/completions`) on the real server's HTTP port, driven by the
 * official `openai` Python client (fixtures/openai_client.py), with the
 * decoupled Python mock LLMs of fixtures/openai_models: the model list, a
 * completion with its sampling fields reaching the model as parameters, a
 * chat completion, a streamed one whose chunks join into the same text
 * (`[DONE]` consumed by the client), max_tokens and finish_reason, `stop`
 * (streamed and not), a chat template and tokenizer from the model's
 * folder, OpenAI's errors (NotFoundError, BadRequestError), curl's view of
 * the SSE framing, a client closing its stream: the model sees
 * `is_cancelled()`, and --openai-port serving the same routes alone.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, startServer } from './server-process';
import type { ServerProcess } from './server-process';
import { needsPython } from './needs';

/** The official openai Python client the tests drive (fixtures/openai_client.py). */
const NO_OPENAI = needsPython('python3', [{ module: 'openai', pkg: 'openai' }], 'python3 -m pip install openai');

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures');
let server: ServerProcess;
let repo: string;
let marks: string;
/** --openai-port=0's bound port. */
let openaiPort = 0;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-openai-'));
  marks = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-openai-marks-'));
  for (const m of ['mock_llm', 'templated_llm']) {
    fs.cpSync(path.join(FIXTURES, 'openai_models', m), path.join(repo, m), { recursive: true });
    // templated_llm is mock_llm's model.py with a template and a tokenizer of its own.
    if (m === 'templated_llm') {
      fs.mkdirSync(path.join(repo, m, '1'), { recursive: true });
      fs.copyFileSync(path.join(FIXTURES, 'openai_models/mock_llm/1/model.py'), path.join(repo, m, '1/model.py'));
    }
    fs.appendFileSync(
      path.join(repo, m, 'config.pbtxt'),
      `parameters [ { key: "marks" value: { string_value: "${marks}" } }, { key: "delay_ms" value: { string_value: "5" } } ]\n`,
    );
  }
  server = await startServer([`--model-repository=${repo}`, '--openai-port=0', '--openai-restricted-api', 'health', 'probe-key', 'p1']);
  openaiPort = Number(/Started OpenAI-compatible frontend at \S*:(\d+)/.exec(server.output())?.[1] ?? 0);
});

after(async () => {
  if (server !== undefined) assert.equal(await server.stop(), 0, 'the server stops cleanly with every arena block back');
  fs.rmSync(repo, { recursive: true, force: true });
  fs.rmSync(marks, { recursive: true, force: true });
});

function client(step: string, base = `${server.url}/v1`): Promise<Record<string, any>> {
  return new Promise((resolve, reject) => {
    execFile('python3', [path.join(FIXTURES, 'openai_client.py'), base, step], { timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`${err.message}\n${stderr}`));
      resolve(JSON.parse(stdout) as Record<string, any>);
    });
  });
}

async function counts(model: string): Promise<{ success: number; fail: number }> {
  const res = await fetch(`${server.url}/v2/models/${model}/stats`);
  const s = ((await res.json()) as { model_stats: { inference_stats: { success: { count: number }; fail: { count: number } } }[] }).model_stats[0]!
    .inference_stats;
  return { success: s.success.count, fail: s.fail.count };
}

async function failures(model: string): Promise<number> {
  return (await counts(model)).fail;
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('the openai client: models, completions, chat, streaming, stop, templates, errors', { skip: NO_OPENAI }, async () => {
  const o = await client('basic');
  assert.deepEqual(o.models, ['mock_llm', 'templated_llm']);
  assert.equal(o.one_model.id, 'templated_llm');
  assert.equal(o.one_model.object, 'model');
  assert.equal(o.unknown_retrieve.raised, 'NotFoundError');

  const c = o.completion;
  assert.equal(c.object, 'text_completion');
  assert.equal(c.model, 'mock_llm');
  assert.match(c.id, /^cmpl-/);
  assert.equal(c.choices.length, 1);
  assert.equal(c.choices[0].text, 'one two three tag-cmpl one two');
  assert.equal(c.choices[0].finish_reason, 'length', 'max_tokens reached');
  assert.deepEqual(c.usage, { prompt_tokens: 4, completion_tokens: 6, total_tokens: 10, completion_tokens_details: null, prompt_tokens_details: null });
  // The sampling fields reach the model as request parameters; the unknown field is ignored.
  assert.deepEqual(JSON.parse(fs.readFileSync(path.join(marks, 'cmpl.params'), 'utf8')), { max_tokens: 6, temperature: 0.5, top_p: 0.9, seed: 7 });

  const ch = o.chat;
  assert.equal(ch.object, 'chat.completion');
  assert.match(ch.id, /^chatcmpl-/);
  assert.equal(ch.choices[0].message.role, 'assistant');
  // No chat template in mock_llm's folder: the fallback prompt "user: hi there\nassistant:".
  assert.equal(ch.choices[0].message.content, 'user: hi there assistant: user:');
  assert.equal(ch.choices[0].finish_reason, 'length');

  const chunks = o.chunks as any[];
  assert.ok(chunks.length > 3);
  assert.equal(chunks[0].object, 'chat.completion.chunk');
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  const joined = chunks
    .filter((k) => k.choices.length > 0)
    .map((k) => k.choices[0].delta.content ?? '')
    .join('');
  assert.equal(joined, ch.choices[0].message.content, 'the streamed pieces join into the non-streamed text');
  const withChoices = chunks.filter((k) => k.choices.length > 0);
  assert.equal(withChoices[withChoices.length - 1].choices[0].finish_reason, 'length');
  const last = chunks[chunks.length - 1];
  assert.deepEqual(last.choices, [], 'include_usage: a last chunk with usage only');
  assert.equal(last.usage.completion_tokens, 5);
  assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + 5);

  assert.equal(o.stop.choices[0].text, 'a b');
  assert.equal(o.stop.choices[0].finish_reason, 'stop');
  assert.equal(o.stop_stream, 'a b', 'the streamed text stops before the stop sequence too');
  // echo: the prompt leads the text, and a stop sequence inside the prompt does not cut it.
  assert.equal(o.echo_stop.choices[0].text, 'x c yx');
  assert.equal(o.echo_stop.choices[0].finish_reason, 'stop');

  // templated_llm: the prompt is its chat template's, the counts its tokenizer's (Whitespace splits "<", "user", ">", ",").
  const t = o.templated;
  assert.equal(t.choices[0].message.content, '<user> hello, world <assistant>');
  assert.equal(t.usage.prompt_tokens, 9);
  assert.equal(t.usage.completion_tokens, 9);

  assert.equal(o.unknown.raised, 'NotFoundError');
  assert.equal(o.unknown.status, 404);
  assert.equal(o.unknown.body.code, 'model_not_found');
  assert.match(o.unknown.body.message, /'no_such_model' does not exist/);
  assert.equal(o.unknown.body.type, 'invalid_request_error');
  assert.equal(o.bad_n.raised, 'BadRequestError');
  assert.equal(o.bad_n.body.param, 'n');
  assert.match(o.bad_n.body.message, /'n' must be between 1 and 128, got 0/);
  assert.equal(o.bad_messages.raised, 'BadRequestError');
  assert.equal(o.bad_messages.body.param, 'messages');
});

test(
  'n and several prompts: one choice per prompt × n, indexed; streamed chunks carry the index; usage sums; token-id prompts',
  { skip: NO_OPENAI },
  async () => {
    // The basic test's three stopped requests are over by now (their models stop within a word): none is a failure.
    const before = await counts('mock_llm');
    assert.equal(before.fail, 0, 'a stop sequence is not a failure');
    const o = await client('choices');
    const m = o.multi;
    assert.deepEqual(
      m.choices.map((c: any) => [c.index, c.text, c.finish_reason]),
      [
        [0, 'a b a', 'length'],
        [1, 'a b a', 'length'],
        [2, 'c d c', 'length'],
        [3, 'c d c', 'length'],
      ],
    );
    // mock_llm has no tokenizer: words. Each prompt counted once (2 + 2), every choice's text (4 × 3).
    assert.deepEqual([m.usage.prompt_tokens, m.usage.completion_tokens, m.usage.total_tokens], [4, 12, 16]);

    const chunks = o.chunks as any[];
    const byIndex = new Map<number, string>();
    const roles = new Set<number>();
    const finishes: [number, string][] = [];
    for (const k of chunks) {
      for (const c of k.choices) {
        if (c.delta.role === 'assistant') roles.add(c.index);
        byIndex.set(c.index, (byIndex.get(c.index) ?? '') + (c.delta.content ?? ''));
        if (c.finish_reason !== null) finishes.push([c.index, c.finish_reason]);
      }
    }
    assert.deepEqual([...roles].sort(), [0, 1], "each choice's first chunk names the role");
    assert.deepEqual([...byIndex.entries()].sort(), [
      [0, 'user: x y assistant:'],
      [1, 'user: x y assistant:'],
    ]);
    assert.deepEqual(
      finishes.sort(),
      [
        [0, 'length'],
        [1, 'length'],
      ],
      'one finish chunk per choice',
    );
    const last = chunks[chunks.length - 1];
    assert.deepEqual(last.choices, []);
    assert.equal(last.usage.completion_tokens, 8, 'usage sums both choices');

    // templated_llm's WordLevel tokenizer reads ids [1, 2] as "hello world".
    assert.equal(o.tokens.choices[0].text, 'hello world hello');
    assert.equal(o.tokens.usage.prompt_tokens, 2);
    assert.equal(o.tokens_no_tokenizer.status, 400);
    assert.equal(o.tokens_no_tokenizer.body.param, 'prompt');
    assert.match(o.tokens_no_tokenizer.body.message, /'prompt' is token ids, but the model 'mock_llm' has no tokenizer\.json/);
    assert.equal(o.logprobs.body.param, 'logprobs');
    assert.equal(o.tools.status, 400);
    assert.equal(o.tools.body.param, 'tools');

    // Both streamed choices stopped at " c": answered then, and their cancelled ends count as successes, not failures.
    assert.deepEqual(o.stop_n, [
      ['a b', 'stop'],
      ['a b', 'stop'],
    ]);
    await until('both stopped choices are cancelled in the model', () => fs.existsSync(path.join(marks, 'stopn.cancelled')));
    // 4 + 2 + 2 requests of mock_llm in this test (the refused ones never reach it), every one a success.
    await until('the statistics count the 8 requests', async () => (await counts('mock_llm')).success === before.success + 8);
    assert.equal((await counts('mock_llm')).fail, 0);
  },
);

test('curl: the SSE framing, data: [DONE] last, and OpenAI error bodies', async () => {
  const run = (route: string, body: string): Promise<string> =>
    new Promise((resolve, reject) => {
      execFile(
        'curl',
        ['-sS', '-N', '-X', 'POST', '-H', 'Content-Type: application/json', '--data-binary', body, '-w', '\n%{http_code}', `${server.url}${route}`],
        (err, stdout) => (err ? reject(err) : resolve(stdout)),
      );
    });
  const s = await run('/v1/completions', JSON.stringify({ model: 'mock_llm', prompt: 'x y', max_tokens: 3, stream: true }));
  const [body, status] = [s.slice(0, s.lastIndexOf('\n')), s.slice(s.lastIndexOf('\n') + 1)];
  assert.equal(status, '200');
  const events = body.slice(0, -2).split('\n\n');
  assert.equal(events[events.length - 1], 'data: [DONE]');
  const texts = events.slice(0, -1).map((e) => (JSON.parse(e.slice(6)) as { choices: { text: string }[] }).choices[0].text);
  assert.equal(texts.join(''), 'x y x');
  const bad = await run('/v1/chat/completions', '{"model": 1}');
  assert.ok(bad.endsWith('\n400'));
  assert.deepEqual(JSON.parse(bad.slice(0, bad.lastIndexOf('\n'))), {
    error: {
      message: "'model' is required: the name of a model this server serves (GET /v1/models lists them), got a number.",
      type: 'invalid_request_error',
      param: 'model',
      code: null,
    },
  });
});

test('a client that closes its chat stream cancels the request: the model sees is_cancelled()', { skip: NO_OPENAI }, async () => {
  // templated_llm: only this test's request ends cancelled on it, so the count is this one's.
  const before = await failures('templated_llm');
  const o = await client('disconnect');
  assert.equal(o.got.length, 4);
  const mark = path.join(marks, 'gone.cancelled');
  await until('the model sees the cancel', () => fs.existsSync(mark));
  const [sent, cancelled] = fs.readFileSync(mark, 'utf8').split(' ');
  assert.equal(cancelled, 'True');
  assert.ok(Number(sent) >= 3 && Number(sent) < 5000, `stopped early, after ${sent} words`);
  await until('the statistics count the cancelled request', async () => (await failures('templated_llm')) === before + 1);
});

test('--openai-port: the same routes on a port of their own, --openai-restricted-api, the v2 API not there', { skip: NO_OPENAI }, async () => {
  assert.ok(openaiPort > 0 && openaiPort !== server.port, `a port of its own: ${openaiPort}`);
  const o = await client('models', `http://127.0.0.1:${openaiPort}/v1`);
  assert.deepEqual(o.models, ['mock_llm', 'templated_llm']);
  assert.equal(o.completion.choices[0].text, 'a b a');
  // --openai-restricted-api health probe-key p1: the probe needs the header; the routes above did not.
  const shut = await fetch(`http://127.0.0.1:${openaiPort}/health/ready`);
  assert.equal(shut.status, 401);
  assert.deepEqual(await shut.json(), {
    error: { message: "This API is restricted, expecting header 'probe-key'", type: 'invalid_request_error', param: null, code: 'restricted_api' },
  });
  const ready = await fetch(`http://127.0.0.1:${openaiPort}/health/ready`, { headers: { 'probe-key': 'p1' } });
  assert.equal(ready.status, 200);
  const v2 = await fetch(`http://127.0.0.1:${openaiPort}/v2/health/ready`);
  assert.equal(v2.status, 404);
  const err = (await v2.json()) as { error: { message: string; type: string } };
  assert.match(err.error.message, /not served on the OpenAI port: it serves GET \/v1\/models/);
  assert.equal(err.error.type, 'invalid_request_error');
});
