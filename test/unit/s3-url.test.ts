import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseS3Url } from '../../src/repository/storage/s3-url';
import { masked, s3CredentialFor } from '../../src/repository/storage/s3-credential';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// [url, bucket, prefix, endpoint]
const URLS: [string, string, string, string | undefined][] = [
  ['s3://bucket', 'bucket', '', undefined],
  ['s3://bucket/', 'bucket', '', undefined],
  ['s3://bucket/models', 'bucket', 'models', undefined],
  ['s3://bucket//a///b/', 'bucket', 'a/b', undefined],
  ['s3://127.0.0.1:9000/bucket/models', 'bucket', 'models', 'http://127.0.0.1:9000'],
  ['s3://minio.local:9000/bucket', 'bucket', '', 'http://minio.local:9000'],
  ['s3://http://minio:80/b/p/q', 'b', 'p/q', 'http://minio:80'],
  ['s3://https://minio.example.com:443/models/', 'models', '', 'https://minio.example.com:443'],
  ['s3://bucket.with.dots/m_1', 'bucket.with.dots', 'm_1', undefined],
];
for (const [url, bucket, prefix, endpoint] of URLS) {
  test(`parseS3Url ${url}`, () => {
    assert.deepEqual({ ...parseS3Url(url) }, endpoint === undefined ? { bucket, prefix } : { endpoint, bucket, prefix });
  });
}

const BAD: [string, RegExp][] = [
  ['s3://', /^Invalid bucket name: '' in s3:\/\/\. Write s3:\/\/<bucket>\/<path>/],
  ['s3:////', /^Invalid bucket name/],
  ['s3://127.0.0.1:9000', /^No bucket name found in path: s3:\/\/127\.0\.0\.1:9000\. After the endpoint 127\.0\.0\.1:9000 write the bucket/],
  ['s3://https://minio/bucket', /names https:\/\/ without a port/],
  ['gs://bucket', /is not an S3 path/],
];
for (const [url, want] of BAD) {
  test(`parseS3Url refuses ${url}`, () => {
    assert.throws(
      () => parseS3Url(url),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, 'INVALID_ARG');
        assert.match(e.message, want);
        return true;
      },
    );
  });
}

const ENV_KEYS = { AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE', AWS_SECRET_ACCESS_KEY: 'very-secret' };
// [case, env, keys?, profile?, region, source]
const CREDS: [string, NodeJS.ProcessEnv, boolean, string | undefined, string, string][] = [
  ['key pair from the environment', { ...ENV_KEYS, AWS_DEFAULT_REGION: 'eu-west-1' }, true, undefined, 'eu-west-1', 'environment AWS_ACCESS_KEY_ID=AKIA…'],
  [
    'AWS_REGION when AWS_DEFAULT_REGION is unset',
    { ...ENV_KEYS, AWS_REGION: 'us-west-2' },
    true,
    undefined,
    'us-west-2',
    'environment AWS_ACCESS_KEY_ID=AKIA…',
  ],
  ['a key pair wins over a profile', { ...ENV_KEYS, AWS_PROFILE: 'dev' }, true, undefined, 'us-east-1', 'environment AWS_ACCESS_KEY_ID=AKIA…'],
  [
    'a key id without its secret falls to the profile',
    { AWS_ACCESS_KEY_ID: 'AKIAX', AWS_PROFILE: 'dev' },
    false,
    'dev',
    'us-east-1',
    "AWS profile 'dev' (AWS_PROFILE)",
  ],
  [
    'nothing: the SDK default chain',
    {},
    false,
    undefined,
    'us-east-1',
    "the AWS SDK's default credential chain (no AWS_ACCESS_KEY_ID with AWS_SECRET_ACCESS_KEY, no AWS_PROFILE)",
  ],
];
for (const [name, env, keys, profile, region, source] of CREDS) {
  test(`s3CredentialFor: ${name}`, () => {
    const c = s3CredentialFor('s3://bucket/m', env);
    assert.equal(c.keys !== undefined, keys);
    assert.equal(c.profile, profile);
    assert.equal(c.region, region);
    assert.equal(c.source, source);
    assert.ok(!c.source.includes('very-secret'));
  });
}

test('s3CredentialFor: with TRITON_CLOUD_CREDENTIAL_PATH the file decides and the environment is not read', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 's3-cred-'));
  const file = path.join(dir, 'c.json');
  fs.writeFileSync(
    file,
    JSON.stringify({
      s3: { 's3://bucket': { key_id: 'FILEKEY1', secret_key: 's', session_token: 't', region: 'ap-south-1' }, 's3://other': { profile: 'p' } },
    }),
  );
  const env = { ...ENV_KEYS, TRITON_CLOUD_CREDENTIAL_PATH: file };
  const c = s3CredentialFor('s3://bucket/m', env);
  assert.deepEqual(c.keys, { accessKeyId: 'FILEKEY1', secretAccessKey: 's', sessionToken: 't' });
  assert.equal(c.region, 'ap-south-1');
  assert.equal(c.source, `TRITON_CLOUD_CREDENTIAL_PATH ${file} entry "s3://bucket" (key_id FILE…)`);
  assert.equal(s3CredentialFor('s3://other/m', env).profile, 'p');
  assert.throws(() => s3CredentialFor('s3://third/m', env), /^ServerError: Cannot match credential for path {2}s3:\/\/third\/m/);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('masked keeps at most 4 characters of a key id', () => {
  assert.deepEqual(['AKIAIOSFODNN7EXAMPLE', 'ABCD', ''].map(masked), ['AKIA…', '…', '…']);
});
