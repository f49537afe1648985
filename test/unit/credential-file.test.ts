import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { credentialFor, matchCredential } from '../../src/repository/storage/credential-file';

const FILE = {
  s3: {
    '': { key_id: 'default' },
    's3://bucket-a': { key_id: 'a' },
    's3://bucket-a/models': { key_id: 'a-models' },
    's3://127.0.0.1:9000/b': { key_id: 'minio' },
  },
  as: { 'as://acct/cont': { account_str: 'acct' } },
  gs: { '': '/creds/gs.json', 'gs://special': '/creds/special.json' },
};

// [case, url, entry, key]
const MATCHES: [string, string, unknown, string][] = [
  ['"" is the default', 's3://other/x', { key_id: 'default' }, ''],
  ['a bucket prefix', 's3://bucket-a/x', { key_id: 'a' }, 's3://bucket-a'],
  ['the longest prefix wins', 's3://bucket-a/models/simple', { key_id: 'a-models' }, 's3://bucket-a/models'],
  ['plain string prefix, as Triton: bucket-ab matches bucket-a', 's3://bucket-ab/x', { key_id: 'a' }, 's3://bucket-a'],
  ['host:port form', 's3://127.0.0.1:9000/b/m', { key_id: 'minio' }, 's3://127.0.0.1:9000/b'],
  ['azure', 'as://acct/cont/models', { account_str: 'acct' }, 'as://acct/cont'],
  ['gcs string entry', 'gs://special/m', '/creds/special.json', 'gs://special'],
  ['gcs default', 'gs://b/m', '/creds/gs.json', ''],
];
for (const [name, url, entry, key] of MATCHES) {
  test(`matchCredential: ${name}`, () => {
    const m = matchCredential(FILE, '/etc/c.json', url);
    assert.deepEqual(m.entry, entry);
    assert.equal(m.source, `TRITON_CLOUD_CREDENTIAL_PATH /etc/c.json entry "${key}"`);
  });
}

// [case, file content, url, code, message start]
const REFUSALS: [string, unknown, string, string, string][] = [
  ['no key matches', FILE, 'as://other/c', 'NOT_FOUND', 'Cannot match credential for path  as://other/c: the cloud credential file /etc/c.json'],
  ['no section for the scheme', { s3: {} }, 'gs://b/m', 'NOT_FOUND', 'Cannot match credential for path  gs://b/m'],
  [
    'a section that is not an object',
    { s3: 'x' },
    's3://b/m',
    'INTERNAL',
    'the cloud credential file /etc/c.json (TRITON_CLOUD_CREDENTIAL_PATH) has a "s3" entry that is not an object',
  ],
];
for (const [name, content, url, code, start] of REFUSALS) {
  test(`matchCredential refuses: ${name}`, () => {
    assert.throws(
      () => matchCredential(content, '/etc/c.json', url),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, code);
        assert.ok(e.message.startsWith(start), e.message);
        return true;
      },
    );
  });
}

test('credentialFor: undefined without TRITON_CLOUD_CREDENTIAL_PATH; reads and matches the file with it', () => {
  assert.equal(credentialFor('s3://b/m', {}), undefined);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cred-file-'));
  const file = path.join(dir, 'creds.json');
  fs.writeFileSync(file, JSON.stringify(FILE));
  assert.deepEqual(credentialFor('s3://bucket-a/y', { TRITON_CLOUD_CREDENTIAL_PATH: file })?.entry, { key_id: 'a' });
  fs.writeFileSync(file, '{ not json');
  assert.throws(() => credentialFor('s3://b', { TRITON_CLOUD_CREDENTIAL_PATH: file }), /is not valid JSON/);
  assert.throws(
    () => credentialFor('s3://b', { TRITON_CLOUD_CREDENTIAL_PATH: path.join(dir, 'none.json') }),
    /failed to read the cloud credential file .*no such file/,
  );
  fs.rmSync(dir, { recursive: true, force: true });
});
