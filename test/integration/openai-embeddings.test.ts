/**
 * `POST /v1/embeddings` on the real server, driven by the official `openai`
 * Python client (fixtures/openai_client.py, step `embeddings`) with the
 * Python mock embedding model of fixtures/openai_models/mock_embedder
 * (text_input → FP32 embedding, dynamically batched): the model list names
 * it, float and base64 bodies carry the same vectors in input order (the
 * client's default asks base64 and decodes it), `dimensions` reaches the
 * model, `usage` counts the inputs' words, and the errors in OpenAI's body
 * with `param`: an LLM asked for embeddings, an embedding model asked for a
 * chat, an unknown model, a model error, a size the model refuses,
 * token ids without a tokenizer, an empty input; the model serves on after.
 * And the repository's example, model_repository/tiny_embedder (ONNX +
 * tiny_llm's tokenizer, mean-pooled): its tokenizer counts `usage` and reads
 * token-id inputs, and `dimensions` shortens its vectors.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MODEL_REPOSITORY, REPO_ROOT, startServer } from './server-process';
import type { ServerProcess } from './server-process';
import { needsPython } from './needs';

/** The official openai Python client the tests drive (fixtures/openai_client.py). */
const NO_OPENAI = needsPython('python3', [{ module: 'openai', pkg: 'openai' }], 'python3 -m pip install openai');

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures');
let server: ServerProcess;
let repo: string;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-embeddings-'));
  for (const m of ['mock_llm', 'mock_embedder']) fs.cpSync(path.join(FIXTURES, 'openai_models', m), path.join(repo, m), { recursive: true });
  fs.cpSync(path.join(MODEL_REPOSITORY, 'tiny_embedder'), path.join(repo, 'tiny_embedder'), { recursive: true });
  server = await startServer([`--model-repository=${repo}`]);
});

after(async () => {
  if (server !== undefined) assert.equal(await server.stop(), 0, 'the server stops cleanly with every arena block back');
  fs.rmSync(repo, { recursive: true, force: true });
});

function client(step: string, ...more: string[]): Promise<Record<string, any>> {
  return new Promise((resolve, reject) => {
    execFile('python3', [path.join(FIXTURES, 'openai_client.py'), `${server.url}/v1`, step, ...more], { timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`${err.message}\n${stderr}`));
      resolve(JSON.parse(stdout) as Record<string, any>);
    });
  });
}

const norm = (v: number[]): number => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

test('the openai client: embeddings as floats and base64, dimensions, usage, and the errors with their param', { skip: NO_OPENAI }, async () => {
  const o = await client('embeddings');
  assert.deepEqual(o.models, ['mock_embedder', 'mock_llm', 'tiny_embedder'], '/v1/models lists the embedding models beside the LLM');

  const f = o.float;
  assert.equal(f.object, 'list');
  assert.equal(f.model, 'mock_embedder');
  assert.deepEqual(
    f.data.map((d: any) => [d.object, d.index, d.embedding.length]),
    [
      ['embedding', 0, 16],
      ['embedding', 1, 16],
    ],
  );
  for (const d of f.data) assert.ok(Math.abs(norm(d.embedding) - 1) < 1e-5, 'the mock answers unit vectors');
  assert.notDeepEqual(f.data[0].embedding, f.data[1].embedding, 'two texts, two vectors, in input order');
  assert.deepEqual(f.usage, { prompt_tokens: 4, total_tokens: 4 }, "no tokenizer.json: the inputs' words");

  // The client's default (base64, decoded by the client) gives the same floats.
  assert.deepEqual(
    o.default.data.map((d: any) => d.embedding),
    f.data.map((d: any) => d.embedding),
  );
  const raw = Buffer.from(o.base64.data[0].embedding as string, 'base64');
  assert.equal(raw.length, 16 * 4);
  const fromB64 = Array.from({ length: 16 }, (_, i) => raw.readFloatLE(i * 4));
  assert.deepEqual(fromB64, f.data[0].embedding, 'base64 is the float32 bytes of the same vector');

  assert.equal(o.dims.data[0].embedding.length, 4, 'dimensions reached the model');

  assert.equal(o.not_embedding.status, 400);
  assert.equal(o.not_embedding.body.param, 'model');
  assert.equal(o.not_embedding.body.code, 'model_not_embedding');
  assert.match(
    o.not_embedding.body.message,
    /The model 'mock_llm' is not an embedding model: \/v1\/embeddings needs a BYTES input 'text_input' and an FP32 output 'embedding'/,
  );
  assert.equal(o.chat_on_embedder.status, 400);
  assert.equal(o.chat_on_embedder.body.param, 'model');
  assert.match(o.chat_on_embedder.body.message, /'mock_embedder' does not take Triton's LLM contract/);
  assert.equal(o.unknown.status, 404);
  assert.equal(o.unknown.body.code, 'model_not_found');
  assert.equal(o.model_error.status, 500);
  assert.match(o.model_error.body.message, /model 'mock_embedder': mock_embedder: the text asked for an error/);
  assert.equal(o.too_many_dims.status, 500);
  assert.match(o.too_many_dims.body.message, /asked for 64 dimensions, it has 16/);
  assert.equal(o.token_ids.status, 400);
  assert.equal(o.token_ids.body.param, 'input');
  assert.match(o.token_ids.body.message, /input\[0\] is token ids, but the model 'mock_embedder' has no tokenizer\.json/);
  assert.equal(o.empty.status, 400);
  assert.equal(o.empty.body.param, 'input');

  assert.equal(o.after.data[0].embedding.length, 16, 'the model serves on after the errors');
});

test('a plain HTTP client: three inputs answered in input order, unknown fields ignored; GET is 405', async () => {
  const res = await fetch(`${server.url}/v1/embeddings`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'mock_embedder', input: ['a', 'b', 'c'], encoding_format: 'float', user: 'ignored' }),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/json');
  const body = (await res.json()) as { data: { index: number }[] };
  assert.deepEqual(
    body.data.map((d) => d.index),
    [0, 1, 2],
  );
  const get = await fetch(`${server.url}/v1/embeddings`);
  assert.equal(get.status, 405);
});

test('tiny_embedder: its tokenizer counts usage and reads token ids; dimensions shortens the vector to unit length', { skip: NO_OPENAI }, async () => {
  const o = await client('tiny_embedder', path.join(repo, 'tiny_embedder', 'tokenizer.json'));
  const [a, b] = o.texts.data.map((d: any) => d.embedding as number[]);
  assert.equal(a!.length, 32);
  assert.ok(Math.abs(norm(a!) - 1) < 1e-5 && Math.abs(norm(b!) - 1) < 1e-5);
  assert.notDeepEqual(a, b);
  assert.equal(o.texts.usage.prompt_tokens, o.expected_tokens, "usage is the model tokenizer's count");
  // The ids of "The server streams", decoded by the server with the same tokenizer, give the same vector.
  assert.deepEqual(o.ids.data[0].embedding, a);
  const short = o.dims.data[0].embedding as number[];
  assert.equal(short.length, 8);
  assert.ok(Math.abs(norm(short) - 1) < 1e-5);
  const head = a!.slice(0, 8);
  const scale = norm(head);
  short.forEach((x, i) => assert.ok(Math.abs(x - head[i]! / scale) < 1e-5, 'the first 8 values, at unit length again'));
});
