/**
 * Model repositories on S3, against the real `s3rver` (s3-server.ts: its
 * own port and folder, SigV4 signatures checked with the key's secret).
 * Each start uploads a repository (the ONNX `simple`, the ensemble
 * `simple_ensemble` over it, the Python `add_sub`), starts the real server
 * on `s3://127.0.0.1:<port>/<bucket>/<path>` and infers. Also: the cache
 * (a second start downloads nothing), the failures that stop a start
 * (wrong secret: 403 naming the credential source, never the secret; no
 * such bucket; an empty path; an endpoint that does not answer), explicit
 * mode (index from the bucket, load with overrides, unload drops the
 * files), poll mode (a new version and a changed config reload; a broken
 * upload keeps the last good version serving; a model removed from the
 * bucket is unloaded) and mixed local and S3 roots.
 *
 * The SDK is kept on loopback: explicit credentials and endpoint, and
 * AWS_EC2_METADATA_DISABLED, so no instance-metadata request is made.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { MODEL_REPOSITORY, REPO_ROOT, runToExit, startServer } from './server-process';
import type { ServerProcess } from './server-process';
import { SIMPLE_BODY, inferSimple, post, repoIndex, waitFor } from './repo-kit';
import { S3_KEY_ID, S3_REGION, S3_SECRET, startS3 } from './s3-server';
import type { S3Server } from './s3-server';
import { makeNumpyVenv } from './venv-kit';

const FIXTURES = path.join(REPO_ROOT, 'test/integration/fixtures/python_models');
const BUCKET = 'models';

let s3: S3Server;
let tmp: string;
/** Why the EXECUTION_ENV_PATH check is skipped ('' when it runs). */
let noVenv = '';

Object.assign(process.env, {
  AWS_ACCESS_KEY_ID: S3_KEY_ID,
  AWS_SECRET_ACCESS_KEY: S3_SECRET,
  AWS_DEFAULT_REGION: S3_REGION,
  AWS_EC2_METADATA_DISABLED: 'true',
  AWS_CONFIG_FILE: '/dev/null',
  AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
});
delete process.env.AWS_PROFILE;
delete process.env.AWS_SESSION_TOKEN;
delete process.env.TRITON_CLOUD_CREDENTIAL_PATH;

/** A local copy of the test repository: simple, simple_ensemble, add_sub. */
function localRepo(name: string): string {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir, { recursive: true });
  for (const m of ['simple', 'simple_ensemble']) fs.cpSync(path.join(MODEL_REPOSITORY, m), path.join(dir, m), { recursive: true });
  fs.cpSync(path.join(FIXTURES, 'add_sub'), path.join(dir, 'add_sub'), { recursive: true });
  return dir;
}

const url = (prefix: string): string => `s3://${s3.hostPort}/${BUCKET}/${prefix}`;
const cacheDir = (name: string): string => path.join(tmp, `cache-${name}`);

async function inferAddSub(base: string): Promise<number[]> {
  const fp32 = (name: string, data: number[]) => ({ name, datatype: 'FP32', shape: [4], data });
  const a = await post(base, '/v2/models/add_sub/infer', { inputs: [fp32('INPUT0', [1, 2, 3, 4]), fp32('INPUT1', [1, 1, 1, 1])] });
  assert.equal(a.status, 200, a.text);
  return (JSON.parse(a.text) as { outputs: { name: string; data: number[] }[] }).outputs.find((o) => o.name === 'OUTPUT0')!.data;
}

/** simple_ensemble's OUTPUT0 (2 * INPUT0) for INPUT0 = 0..15. */
async function inferEnsemble(base: string): Promise<number[]> {
  const a = await post(base, '/v2/models/simple_ensemble/infer', JSON.parse(SIMPLE_BODY));
  assert.equal(a.status, 200, a.text);
  return (JSON.parse(a.text) as { outputs: { name: string; data: number[] }[] }).outputs.find((o) => o.name === 'OUTPUT0')!.data;
}

/**
 * A Python model `env_tar` whose stub runs in a venv packed as
 * `venv.tar.gz` beside its config (EXECUTION_ENV_PATH
 * $$TRITON_MODEL_DIRECTORY/venv.tar.gz), so the archive comes from the
 * bucket through the cache.
 */
function addEnvModel(repo: string): void {
  const venv = path.join(tmp, 'venv');
  try {
    makeNumpyVenv(venv);
    fs.mkdirSync(path.join(repo, 'env_tar', '1'), { recursive: true });
    execFileSync('tar', ['-czf', path.join(repo, 'env_tar', 'venv.tar.gz'), '-C', venv, '.'], { stdio: 'pipe', timeout: 60_000 });
  } catch (err) {
    noVenv = `python3 -m venv failed: ${(err as Error).message.split('\n')[0]}`;
    return;
  }
  fs.writeFileSync(
    path.join(repo, 'env_tar', 'config.pbtxt'),
    [
      'backend: "python"',
      'input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]',
      'output [ { name: "VENV" data_type: TYPE_STRING dims: [ 1 ] } ]',
      'parameters { key: "EXECUTION_ENV_PATH" value: { string_value: "$$TRITON_MODEL_DIRECTORY/venv.tar.gz" } }',
    ].join('\n'),
  );
  fs.writeFileSync(
    path.join(repo, 'env_tar', '1', 'model.py'),
    [
      'import os',
      'import numpy as np',
      'import triton_python_backend_utils as pb_utils',
      'class TritonPythonModel:',
      '    def execute(self, requests):',
      '        return [pb_utils.InferenceResponse([pb_utils.Tensor("VENV", np.array([os.environ.get("VIRTUAL_ENV", "").encode()], dtype=np.object_))]) for _ in requests]',
    ].join('\n'),
  );
}

/** Objects uploaded under 'repo'. */
let repoObjects = 0;

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-cloud-s3-'));
  s3 = await startS3();
  await s3.createBucket(BUCKET);
  const repo = localRepo('repo');
  addEnvModel(repo);
  repoObjects = execFileSync('find', [repo, '-type', 'f']).toString().trim().split('\n').length;
  await s3.upload(BUCKET, 'repo', repo);
});

after(async () => {
  await s3?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('mode none: the server starts on an S3 root and serves its ONNX, ensemble and Python models (EXECUTION_ENV_PATH from the cache too); a second start downloads nothing', async (t) => {
  const args = [`--model-repository=${url('repo')}`, `--model-cache-dir=${cacheDir('none')}`];
  let server: ServerProcess = await startServer(args);
  try {
    assert.match(server.output(), new RegExp(`mirrored into .* ${repoObjects} of ${repoObjects} objects downloaded`));
    assert.equal((await inferSimple(server.url)).status, 200);
    assert.deepEqual(
      await inferEnsemble(server.url),
      Array.from({ length: 16 }, (_, i) => 2 * i),
    );
    assert.deepEqual(await inferAddSub(server.url), [2, 3, 4, 5]);
    if (noVenv === '') {
      // The stub runs in the venv unpacked from the archive that came through the cache.
      const a = await post(server.url, '/v2/models/env_tar/infer', { inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [0] }] });
      assert.equal(a.status, 200, a.text);
      assert.match(String((JSON.parse(a.text) as { outputs: { data: string[] }[] }).outputs[0].data[0]), /nodetron_python_env/);
    } else {
      t.diagnostic(`EXECUTION_ENV_PATH not checked: ${noVenv}`);
    }
  } finally {
    assert.equal(await server.stop(), 0);
  }
  server = await startServer(args);
  try {
    assert.match(server.output(), new RegExp(`0 of ${repoObjects} objects downloaded, the others unchanged in the cache`));
    assert.equal((await inferSimple(server.url)).status, 200);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('a wrong secret is refused with 403 and the start fails naming the credential file entry, never the secret', async () => {
  const creds = path.join(tmp, 'creds.json');
  const wrong = 'not-the-secret-at-all';
  fs.writeFileSync(
    creds,
    JSON.stringify({
      s3: { '': { key_id: S3_KEY_ID, secret_key: 'x' }, [`s3://${s3.hostPort}/${BUCKET}`]: { key_id: S3_KEY_ID, secret_key: wrong, region: S3_REGION } },
    }),
  );
  const refusedBefore = s3.refusedSignatures();
  process.env.TRITON_CLOUD_CREDENTIAL_PATH = creds;
  let exited;
  try {
    exited = runToExit([`--model-repository=${url('repo')}`, `--model-cache-dir=${cacheDir('wrong')}`]);
  } finally {
    delete process.env.TRITON_CLOUD_CREDENTIAL_PATH;
  }
  const { code, output } = await exited;
  assert.equal(code, 1, output);
  assert.ok(s3.refusedSignatures() > refusedBefore, 's3rver saw no request with a wrong signature');
  const last = output.trim().split('\n').pop()!;
  assert.match(last, /^error: creating server: Internal - Unable to create S3 filesystem client\. Check account credentials\./);
  assert.match(
    last,
    new RegExp(
      `access denied to bucket '${BUCKET}' at .* \\(SignatureDoesNotMatch, HTTP 403.*\\(credential: TRITON_CLOUD_CREDENTIAL_PATH ${creds} entry "s3://${s3.hostPort}/${BUCKET}" \\(key_id NODE…\\)\\)\\. Give that credential`,
    ),
  );
  assert.ok(!output.includes(wrong), 'the secret is in the output');
});

test('a start fails, in seconds and with the reason, on a missing bucket, an empty path, an endpoint that does not answer, a cache it cannot write', async () => {
  const cases: [string, string, RegExp, string?][] = [
    [
      'no such bucket',
      `s3://${s3.hostPort}/nope/repo`,
      /Not found - failed to list the objects of s3:\/\/.*\/nope\/repo: bucket 'nope' not found at the S3 endpoint http:\/\/127\.0\.0\.1:\d+ \(NoSuchBucket.*\(credential: environment AWS_ACCESS_KEY_ID=NODE…\)\. Check the bucket name/,
    ],
    [
      'an empty path',
      url('nothing-here'),
      /Not found - failed to stat file s3:\/\/.*\/nothing-here: no model folder in it \(the listing is empty; credential from environment AWS_ACCESS_KEY_ID=NODE…\)/,
    ],
    [
      'an endpoint that does not answer',
      `s3://127.0.0.1:${await closedPort()}/${BUCKET}/repo`,
      /Unavailable - failed to list the objects of s3:\/\/127\.0\.0\.1:\d+\/models\/repo: the S3 endpoint http:\/\/127\.0\.0\.1:\d+ is unreachable \(ECONNREFUSED.*\(credential: .*\)\. Check the host and port/,
    ],
    [
      'a cache folder it cannot write',
      url('repo'),
      /Internal - cannot cache model repository 's3:\/\/.*\/repo' in --model-cache-dir .*\/a-file\/cache \(ENOTDIR\): point --model-cache-dir at a folder the server can write\.$/,
      path.join(tmp, 'a-file', 'cache'),
    ],
    // Under /proc node's recursive mkdir never returns (cloud-mirror.ts makes the folder level by level).
    [
      'a cache folder that cannot be made',
      url('repo'),
      /Internal - cannot cache model repository 's3:\/\/.*\/repo' in --model-cache-dir \/proc\/nodetron-cache \(ENOENT\): point --model-cache-dir at a folder the server can write\.$/,
      '/proc/nodetron-cache',
    ],
  ];
  fs.writeFileSync(path.join(tmp, 'a-file'), 'not a folder');
  for (const [name, root, want, cache] of cases) {
    const { code, output } = await runToExit([`--model-repository=${root}`, `--model-cache-dir=${cache ?? cacheDir('fail')}`], 30_000);
    assert.equal(code, 1, `${name}: ${output}`);
    assert.match(output.trim().split('\n').pop()!, want, name);
  }
});

/** A port nothing listens on. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** The model's config as the server serves it. */
async function configOf(base: string, model: string): Promise<{ max_batch_size: number }> {
  return (await (await fetch(`${base}/v2/models/${model}/config`)).json()) as { max_batch_size: number };
}

test('explicit mode, beside a local root: the index lists the bucket, a load fetches the model (config and file: overrides work), an unload drops its files', async () => {
  await s3.upload(BUCKET, 'explicit', localRepo('explicit'));
  const local = path.join(tmp, 'explicit-local');
  fs.cpSync(path.join(MODEL_REPOSITORY, 'simple'), path.join(local, 'local_simple'), { recursive: true });
  fs.writeFileSync(
    path.join(local, 'local_simple', 'config.pbtxt'),
    fs.readFileSync(path.join(MODEL_REPOSITORY, 'simple', 'config.pbtxt'), 'utf8').replace('name: "simple"', 'name: "local_simple"'),
  );
  const cache = cacheDir('explicit');
  const server = await startServer([
    `--model-repository=${url('explicit')}`,
    `--model-repository=${local}`,
    '--model-control-mode=explicit',
    `--model-cache-dir=${cache}`,
  ]);
  try {
    const mirror = path.join(
      cache,
      fs.readdirSync(cache).find((d) => d.includes('explicit'))!,
      'models',
    );
    assert.deepEqual(
      (await repoIndex(server.url)).map((e) => [e.name, e.state]),
      [
        ['add_sub', undefined],
        ['local_simple', undefined],
        ['simple', undefined],
        ['simple_ensemble', undefined],
      ],
    );
    assert.equal((await post(server.url, '/v2/repository/models/local_simple/load')).status, 200);
    assert.equal((await inferSimple(server.url, 'local_simple')).status, 200);
    assert.deepEqual(fs.readdirSync(path.join(mirror, 'simple')), [], 'nothing is downloaded before a load');
    // The ensemble's load loads `simple` along, each fetched from the bucket, which is listed once for both.
    const listedBefore = s3.listRequests();
    assert.equal((await post(server.url, '/v2/repository/models/simple_ensemble/load')).status, 200);
    assert.equal(s3.listRequests() - listedBefore, 1, 'the bucket is listed once per load, not once per step');
    assert.deepEqual(
      await inferEnsemble(server.url),
      Array.from({ length: 16 }, (_, i) => 2 * i),
    );
    assert.ok(fs.existsSync(path.join(mirror, 'simple', '1', 'model.onnx')));
    // A config override over the bucket's files.
    const a = await post(server.url, '/v2/repository/models/simple/load', { parameters: { config: JSON.stringify({ maxBatchSize: 4 }) } });
    assert.equal(a.status, 200, a.text);
    assert.equal((await configOf(server.url, 'simple')).max_batch_size, 4);
    // file: overrides (a version 3 of the same ONNX file) come from the request, not the bucket.
    const onnx = fs.readFileSync(path.join(MODEL_REPOSITORY, 'simple', '1', 'model.onnx')).toString('base64');
    const f = await post(server.url, '/v2/repository/models/simple/load', {
      parameters: { config: JSON.stringify({ max_batch_size: 2, platform: 'onnxruntime_onnx' }), 'file:3/model.onnx': onnx },
    });
    assert.equal(f.status, 200, f.text);
    assert.equal((await inferSimple(server.url)).version, '3');
    // A model uploaded after the start is in the next index, and loads.
    await s3.upload(BUCKET, 'explicit/late', path.join(FIXTURES, 'add_sub'));
    assert.ok((await repoIndex(server.url)).some((e) => e.name === 'late'));
    assert.equal((await post(server.url, '/v2/repository/models/add_sub/load')).status, 200);
    assert.deepEqual(await inferAddSub(server.url), [2, 3, 4, 5]);
    // An unload drops the model's files from the cache once it has drained.
    assert.equal((await post(server.url, '/v2/repository/models/add_sub/unload')).status, 200);
    await waitFor('add_sub to leave the cache', async () => !fs.existsSync(path.join(mirror, 'add_sub')));
    assert.ok(fs.existsSync(path.join(mirror, 'simple', '1', 'model.onnx')), 'a loaded model keeps its files');
    // A model that is not in the bucket: Triton's poll failure.
    const missing = await post(server.url, '/v2/repository/models/nowhere/load');
    assert.equal(missing.status, 500, missing.text);
    assert.match(JSON.parse(missing.text).error, /^failed to load 'nowhere', failed to poll from model repository/);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('explicit mode: a root that cannot be listed (its S3 server stopped) does not fail the index; the others are listed, the root is named in the log once; a load still fails naming it (Triton polls every root for a load)', async () => {
  const other = await startS3();
  await other.createBucket('gone');
  await other.upload('gone', 'repo/add_sub', path.join(FIXTURES, 'add_sub'));
  const local = path.join(tmp, 'index-local');
  fs.cpSync(path.join(MODEL_REPOSITORY, 'simple'), path.join(local, 'simple'), { recursive: true });
  const gone = `s3://${other.hostPort}/gone/repo`;
  const server = await startServer([
    `--model-repository=${local}`,
    `--model-repository=${gone}`,
    '--model-control-mode=explicit',
    `--model-cache-dir=${cacheDir('index')}`,
  ]);
  try {
    assert.deepEqual(
      (await repoIndex(server.url)).map((e) => e.name),
      ['add_sub', 'simple'],
    );
    await other.close();
    for (let i = 0; i < 2; i++) {
      assert.deepEqual(
        (await repoIndex(server.url)).map((e) => e.name),
        ['add_sub', 'simple'],
        'the names it listed last stay',
      );
    }
    const lines = server
      .output()
      .split('\n')
      .filter((l) => l.includes(`failed to list model repository '${gone}': `));
    assert.equal(lines.length, 1, server.output());
    assert.match(lines[0], /unreachable \(ECONNREFUSED.*The index shows the models it listed last\./);
    // A load polls every root for the model, as Triton's does: one that cannot be read fails it, naming that root.
    const load = await post(server.url, '/v2/repository/models/simple/load');
    assert.equal(load.status, 500, load.text);
    assert.match(JSON.parse(load.text).error, new RegExp(`^failed to load 'simple', failed to poll from model repository.*${gone}.*unreachable`));
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('poll mode: a new version and a changed config reload; a broken or half upload keeps the last good version serving; a removed model unloads', async () => {
  const local = localRepo('poll-src');
  await s3.upload(BUCKET, 'poll/simple', path.join(local, 'simple'));
  await s3.upload(BUCKET, 'poll/add_sub', path.join(local, 'add_sub'));
  const server = await startServer([
    `--model-repository=${url('poll')}`,
    '--model-control-mode=poll',
    '--repository-poll-secs=1',
    `--model-cache-dir=${cacheDir('poll')}`,
  ]);
  const onnx = fs.readFileSync(path.join(local, 'simple', '1', 'model.onnx'));
  const config = fs.readFileSync(path.join(local, 'simple', 'config.pbtxt'), 'utf8');
  try {
    assert.equal((await inferSimple(server.url)).version, '1');
    await s3.put(BUCKET, 'poll/simple/2/model.onnx', onnx);
    await waitFor('version 2 to serve', async () => (await inferSimple(server.url)).version === '2', 80);
    await s3.put(BUCKET, 'poll/simple/config.pbtxt', config.replace('max_batch_size: 8', 'max_batch_size: 4'));
    await waitFor('the changed config to load', async () => (await configOf(server.url, 'simple')).max_batch_size === 4, 80);
    // A config that does not parse: the last good load keeps serving, and the index says why.
    const before = server.output().length;
    await s3.put(BUCKET, 'poll/simple/config.pbtxt', 'max_batch_size: [ this is not pbtxt');
    await waitFor('the broken config to be tried', async () => /failed to load 'simple'/.test(server.output().slice(before)), 80);
    assert.equal((await inferSimple(server.url)).version, '2');
    assert.equal((await configOf(server.url, 'simple')).max_batch_size, 4);
    // Half an upload of a new model (a config, no version folder yet) is not served; the rest serves on.
    await s3.put(BUCKET, 'poll/half/config.pbtxt', config.replace('name: "simple"', 'name: "half"'));
    await waitFor('half to be tried', async () => (await repoIndex(server.url)).some((e) => e.name === 'half' && e.state === 'UNAVAILABLE'), 80);
    const half = await inferSimple(server.url, 'half');
    assert.match(`${half.status} ${half.text}`, /^404 .*has no available versions/);
    await s3.put(BUCKET, 'poll/half/1/model.onnx', onnx);
    await waitFor('half, complete, to serve', async () => (await inferSimple(server.url, 'half')).status === 200, 80);
    // A model whose objects are all removed is unloaded.
    await s3.remove(BUCKET, 'poll/add_sub/config.pbtxt');
    await s3.remove(BUCKET, 'poll/add_sub/1/model.py');
    await waitFor('add_sub to unload', async () => !(await repoIndex(server.url)).some((e) => e.name === 'add_sub'), 80);
    assert.equal((await inferSimple(server.url)).version, '2');
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('mixed local and S3 roots, poll mode: both serve; a root that cannot be read (an S3 server gone, a local folder moved) keeps its models serving', async () => {
  const other = await startS3();
  await other.createBucket('more');
  const both = localRepo('mixed-src');
  await other.upload('more', 'repo/add_sub', path.join(both, 'add_sub'));
  const local = path.join(tmp, 'mixed-local');
  fs.mkdirSync(local);
  fs.cpSync(path.join(both, 'simple'), path.join(local, 'simple'), { recursive: true });
  const server = await startServer([
    `--model-repository=${local}`,
    `--model-repository=s3://${other.hostPort}/more/repo`,
    '--model-control-mode=poll',
    '--repository-poll-secs=1',
    `--model-cache-dir=${cacheDir('mixed')}`,
  ]);
  try {
    assert.equal((await inferSimple(server.url)).status, 200);
    assert.deepEqual(await inferAddSub(server.url), [2, 3, 4, 5]);
    await other.close();
    await waitFor(
      'the failed poll to be logged',
      async () => /failed to poll model repository 's3:\/\/127\.0\.0\.1:\d+\/more\/repo': .*Its models keep serving/.test(server.output()),
      80,
    );
    fs.renameSync(local, `${local}-moved`);
    await waitFor(
      'the missing folder to be logged',
      async () => new RegExp(`failed to poll model repository '${local}': failed to stat file`).test(server.output()),
      80,
    );
    await new Promise((r) => setTimeout(r, 2500)); // two more polls
    assert.equal((await inferSimple(server.url)).status, 200);
    assert.deepEqual(await inferAddSub(server.url), [2, 3, 4, 5]);
    fs.renameSync(`${local}-moved`, local);
    await waitFor('the folder to be read again', async () => new RegExp(`model repository '${local}' can be read again`).test(server.output()), 80);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});
