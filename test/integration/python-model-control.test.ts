/**
 * pb_utils.load_model, unload_model and is_model_ready from a real Python
 * stub (fixture `model_loader`), through the real server's repository API:
 * in explicit mode a model loads, serves, reports its readiness and unloads;
 * a config and override files load a model folder the repository lacks;
 * failures carry python_backend's prefix ("Failed to load model: ") on the
 * very text the HTTP repository API answers; outside explicit mode load and
 * unload are refused with that API's text, and is_model_ready still answers.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { infer } from '../../src/client/kserve-http-client';
import { MODEL_REPOSITORY, REPO_ROOT, startServer } from './server-process';
import type { ServerProcess } from './server-process';

const FIXTURE = path.join(REPO_ROOT, 'test/integration/fixtures/python_models/model_loader');
const SIMPLE = path.join(MODEL_REPOSITORY, 'simple');

let explicit: ServerProcess;
let none: ServerProcess;
let repo: string;

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-model-control-'));
  fs.cpSync(FIXTURE, path.join(repo, 'model_loader'), { recursive: true });
  fs.cpSync(SIMPLE, path.join(repo, 'simple'), { recursive: true });
  [explicit, none] = await Promise.all([
    startServer([`--model-repository=${repo}`, '--model-control-mode=explicit', '--load-model=model_loader']),
    startServer([`--model-repository=${repo}`]),
  ]);
});

after(async () => {
  assert.equal(await explicit.stop(), 0);
  assert.equal(await none.stop(), 0);
  fs.rmSync(repo, { recursive: true, force: true });
});

const word = (name: string, value: string) => ({ name, datatype: 'BYTES', shape: [1], data: [value] });

async function call(server: ServerProcess, op: string, arg0: string, arg1 = ''): Promise<string> {
  const r = await infer(server.url, 'model_loader', [word('OP', op), word('ARG0', arg0), word('ARG1', arg1)]);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return String((r.json.outputs as { data: string[] }[])[0]!.data[0]);
}

/** The HTTP repository API's error text for the same request. */
async function httpError(server: ServerProcess, action: 'load' | 'unload', model: string): Promise<string> {
  const r = await fetch(`${server.url}/v2/repository/models/${model}/${action}`, { method: 'POST' });
  assert.notEqual(r.status, 200);
  return String(((await r.json()) as { error: string }).error);
}

const ints = (name: string) => ({ name, datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) });

test('explicit mode: load_model loads a model that then serves, is_model_ready follows it, unload_model unloads it', async () => {
  assert.equal(await call(explicit, 'ready', 'simple'), 'False', 'not loaded at start');
  assert.equal(await call(explicit, 'load', 'simple'), 'ok');
  assert.equal(await call(explicit, 'ready', 'simple'), 'True');
  assert.equal(await call(explicit, 'ready', 'simple', '1'), 'True');
  assert.equal(await call(explicit, 'ready', 'simple', '7'), 'False', 'a version the model lacks');
  assert.equal(await call(explicit, 'ready', 'no_such_model'), 'False');
  const r = await infer(explicit.url, 'simple', [ints('INPUT0'), ints('INPUT1')]);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.equal(await call(explicit, 'unload', 'simple'), 'ok');
  let ready = 'True';
  for (let i = 0; i < 50 && ready === 'True'; i++) {
    ready = await call(explicit, 'ready', 'simple');
    if (ready === 'True') await new Promise((res) => setTimeout(res, 100));
  }
  assert.equal(ready, 'False', 'unloaded');
  assert.notEqual((await infer(explicit.url, 'simple', [ints('INPUT0'), ints('INPUT1')])).status, 200);
});

test('a config and override files load a model folder the repository does not have', async () => {
  assert.equal(await call(explicit, 'load_files', 'simple_override', SIMPLE), 'ok');
  assert.equal(await call(explicit, 'ready', 'simple_override'), 'True');
  const r = await infer(explicit.url, 'simple_override', [ints('INPUT0'), ints('INPUT1')]);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.deepEqual(
    (r.json.outputs as { name: string; data: number[] }[])[0]!.data,
    Array.from({ length: 16 }, (_, i) => 2 * i),
  );
  assert.equal(await call(explicit, 'unload', 'simple_override'), 'ok');
});

test('a failed load is "Failed to load model: " and the repository API\'s own text', async () => {
  const http = await httpError(explicit, 'load', 'no_such_model');
  assert.equal(await call(explicit, 'load', 'no_such_model'), `TritonModelException: Failed to load model: ${http}`);
  assert.equal(
    await call(explicit, 'load', 'simple', '{not json'),
    `TritonModelException: Failed to load model: ${await (async () => {
      const r = await fetch(`${explicit.url}/v2/repository/models/simple/load`, {
        method: 'POST',
        body: JSON.stringify({ parameters: { config: '{not json' } }),
      });
      return String(((await r.json()) as { error: string }).error);
    })()}`,
  );
  assert.equal(
    await call(explicit, 'load_bad_files', 'simple'),
    "TritonModelException: failed to load model 'simple', files should be a dictionary of file paths and file contents",
  );
});

test("is_model_ready refuses a version that is not an integer >= 0 with python_backend's texts", async () => {
  assert.equal(
    await call(explicit, 'ready', 'simple', 'abc'),
    "TritonModelException: Failed to check model readiness: failed to get model version from specified version string 'abc' (details: stol), version should be an integral value > 0",
  );
  assert.equal(
    await call(explicit, 'ready', 'simple', '-2'),
    "TritonModelException: Failed to check model readiness: failed to get model version from specified version string '-2', version should be an integral value > 0",
  );
  assert.match(await call(explicit, 'ready_int', 'simple'), /^TypeError: /, 'the version is a str, as in pybind11');
});

test("outside explicit mode load and unload are refused with the repository API's text; is_model_ready answers", async () => {
  const load = await httpError(none, 'load', 'simple');
  // Triton's text first, in none mode too (clients match it); our mode sentence and fix follow.
  assert.match(load, /^explicit model load \/ unload is not allowed if polling is enabled\. The server runs in model control mode 'none'\./);
  assert.equal(await call(none, 'load', 'simple'), `TritonModelException: Failed to load model: ${load}`);
  const unload = await httpError(none, 'unload', 'simple');
  assert.equal(await call(none, 'unload', 'simple'), `TritonModelException: Failed to unload model: ${unload}`);
  assert.equal(await call(none, 'ready', 'simple'), 'True');
  assert.equal(await call(none, 'ready', 'model_loader', '1'), 'True');
  assert.equal((await infer(none.url, 'simple', [ints('INPUT0'), ints('INPUT1')])).status, 200, 'still serving');
});
