/**
 * `as://` roots against Azurite's real blob server (SharedKey auth), started
 * by this file on a free loopback port: the store itself (a listing of
 * several pages, downloads, ETags that change with the bytes, connection
 * strings, and each failure the store promises, named with the credential
 * source and never the key); then the real server on a container holding
 * an ONNX model, a Python model and an ensemble, in poll mode (a changed
 * object is reloaded), and a start that a wrong key stops.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BlobServiceClient, StorageSharedKeyCredential, type ContainerClient } from '@azure/storage-blob';
import { openAzureStore } from '../../src/repository/storage/azure-store';
import { freePort } from './fleet-proxies';
import { DEV_ACCOUNT, DEV_KEY, startAzurite, type Azurite } from './azurite-server';
import { addVectorsPlus100, allThreeAnswer, ENSEMBLE_OUTPUT, failure, inferAddVectors, repositoryObjects } from './cloud-repo-kit';
import { waitFor } from './repo-kit';
import { runToExit, startServer, type ServerProcess } from './server-process';

const OTHER = { name: 'nodetronacct', key: Buffer.from('nodetron-test-account-key-0123456789').toString('base64') };
const WRONG_KEY = Buffer.from('not-the-account-key-not-the-account-key').toString('base64');

function devEnv(az: Azurite): Record<string, string> {
  return { AZURE_STORAGE_ACCOUNT: DEV_ACCOUNT, AZURE_STORAGE_KEY: DEV_KEY, AZURE_STORAGE_BLOB_ENDPOINT: az.endpoint() };
}

async function put(c: ContainerClient, name: string, body: string | Buffer): Promise<void> {
  await c.getBlockBlobClient(name).upload(body, Buffer.byteLength(body));
}

describe('Azure Blob store against azurite', () => {
  let az: Azurite;
  let models: ContainerClient;
  let tmp: string;
  before(async () => {
    az = await startAzurite([OTHER]);
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-azure-store-'));
    const svc = new BlobServiceClient(az.endpoint(), new StorageSharedKeyCredential(DEV_ACCOUNT, DEV_KEY));
    models = svc.getContainerClient('models');
    await models.create();
    for (let i = 0; i < 7; i++) await put(models, `repo/m${i}/1/model.bin`, `bytes of m${i}`);
    await put(models, 'repo/m0/config.pbtxt', 'name: "m0"');
    await put(models, 'repo/empty_dir/', ''); // a folder placeholder, as some tools write them
    await put(models, 'elsewhere/x/config.pbtxt', 'not under the root');
    const other = new BlobServiceClient(az.endpoint(OTHER.name), new StorageSharedKeyCredential(OTHER.name, OTHER.key));
    await other.getContainerClient('private').create();
    await put(other.getContainerClient('private'), 'p/1/model.bin', 'other account');
  });
  after(async () => {
    await az?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('lists every blob under the prefix across pages, keys relative to the root, no folder placeholders', async () => {
    const store = openAzureStore('as://devstoreaccount1/models/repo', undefined, { env: devEnv(az), pageSize: 3 });
    assert.equal(store.scheme, 'as');
    assert.equal(store.credentialSource, 'environment AZURE_STORAGE_ACCOUNT=devstoreaccount1 and AZURE_STORAGE_KEY');
    const listed = (await store.list()).sort((a, b) => a.key.localeCompare(b.key));
    assert.deepEqual(
      listed.map((o) => o.key),
      ['m0/1/model.bin', 'm0/config.pbtxt', 'm1/1/model.bin', 'm2/1/model.bin', 'm3/1/model.bin', 'm4/1/model.bin', 'm5/1/model.bin', 'm6/1/model.bin'],
    );
    assert.equal(listed[0]!.size, Buffer.byteLength('bytes of m0'));
    for (const o of listed) assert.match(o.tag, /^"?0x[0-9A-F]+"?$/, `an ETag for ${o.key}`);
    store.close();
  });

  test('downloads a blob to a file, making its folder; the tag changes when the blob is replaced, and only then', async () => {
    const store = openAzureStore('as://devstoreaccount1/models/repo/', undefined, { env: devEnv(az) });
    const file = path.join(tmp, 'dl', 'm3', '1', 'model.bin');
    await store.download('m3/1/model.bin', file);
    assert.equal(fs.readFileSync(file, 'utf8'), 'bytes of m3');
    assert.deepEqual(fs.readdirSync(path.dirname(file)), ['model.bin'], 'no partial file is left beside it');

    const tagOf = async (key: string): Promise<string> => (await store.list()).find((o) => o.key === key)!.tag;
    const before1 = await tagOf('m3/1/model.bin');
    const before2 = await tagOf('m4/1/model.bin');
    await put(models, 'repo/m3/1/model.bin', 'new bytes of m3');
    assert.notEqual(await tagOf('m3/1/model.bin'), before1);
    assert.equal(await tagOf('m4/1/model.bin'), before2);
    await store.download('m3/1/model.bin', file);
    assert.equal(fs.readFileSync(file, 'utf8'), 'new bytes of m3');
  });

  test('a connection string (environment or credential entry) and account_key entries work; the URL account is used', async () => {
    const byEnv = openAzureStore('as://devstoreaccount1/models/repo', undefined, { env: { AZURE_STORAGE_CONNECTION_STRING: az.connectionString() } });
    assert.equal(byEnv.credentialSource, 'environment AZURE_STORAGE_CONNECTION_STRING (AccountName=devstoreaccount1)');
    assert.equal((await byEnv.list()).length, 8);

    const source = 'TRITON_CLOUD_CREDENTIAL_PATH /x/creds.json entry "as://nodetronacct"';
    const byEntry = openAzureStore('as://nodetronacct/private', { source, account_key: OTHER.key, blob_endpoint: az.endpoint(OTHER.name) }, { env: {} });
    assert.equal(byEntry.credentialSource, `${source} (account nodetronacct, account_key)`);
    assert.deepEqual(
      (await byEntry.list()).map((o) => o.key),
      ['p/1/model.bin'],
    );

    const byCs = openAzureStore('as://ignored/private', { source, connection_string: az.connectionString(OTHER.name, OTHER.key) }, { env: {} });
    assert.deepEqual(
      (await byCs.list()).map((o) => o.key),
      ['p/1/model.bin'],
    );
  });

  test('a wrong key is refused (403) with a text naming the root and the credential source, never the key', async () => {
    const store = openAzureStore('as://devstoreaccount1/models/repo', undefined, {
      env: { AZURE_STORAGE_KEY: WRONG_KEY, AZURE_STORAGE_BLOB_ENDPOINT: az.endpoint() },
    });
    const err = await failure(() => store.list());
    assert.equal(err.code, 'INTERNAL');
    assert.match(err.message, /^failed to list the objects of as:\/\/devstoreaccount1\/models\/repo: HTTP 403 (AuthenticationFailed|AuthorizationFailure): /);
    assert.match(err.message, /\(credential: environment AZURE_STORAGE_KEY \(account devstoreaccount1 from the path\)\)/);
    assert.match(err.message, /Check that the key belongs to this account/);
    assert.ok(!err.message.includes(WRONG_KEY) && !err.message.includes(DEV_KEY), err.message);
  });

  test('a container that does not exist is NOT_FOUND, naming the container and what to do', async () => {
    const store = openAzureStore('as://devstoreaccount1/nosuch/repo', undefined, { env: devEnv(az) });
    const err = await failure(() => store.list());
    assert.equal(err.code, 'NOT_FOUND');
    assert.match(err.message, /^failed to list the objects of as:\/\/devstoreaccount1\/nosuch\/repo: HTTP 404 ContainerNotFound: /);
    assert.match(err.message, /container 'nosuch'/);
    assert.match(err.message, /Check the account and container names in the path, or create the container\.$/);
  });

  test('anonymous access to a private container says a credential may be missing', async () => {
    const store = openAzureStore('as://devstoreaccount1/models/repo', undefined, { env: { AZURE_STORAGE_BLOB_ENDPOINT: az.endpoint() } });
    assert.match(store.credentialSource, /^anonymous \(no TRITON_CLOUD_CREDENTIAL_PATH entry/);
    const err = await failure(() => store.list());
    assert.equal(err.code, 'INTERNAL');
    assert.match(err.message, /: HTTP (403|404) /);
    assert.match(err.message, /credential: anonymous/);
    assert.match(err.message, /give a credential \(AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY/);
  });

  test('a blob listed but gone when fetched is NOT_FOUND for that key; no file is left', async () => {
    const store = openAzureStore('as://devstoreaccount1/models/repo', undefined, { env: devEnv(az) });
    const file = path.join(tmp, 'gone', 'model.bin');
    const err = await failure(() => store.download('m9/1/model.bin', file));
    assert.equal(err.code, 'NOT_FOUND');
    assert.match(err.message, /^failed to download 'm9\/1\/model\.bin' of as:\/\/devstoreaccount1\/models\/repo: HTTP 404 BlobNotFound/);
    assert.deepEqual(fs.readdirSync(path.dirname(file)), []);
  });

  test('an endpoint nobody listens on fails in seconds as UNAVAILABLE, naming the endpoint and the override', async () => {
    const port = await freePort();
    const store = openAzureStore('as://devstoreaccount1/models/repo', undefined, {
      env: { ...devEnv(az), AZURE_STORAGE_BLOB_ENDPOINT: `http://127.0.0.1:${port}/devstoreaccount1` },
    });
    const t0 = Date.now();
    const err = await failure(() => store.list());
    assert.ok(Date.now() - t0 < 10_000, `took ${Date.now() - t0} ms`);
    assert.equal(err.code, 'UNAVAILABLE');
    assert.match(err.message, new RegExp(`endpoint http://127\\.0\\.0\\.1:${port}/devstoreaccount1`));
    assert.match(err.message, /ECONNREFUSED/);
    assert.match(err.message, /set AZURE_STORAGE_BLOB_ENDPOINT or the credential entry's blob_endpoint/);
  });
});

describe('nodetron on an as:// repository', () => {
  let az: Azurite;
  let tmp: string;
  let container: ContainerClient;
  const saved = { ...process.env };
  before(async () => {
    az = await startAzurite();
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-azure-server-'));
    const svc = new BlobServiceClient(az.endpoint(), new StorageSharedKeyCredential(DEV_ACCOUNT, DEV_KEY));
    container = svc.getContainerClient('models');
    await container.create();
    for (const o of repositoryObjects()) await put(container, `served/${o.key}`, o.data);
    for (const name of ['TRITON_CLOUD_CREDENTIAL_PATH', 'AZURE_STORAGE_ACCOUNT', 'AZURE_STORAGE_KEY', 'AZURE_STORAGE_BLOB_ENDPOINT']) delete process.env[name];
  });
  after(async () => {
    process.env = saved;
    await az?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('poll mode, connection string: the ONNX, Python and ensemble models load from the container and answer; a changed model.py is reloaded', async () => {
    process.env['AZURE_STORAGE_CONNECTION_STRING'] = az.connectionString();
    let server: ServerProcess | undefined;
    try {
      server = await startServer([
        '--model-repository=as://devstoreaccount1/models/served',
        '--model-control-mode=poll',
        '--repository-poll-secs=1',
        `--model-cache-dir=${path.join(tmp, 'cache-poll')}`,
      ]);
    } finally {
      delete process.env['AZURE_STORAGE_CONNECTION_STRING'];
    }
    try {
      assert.deepEqual(await allThreeAnswer(server.url), { simple: 200, addVectors: [11, 22, 33], ensemble: ENSEMBLE_OUTPUT });
      await put(container, 'served/add_vectors/1/model.py', addVectorsPlus100());
      await waitFor(
        'add_vectors to be reloaded with the changed model.py',
        async () => JSON.stringify(await inferAddVectors(server!.url)) === JSON.stringify([111, 122, 133]),
        80,
      );
      assert.deepEqual(await allThreeAnswer(server.url), { simple: 200, addVectors: [111, 122, 133], ensemble: ENSEMBLE_OUTPUT });
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });

  test("a wrong account_key in the credential file stops the start with azurite's 403, naming the entry and never the key", async () => {
    const creds = path.join(tmp, 'creds.json');
    fs.writeFileSync(creds, JSON.stringify({ as: { '': { account_str: DEV_ACCOUNT, account_key: WRONG_KEY, blob_endpoint: az.endpoint() } } }));
    process.env['TRITON_CLOUD_CREDENTIAL_PATH'] = creds;
    let exited;
    try {
      exited = runToExit(['--model-repository=as://devstoreaccount1/models/served', `--model-cache-dir=${path.join(tmp, 'cache-wrong')}`]);
    } finally {
      delete process.env['TRITON_CLOUD_CREDENTIAL_PATH'];
    }
    const { code, output } = await exited;
    assert.equal(code, 1, output);
    assert.match(output, /failed to list the objects of as:\/\/devstoreaccount1\/models\/served: HTTP 403 /);
    assert.ok(output.includes(`(credential: TRITON_CLOUD_CREDENTIAL_PATH ${creds} entry "" (account devstoreaccount1, account_key))`), output);
    assert.ok(!output.includes(WRONG_KEY), 'the key is not printed');
  });
});
