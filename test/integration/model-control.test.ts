/**
 * Model management against the real server: explicit mode (--load-model,
 * index/load/unload round trips, config and file overrides, load failure
 * text, unload with requests in flight, restricted API), and poll mode
 * (a new version, a broken config keeping the last good version serving,
 * added and removed models, duplicate names across repositories).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startServer } from './server-process';
import type { ServerProcess } from './server-process';
import { inferSimple, makeRepo, post, repoIndex, waitFor } from './repo-kit';
import type { IndexEntry } from './repo-kit';

const KEY = { 'admin-key': 'secret' };

describe('explicit mode', () => {
  let server: ServerProcess;
  let repo: string;
  before(async () => {
    repo = makeRepo(['simple', 'dense_classifier']);
    // `broken`: a valid config whose model file is missing.
    fs.mkdirSync(path.join(repo, 'broken', '1'), { recursive: true });
    fs.writeFileSync(
      path.join(repo, 'broken', 'config.pbtxt'),
      fs.readFileSync(path.join(repo, 'simple', 'config.pbtxt'), 'utf8').replace('name: "simple"', 'name: "broken"'),
    );
    server = await startServer([
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      '--load-model=simple',
      '--http-restricted-api=model-repository:admin-key=secret',
    ]);
  });
  after(async () => {
    await server.stop();
    fs.rmSync(repo, { recursive: true, force: true });
  });

  test('--load-model loads only the named model; the index lists the others by name', async () => {
    assert.match(server.output(), /\| simple +\| 1 +\| READY/);
    assert.doesNotMatch(server.output(), /\| dense_classifier/);
    assert.deepEqual(await repoIndex(server.url, KEY), [{ name: 'broken' }, { name: 'dense_classifier' }, { name: 'simple', version: '1', state: 'READY' }]);
    assert.deepEqual(await repoIndex(server.url, KEY, true), [{ name: 'simple', version: '1', state: 'READY' }]);
    assert.equal((await inferSimple(server.url)).status, 200);
  });

  test('restricted API: 403 without the key (before the method check), and nothing changes', async () => {
    const denied = await post(server.url, '/v2/repository/models/dense_classifier/load');
    assert.equal(denied.status, 403);
    assert.deepEqual(JSON.parse(denied.text), { error: "This API is restricted, expecting header 'admin-key'" });
    const wrongKey = await post(server.url, '/v2/repository/models/dense_classifier/load', undefined, { 'admin-key': 'nope' });
    assert.equal(wrongKey.status, 403);
    const get = await fetch(server.url + '/v2/repository/index');
    assert.equal(get.status, 403);
    const getWithKey = await fetch(server.url + '/v2/repository/index', { headers: KEY });
    assert.equal(getWithKey.status, 405);
    const index = await repoIndex(server.url, KEY);
    assert.deepEqual(
      index.find((e) => e.name === 'dense_classifier'),
      { name: 'dense_classifier' },
    );
    // Other categories are not restricted.
    assert.equal((await fetch(server.url + '/v2/models/simple')).status, 200);
  });

  test('load, index, unload round trip', async () => {
    const load = await post(server.url, '/v2/repository/models/dense_classifier/load', undefined, KEY);
    assert.equal(load.status, 200, load.text);
    assert.equal(load.text, '');
    assert.equal((await fetch(server.url + '/v2/models/dense_classifier/ready')).status, 200);
    const again = await post(server.url, '/v2/repository/models/dense_classifier/load', {}, KEY);
    assert.equal(again.status, 200);
    const unload = await post(server.url, '/v2/repository/models/dense_classifier/unload', { parameters: { unload_dependents: false } }, KEY);
    assert.equal(unload.status, 200, unload.text);
    await waitFor('dense_classifier unloaded', async () =>
      (await repoIndex(server.url, KEY)).some((e) => e.name === 'dense_classifier' && e.reason === 'unloaded'),
    );
    assert.deepEqual(
      (await repoIndex(server.url, KEY)).find((e) => e.name === 'dense_classifier'),
      { name: 'dense_classifier', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' },
    );
    assert.notEqual((await fetch(server.url + '/v2/models/dense_classifier/ready')).status, 200);
    const unknown = await post(server.url, '/v2/repository/models/not_there/unload', undefined, KEY);
    assert.equal(unknown.status, 200);
  });

  test('load errors carry Triton texts', async () => {
    const broken = await post(server.url, '/v2/repository/models/broken/load', undefined, KEY);
    assert.equal(broken.status, 400);
    const file = path.join(repo, 'broken', '1', 'model.onnx');
    assert.deepEqual(JSON.parse(broken.text), {
      error: `load failed for model 'broken': version 1 is at UNAVAILABLE state: Internal: failed to stat file ${file}. broken/1/ is empty: put model.onnx there.;\n`,
    });
    const entry = (await repoIndex(server.url, KEY)).find((e) => e.name === 'broken');
    assert.deepEqual(entry, {
      name: 'broken',
      version: '1',
      state: 'UNAVAILABLE',
      reason: `Internal: failed to stat file ${file}. broken/1/ is empty: put model.onnx there.`,
    });
    const cases: [string, unknown, number, string][] = [
      ['/v2/repository/models/nope/load', undefined, 500, "failed to load 'nope', failed to poll from model repository"],
      ['/v2/repository/models/%20/load', undefined, 400, 'Model name cannot be empty. Please enter a valid name to deploy.'],
      ['/v2/repository/r1/models/simple/load', undefined, 501, "'repository_name' specification is not supported"],
      ['/v2/repository/models/simple/load', { parameters: { config: 1 } }, 500, 'attempt to access JSON non-string as string'],
      ['/v2/repository/models/simple/load', { parameters: { other: 'x' } }, 500, 'unexpected error on creating Triton parameter'],
      [
        '/v2/repository/models/simple/load',
        { parameters: { 'file:1/model.onnx': 'AA==' } },
        400,
        "Load parameter 'config' must be specified for model file override",
      ],
      ['/v2/repository/index', { ready: 'yes' }, 400, "Invalid value for 'ready': expected a boolean"],
    ];
    for (const [p, body, status, error] of cases) {
      const a = await post(server.url, p, body, KEY);
      assert.equal(a.status, status, `${p}: ${a.text}`);
      assert.deepEqual(JSON.parse(a.text), { error }, p);
    }
    // Triton: the poll fails (the reason is logged) and the load answers 500 "failed to load"; the reason follows here too.
    const badConfig = await post(server.url, '/v2/repository/models/simple/load', { parameters: { config: '{"max_batch_size": "x"}' } }, KEY);
    assert.equal(badConfig.status, 500);
    assert.match(JSON.parse(badConfig.text).error, /^failed to load 'simple', failed to poll from model repository: Invalid config override: /);
    assert.match(server.output(), /Poll failed for model directory 'simple': Invalid config override: /);
    // An override file whose name the file system cannot hold: named, no temporary path, no raw errno text.
    const longName = await post(
      server.url,
      '/v2/repository/models/simple/load',
      { parameters: { config: '{}', [`file:1/${'n'.repeat(256)}.onnx`]: 'AA==' } },
      KEY,
    );
    assert.equal(longName.status, 400, longName.text);
    assert.match(
      JSON.parse(longName.text).error,
      /^Invalid file parameter 'file:1\/n+\.\.\.': a file or folder name in it is longer than the file system allows \(255 bytes\)$/,
    );
    assert.doesNotMatch(longName.text, /nodetron-override-|ENAMETOOLONG|\/tmp\//);
    const escape = await post(server.url, '/v2/repository/models/simple/load', { parameters: { config: '{}', 'file:../../etc/x': 'AA==' } }, KEY);
    assert.equal(escape.status, 400);
    assert.match(JSON.parse(escape.text).error, /^Invalid file parameter 'file:\.\.\/\.\.\/etc\/x'/);
    assert.equal((await inferSimple(server.url)).status, 200);
  });

  test('load with a JSON config override (lowerCamelCase, case-insensitive enums), then with file overrides', async () => {
    const config = JSON.stringify({ maxBatchSize: 4, instance_group: [{ kind: 'kind_cpu', count: 1 }] });
    const a = await post(server.url, '/v2/repository/models/simple/load', { parameters: { config } }, KEY);
    assert.equal(a.status, 200, a.text);
    const cfg = (await (await fetch(server.url + '/v2/models/simple/config')).json()) as {
      max_batch_size: number;
      instance_group: { kind: string; count: number }[];
    };
    assert.equal(cfg.max_batch_size, 4);
    assert.deepEqual(
      cfg.instance_group.map((g) => [g.kind, g.count]),
      [['KIND_CPU', 1]],
    );
    assert.equal((await inferSimple(server.url)).status, 200);

    const onnx = fs.readFileSync(path.join(repo, 'simple', '1', 'model.onnx')).toString('base64');
    const b = await post(
      server.url,
      '/v2/repository/models/simple/load',
      { parameters: { config: JSON.stringify({ max_batch_size: 2, platform: 'onnxruntime_onnx' }), 'file:3/model.onnx': onnx } },
      KEY,
    );
    assert.equal(b.status, 200, b.text);
    await waitFor('simple v1 retired', async () =>
      (await repoIndex(server.url, KEY)).some((e) => e.name === 'simple' && e.version === '1' && e.reason === 'unloaded'),
    );
    const r = await inferSimple(server.url);
    assert.equal(r.status, 200);
    assert.equal(r.version, '3');
    // A plain load goes back to the repository's own files and config.
    const c = await post(server.url, '/v2/repository/models/simple/load', undefined, KEY);
    assert.equal(c.status, 200, c.text);
    const back = (await (await fetch(server.url + '/v2/models/simple/config')).json()) as { max_batch_size: number };
    assert.equal(back.max_batch_size, 8);
    await waitFor('simple v1 serving again', async () => (await inferSimple(server.url)).version === '1');
  });

  test('unload while requests are in flight: every admitted request succeeds', async () => {
    // A long batching delay holds the requests in the scheduler's queue until the unload drains it.
    const config = JSON.stringify({
      max_batch_size: 64,
      instance_group: [{ count: 1 }],
      dynamic_batching: { preferred_batch_size: [64], max_queue_delay_microseconds: 20_000_000 },
    });
    assert.equal((await post(server.url, '/v2/repository/models/simple/load', { parameters: { config } }, KEY)).status, 200);
    const requests = Array.from({ length: 16 }, () => inferSimple(server.url));
    await new Promise((r) => setTimeout(r, 300)); // let them reach the queue
    const unload = await post(server.url, '/v2/repository/models/simple/unload', undefined, KEY);
    assert.equal(unload.status, 200);
    const results = await Promise.all(requests);
    assert.deepEqual(
      results.filter((r) => r.status !== 200).map((r) => r.text),
      [],
    );
    await waitFor('simple unloaded', async () =>
      (await repoIndex(server.url, KEY)).some((e) => e.name === 'simple' && e.reason === 'unloaded' && e.version === '1'),
    );
    assert.notEqual((await inferSimple(server.url)).status, 200);
    assert.equal((await post(server.url, '/v2/repository/models/simple/load', undefined, KEY)).status, 200);
    assert.equal((await inferSimple(server.url)).status, 200);
  });
});

describe('poll mode', () => {
  let server: ServerProcess;
  let repoA: string;
  let repoB: string;
  const entries = (name: string, all: IndexEntry[]): IndexEntry[] => all.filter((e) => e.name === name);
  before(async () => {
    repoA = makeRepo(['simple', 'identity_types']);
    repoB = makeRepo(['identity_types']);
    server = await startServer([
      `--model-repository=${repoA}`,
      `--model-repository=${repoB}`,
      '--model-control-mode=poll',
      '--repository-poll-secs=1',
      '--exit-on-error=false',
      '--strict-readiness=false',
    ]);
  });
  after(async () => {
    await server.stop();
    for (const r of [repoA, repoB]) fs.rmSync(r, { recursive: true, force: true });
  });

  test('a name in two repositories is refused', async () => {
    assert.match(server.output(), /failed to poll model 'identity_types': not unique across all model repositories/);
    assert.deepEqual(entries('identity_types', await repoIndex(server.url)), [
      { name: 'identity_types', state: 'UNAVAILABLE', reason: 'model appears in two or more repositories' },
    ]);
  });

  test('load/unload are refused outside explicit mode', async () => {
    for (const verb of ['load', 'unload']) {
      const a = await post(server.url, `/v2/repository/models/simple/${verb}`);
      assert.equal(a.status, 503);
      assert.deepEqual(JSON.parse(a.text), {
        error:
          'explicit model load / unload is not allowed if polling is enabled. Start the server with --model-control-mode=explicit to load and unload models through the repository API.',
      });
    }
  });

  test('a new version is picked up, a broken config keeps the last good version serving', async () => {
    const dir = path.join(repoA, 'simple');
    fs.cpSync(path.join(dir, '1'), path.join(dir, '2'), { recursive: true });
    await waitFor('simple v2 READY, v1 retired', async () => {
      const e = entries('simple', await repoIndex(server.url));
      return e.some((x) => x.version === '2' && x.state === 'READY') && e.some((x) => x.version === '1' && x.reason === 'unloaded');
    });
    assert.equal((await inferSimple(server.url)).version, '2');

    fs.writeFileSync(path.join(dir, 'config.pbtxt'), 'name: "simple"\nmax_batch_size: [[[\n');
    await waitFor('the broken config reported', async () =>
      entries('simple', await repoIndex(server.url)).some((x) => x.version === '2' && /failed to read text proto/.test(x.reason ?? '')),
    );
    const v2 = entries('simple', await repoIndex(server.url)).find((x) => x.version === '2');
    assert.equal(v2?.state, 'READY');
    const r = await inferSimple(server.url);
    assert.equal(r.status, 200);
    assert.equal(r.version, '2');
  });

  test('added and removed models', async () => {
    fs.cpSync(path.join(repoA, 'simple', '1'), path.join(repoA, 'added', '1'), { recursive: true });
    fs.writeFileSync(path.join(repoA, 'added', 'config.pbtxt'), 'name: "added"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n');
    await waitFor('added READY', async () => (await inferSimple(server.url, 'added')).status === 200);
    fs.rmSync(path.join(repoA, 'added'), { recursive: true, force: true });
    await waitFor('added gone', async () => entries('added', await repoIndex(server.url)).length === 0);
    assert.notEqual((await inferSimple(server.url, 'added')).status, 200);
  });
});
