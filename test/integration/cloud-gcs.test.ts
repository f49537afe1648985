/**
 * `gs://` roots through @google-cloud/storage against the JSON-API
 * stand-in of gcs-json-api.ts (no GCS emulator installs here), reached
 * through STORAGE_EMULATOR_HOST: the store itself (a listing of several
 * pages, downloads checked against crc32c, generations that change with
 * the bytes, the failures it promises) and the credential rules that need
 * no network (key files are read and checked at open); then the real server
 * on a bucket holding an ONNX model, a Python model and an ensemble, in
 * poll mode (a changed object is reloaded), and starts that a forbidden or
 * missing bucket stops. Every socket this file's process opens is watched: none may go anywhere but 127.0.0.1 (no
 * metadata.google.internal, no token exchange, no ADC lookup).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import fs from 'node:fs';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ServerError } from '../../src/core/errors';
import { gcsCredentialFromEntry, openGcsStore } from '../../src/repository/storage/gcs-store';
import { freePort } from './fleet-proxies';
import { crc32c, startGcsStandIn, type GcsStandIn } from './gcs-json-api';
import { addVectorsPlus100, allThreeAnswer, ENSEMBLE_OUTPUT, failure, inferAddVectors, repositoryObjects } from './cloud-repo-kit';
import { waitFor } from './repo-kit';
import { runToExit, startServer } from './server-process';

/** Every host name looked up and every address connected to by this process. */
const reached: string[] = [];
diagnostics.subscribe('net.client.socket', (msg) => {
  const socket = (msg as { socket: net.Socket }).socket;
  socket.once('lookup', (_err: Error | null, _address: string, _family: number, host: string) => reached.push(`lookup ${host}`));
  socket.once('connect', () => reached.push(`connect ${socket.remoteAddress ?? '?'}`));
});

test('crc32c of the stand-in is CRC-32C (the check value of "123456789" is 0xE3069283)', () => {
  assert.equal(crc32c(Buffer.from('123456789')), 0xe3069283);
});

describe('GCS store against the JSON-API stand-in', () => {
  let gcs: GcsStandIn;
  let tmp: string;
  let env: Record<string, string>;
  before(async () => {
    gcs = await startGcsStandIn();
    env = { STORAGE_EMULATOR_HOST: gcs.host };
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-gcs-store-'));
    gcs.createBucket('models');
    gcs.createBucket('locked', { forbidden: true });
    for (let i = 0; i < 7; i++) gcs.put('models', `repo/m${i}/1/model.bin`, `bytes of m${i}`);
    gcs.put('models', 'repo/m0/config.pbtxt', 'name: "m0"');
    gcs.put('models', 'repo/empty_dir/', '');
    gcs.put('models', 'elsewhere/x/config.pbtxt', 'not under the root');
  });
  after(async () => {
    await gcs?.close();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('lists every object under the prefix across pages, keys relative to the root, generations as tags', async () => {
    const store = openGcsStore('gs://models/repo', undefined, { env, pageSize: 3 });
    assert.equal(store.scheme, 'gs');
    assert.equal(store.credentialSource, `anonymous (STORAGE_EMULATOR_HOST=${gcs.host})`);
    const listed = (await store.list()).sort((a, b) => a.key.localeCompare(b.key));
    assert.deepEqual(
      listed.map((o) => o.key),
      ['m0/1/model.bin', 'm0/config.pbtxt', 'm1/1/model.bin', 'm2/1/model.bin', 'm3/1/model.bin', 'm4/1/model.bin', 'm5/1/model.bin', 'm6/1/model.bin'],
    );
    assert.equal(listed[0]!.size, Buffer.byteLength('bytes of m0'));
    for (const o of listed) assert.match(o.tag, /^\d+$/, `a generation for ${o.key}`);
    const pages = gcs.requests.filter((r) => r === 'GET /storage/v1/b/models/o').length;
    assert.ok(pages >= 3, `expected at least 3 listing requests for 9 objects, 3 a page; saw ${pages}`);
    store.close();
  });

  test('downloads an object (crc32c checked), making its folder; the tag changes when the object is replaced, and only then', async () => {
    const store = openGcsStore('gs://models/repo/', undefined, { env });
    const file = path.join(tmp, 'dl', 'm3', '1', 'model.bin');
    await store.download('m3/1/model.bin', file);
    assert.equal(fs.readFileSync(file, 'utf8'), 'bytes of m3');
    assert.deepEqual(fs.readdirSync(path.dirname(file)), ['model.bin']);

    const tagOf = async (key: string): Promise<string> => (await store.list()).find((o) => o.key === key)!.tag;
    const t3 = await tagOf('m3/1/model.bin');
    const t4 = await tagOf('m4/1/model.bin');
    gcs.put('models', 'repo/m3/1/model.bin', 'new bytes of m3');
    assert.notEqual(await tagOf('m3/1/model.bin'), t3);
    assert.equal(await tagOf('m4/1/model.bin'), t4);
    await store.download('m3/1/model.bin', file);
    assert.equal(fs.readFileSync(file, 'utf8'), 'new bytes of m3');
  });

  test('a bucket that does not exist is NOT_FOUND, naming the root, the bucket and what to do', async () => {
    const store = openGcsStore('gs://nosuch/repo', undefined, { env });
    const err = await failure(() => store.list());
    assert.equal(err.code, 'NOT_FOUND');
    assert.equal(
      err.message,
      `failed to list the objects of gs://nosuch/repo: HTTP 404: The specified bucket does not exist. (bucket 'nosuch') ` +
        `(credential: anonymous (STORAGE_EMULATOR_HOST=${gcs.host})). Check the bucket name in the path.`,
    );
  });

  test('a forbidden bucket (403) names the credential source and why no credential was sent', async () => {
    const store = openGcsStore('gs://locked', undefined, { env: { ...env, GOOGLE_APPLICATION_CREDENTIALS: '/nowhere.json' } });
    assert.equal(store.credentialSource, `anonymous (STORAGE_EMULATOR_HOST=${gcs.host}; GOOGLE_APPLICATION_CREDENTIALS is not used)`);
    const err = await failure(() => store.list());
    assert.equal(err.code, 'INTERNAL');
    assert.match(err.message, /^failed to list the objects of gs:\/\/locked: HTTP 403: caller does not have storage\.objects\.list access/);
    assert.match(err.message, /\(credential: anonymous \(STORAGE_EMULATOR_HOST=/);
    assert.match(
      err.message,
      /STORAGE_EMULATOR_HOST is set, so requests carry no credential: let that server serve the bucket to anonymous clients, or unset STORAGE_EMULATOR_HOST/,
    );
  });

  test('an object listed but gone when fetched is NOT_FOUND for that key; no file is left', async () => {
    const store = openGcsStore('gs://models/repo', undefined, { env });
    const file = path.join(tmp, 'gone', 'model.bin');
    const err = await failure(() => store.download('m9/1/model.bin', file));
    assert.equal(err.code, 'NOT_FOUND');
    assert.match(err.message, /^failed to download 'm9\/1\/model\.bin' of gs:\/\/models\/repo: HTTP 404: /);
    assert.deepEqual(fs.readdirSync(path.dirname(file)), []);
  });

  test('an endpoint nobody listens on fails in seconds as UNAVAILABLE', async () => {
    const port = await freePort();
    const store = openGcsStore('gs://models/repo', undefined, { env: { STORAGE_EMULATOR_HOST: `http://127.0.0.1:${port}` } });
    const t0 = Date.now();
    const err = await failure(() => store.list());
    assert.ok(Date.now() - t0 < 10_000, `took ${Date.now() - t0} ms`);
    assert.equal(err.code, 'UNAVAILABLE');
    assert.match(err.message, /ECONNREFUSED/);
    assert.match(err.message, /Check that the endpoint is reachable from here \(STORAGE_EMULATOR_HOST/);
  });
});

describe('GCS key files (read at open; nothing is sent)', () => {
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-gcs-keys-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  function keyFile(name: string, body: unknown): string {
    const f = path.join(dir, name);
    fs.writeFileSync(f, typeof body === 'string' ? body : JSON.stringify(body));
    return f;
  }

  test('a service account key from GOOGLE_APPLICATION_CREDENTIALS or a credential entry is named by its account, never its key', async () => {
    const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const f = keyFile('sa.json', {
      type: 'service_account',
      project_id: 'proj',
      private_key_id: 'k1',
      private_key: pem,
      client_email: 'reader@proj.iam.gserviceaccount.com',
      client_id: '1',
      token_uri: 'https://oauth2.googleapis.com/token',
    });
    const byEnv = openGcsStore('gs://b/r', undefined, { env: { GOOGLE_APPLICATION_CREDENTIALS: f } });
    assert.equal(byEnv.credentialSource, `environment GOOGLE_APPLICATION_CREDENTIALS (${f}, service account reader@proj.iam.gserviceaccount.com)`);
    const source = 'TRITON_CLOUD_CREDENTIAL_PATH /c.json entry "gs://b"';
    const byEntry = openGcsStore('gs://b/r', { source, path: f }, { env: { GOOGLE_APPLICATION_CREDENTIALS: '/elsewhere.json' } });
    assert.equal(byEntry.credentialSource, `${source} (${f}, service account reader@proj.iam.gserviceaccount.com)`);
    assert.ok(!byEntry.credentialSource.includes('PRIVATE KEY'));
  });

  test('a key file that is missing, not JSON, or of another type fails the open with INVALID_ARG naming it', async () => {
    const source = 'TRITON_CLOUD_CREDENTIAL_PATH /c.json entry "gs://b"';
    const rows: [string, string, RegExp][] = [
      ['missing', path.join(dir, 'missing.json'), /names '.*missing\.json', which is not a readable JSON key file \(ENOENT/],
      ['not JSON', keyFile('bad.json', 'not json'), /names '.*bad\.json', which is not a readable JSON key file \(.*JSON/],
      [
        'another type',
        keyFile('ext.json', { type: 'external_account' }),
        /'.*ext\.json' \(TRITON_CLOUD_CREDENTIAL_PATH .*\) has type "external_account"; expected "service_account" or "authorized_user"\.$/,
      ],
    ];
    for (const [name, file, re] of rows) {
      const err = await failure(() => openGcsStore('gs://b/r', { source, path: file }, { env: {} }));
      assert.equal(err.code, 'INVALID_ARG', name);
      assert.match(err.message, /^cannot use the GCS credential for gs:\/\/b\/r: /, name);
      assert.match(err.message, re, name);
    }
  });

  test("a credential file's gs entry is a path; anything else is INVALID_ARG naming the entry", () => {
    const source = 'TRITON_CLOUD_CREDENTIAL_PATH /c.json entry ""';
    assert.deepEqual(gcsCredentialFromEntry('/k.json', source), { source, path: '/k.json' });
    for (const entry of [{ path: '/k.json' }, '', 7]) {
      assert.throws(
        () => gcsCredentialFromEntry(entry, source),
        (err: unknown) => {
          assert.ok(err instanceof ServerError);
          assert.equal(err.code, 'INVALID_ARG');
          assert.equal(
            err.message,
            `${source} is ${JSON.stringify(entry)}; a "gs" entry is the path of a service account JSON key file, e.g. "/etc/gcs/key.json"`,
          );
          return true;
        },
      );
    }
  });

  test('malformed gs:// paths are INVALID_ARG naming the form', async () => {
    for (const url of ['gs://', 'gs:///x', 'gs://b?x=1']) {
      const err = await failure(() => openGcsStore(url, undefined, { env: {} }));
      assert.equal(err.code, 'INVALID_ARG');
      assert.equal(err.message, `invalid GCS repository path '${url}': expected 'gs://<bucket>[/<path>]'`);
    }
  });
});

describe('nodetron on a gs:// repository (STORAGE_EMULATOR_HOST at the stand-in)', () => {
  let gcs: GcsStandIn;
  let tmp: string;
  const saved = { ...process.env };
  before(async () => {
    gcs = await startGcsStandIn();
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-gcs-server-'));
    gcs.createBucket('models');
    gcs.createBucket('locked', { forbidden: true });
    for (const o of repositoryObjects()) gcs.put('models', `served/${o.key}`, o.data);
    delete process.env['TRITON_CLOUD_CREDENTIAL_PATH'];
    delete process.env['GOOGLE_APPLICATION_CREDENTIALS'];
    process.env['STORAGE_EMULATOR_HOST'] = gcs.host;
    process.env['NODE_OPTIONS'] = `${saved['NODE_OPTIONS'] ?? ''} --require ${path.join(__dirname, 'loopback-guard.js')}`.trim();
  });
  after(async () => {
    process.env = saved;
    await gcs?.close();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('the loopback guard the servers run with reports a name looked up (the control for the checks below)', () => {
    const r = spawnSync(process.execPath, ['-e', "require('node:net').connect(9, 'localhost').on('error', () => {})"], {
      env: process.env,
      encoding: 'utf8',
      timeout: 10_000,
    });
    assert.match(r.stderr, /loopback-guard: lookup localhost/);
  });

  test('poll mode: the ONNX, Python and ensemble models load from the bucket and answer; a changed model.py is reloaded', async () => {
    const server = await startServer([
      '--model-repository=gs://models/served',
      '--model-control-mode=poll',
      '--repository-poll-secs=1',
      `--model-cache-dir=${path.join(tmp, 'cache-poll')}`,
    ]);
    try {
      assert.deepEqual(await allThreeAnswer(server.url), { simple: 200, addVectors: [11, 22, 33], ensemble: ENSEMBLE_OUTPUT });
      assert.ok(gcs.requests.includes('GET /b/models/o'), 'the server listed the bucket through STORAGE_EMULATOR_HOST');
      gcs.put('models', 'served/add_vectors/1/model.py', addVectorsPlus100());
      await waitFor(
        'add_vectors to be reloaded with the changed model.py',
        async () => JSON.stringify(await inferAddVectors(server.url)) === JSON.stringify([111, 122, 133]),
        80,
      );
      assert.deepEqual(await allThreeAnswer(server.url), { simple: 200, addVectors: [111, 122, 133], ensemble: ENSEMBLE_OUTPUT });
    } finally {
      assert.equal(await server.stop(), 0);
    }
    assert.doesNotMatch(server.output(), /loopback-guard:/, 'the server looked up a name or left 127.0.0.1');
  });

  test('a forbidden bucket and a missing one stop the start with the reason and the credential source', async () => {
    const rows: [string, RegExp][] = [
      ['gs://locked/served', /failed to list the objects of gs:\/\/locked\/served: HTTP 403: caller does not have storage\.objects\.list access/],
      ['gs://nosuch/served', /failed to list the objects of gs:\/\/nosuch\/served: HTTP 404: The specified bucket does not exist\./],
    ];
    for (const [root, re] of rows) {
      const { code, output } = await runToExit([`--model-repository=${root}`, `--model-cache-dir=${path.join(tmp, 'cache-fail')}`]);
      assert.equal(code, 1, output);
      assert.match(output, re);
      assert.ok(output.includes(`(credential: anonymous (STORAGE_EMULATOR_HOST=${gcs.host}))`), output);
      assert.doesNotMatch(output, /loopback-guard:/);
    }
  });
});

test('no socket of this file went anywhere but 127.0.0.1 (no metadata server, no token exchange)', () => {
  assert.ok(
    reached.some((r) => r === 'connect 127.0.0.1'),
    `the watch saw the tests' own connections: ${reached.join(', ')}`,
  );
  assert.deepEqual(
    reached.filter((r) => r !== 'connect 127.0.0.1'),
    [],
  );
});
