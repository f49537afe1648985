/**
 * The `as://` rules of azure-target.ts, table by table: the URL's parts,
 * where the account, endpoint and credential come from, and the texts for
 * what is malformed. No secret ever appears in a credential source.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ServerError } from '../../src/core/errors';
import { azureCredentialFromEntry, azureTarget, parseAzureUrl, type AzureCredential, type Env } from '../../src/repository/storage/azure-target';

test('parseAzureUrl: account, container and prefix', () => {
  const rows: [string, { account: string; container: string; prefix: string }][] = [
    ['as://acct/models', { account: 'acct', container: 'models', prefix: '' }],
    ['as://acct/models/', { account: 'acct', container: 'models', prefix: '' }],
    ['as://acct/models/a/b', { account: 'acct', container: 'models', prefix: 'a/b/' }],
    ['as://acct/models/a/b//', { account: 'acct', container: 'models', prefix: 'a/b/' }],
    ['as://acct.blob.core.windows.net/models/r', { account: 'acct', container: 'models', prefix: 'r/' }],
  ];
  for (const [url, want] of rows) assert.deepEqual(parseAzureUrl(url), want, url);
});

test('parseAzureUrl: malformed paths are INVALID_ARG naming the path and the form', () => {
  for (const url of ['as://acct', 'as://acct/', 'as:///models', 'as://acct/models?sv=1', 's3://acct/models']) {
    assert.throws(
      () => parseAzureUrl(url),
      (err: unknown) => {
        assert.ok(err instanceof ServerError);
        assert.equal(err.code, 'INVALID_ARG');
        assert.equal(err.message, `invalid Azure Blob repository path '${url}': expected 'as://<account>/<container>[/<path>]'`);
        return true;
      },
    );
  }
});

const KEY = 'c2VjcmV0LWtleQ==';
const ENTRY = 'TRITON_CLOUD_CREDENTIAL_PATH /c.json entry "as://acct"';
const CS = `DefaultEndpointsProtocol=http;AccountName=csacct;AccountKey=${KEY};BlobEndpoint=http://127.0.0.1:10000/csacct;`;

interface Row {
  name: string;
  url?: string;
  cred?: AzureCredential;
  env: Env;
  account: string;
  serviceUrl: string;
  auth: 'key' | 'connection-string' | 'anonymous';
  source: string;
}

const ROWS: Row[] = [
  {
    name: 'nothing set: anonymous on the public endpoint of the URL account',
    env: {},
    account: 'acct',
    serviceUrl: 'https://acct.blob.core.windows.net',
    auth: 'anonymous',
    source: 'anonymous (no TRITON_CLOUD_CREDENTIAL_PATH entry, AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_KEY)',
  },
  {
    name: "Triton's variables: AZURE_STORAGE_ACCOUNT names the account instead of the URL's",
    env: { AZURE_STORAGE_ACCOUNT: 'envacct', AZURE_STORAGE_KEY: KEY },
    account: 'envacct',
    serviceUrl: 'https://envacct.blob.core.windows.net',
    auth: 'key',
    source: 'environment AZURE_STORAGE_ACCOUNT=envacct and AZURE_STORAGE_KEY',
  },
  {
    name: 'a key alone: the URL account',
    env: { AZURE_STORAGE_KEY: KEY },
    account: 'acct',
    serviceUrl: 'https://acct.blob.core.windows.net',
    auth: 'key',
    source: 'environment AZURE_STORAGE_KEY (account acct from the path)',
  },
  {
    name: 'the endpoint override (Azurite form)',
    env: { AZURE_STORAGE_KEY: KEY, AZURE_STORAGE_BLOB_ENDPOINT: 'http://127.0.0.1:10000/acct/' },
    account: 'acct',
    serviceUrl: 'http://127.0.0.1:10000/acct',
    auth: 'key',
    source: 'environment AZURE_STORAGE_KEY (account acct from the path)',
  },
  {
    name: 'a connection string wins over the key variables and names its own endpoint',
    env: { AZURE_STORAGE_CONNECTION_STRING: CS, AZURE_STORAGE_KEY: 'other', AZURE_STORAGE_BLOB_ENDPOINT: 'https://ignored.example' },
    account: 'csacct',
    serviceUrl: 'http://127.0.0.1:10000/csacct',
    auth: 'connection-string',
    source: 'environment AZURE_STORAGE_CONNECTION_STRING (AccountName=csacct)',
  },
  {
    name: 'a connection string with EndpointSuffix (a sovereign cloud)',
    env: { AZURE_STORAGE_CONNECTION_STRING: `AccountName=gov;AccountKey=${KEY};EndpointSuffix=core.usgovcloudapi.net` },
    account: 'gov',
    serviceUrl: 'https://gov.blob.core.usgovcloudapi.net',
    auth: 'connection-string',
    source: 'environment AZURE_STORAGE_CONNECTION_STRING (AccountName=gov)',
  },
  {
    name: 'a credential entry is the whole credential: the key variables are not read',
    cred: { source: ENTRY, account_str: 'entryacct', account_key: KEY },
    env: { AZURE_STORAGE_CONNECTION_STRING: CS, AZURE_STORAGE_KEY: 'other' },
    account: 'entryacct',
    serviceUrl: 'https://entryacct.blob.core.windows.net',
    auth: 'key',
    source: `${ENTRY} (account entryacct, account_key)`,
  },
  {
    name: "an entry's blob_endpoint wins over AZURE_STORAGE_BLOB_ENDPOINT",
    cred: { source: ENTRY, account_key: KEY, blob_endpoint: 'http://127.0.0.1:1/acct' },
    env: { AZURE_STORAGE_BLOB_ENDPOINT: 'http://127.0.0.1:2/acct' },
    account: 'acct',
    serviceUrl: 'http://127.0.0.1:1/acct',
    auth: 'key',
    source: `${ENTRY} (account acct, account_key)`,
  },
  {
    name: 'an entry without a key: anonymous, saying so',
    cred: { source: ENTRY },
    env: { AZURE_STORAGE_BLOB_ENDPOINT: 'http://127.0.0.1:2/acct' },
    account: 'acct',
    serviceUrl: 'http://127.0.0.1:2/acct',
    auth: 'anonymous',
    source: `anonymous (${ENTRY} has no account_key)`,
  },
  {
    name: "an entry's connection_string",
    cred: { source: ENTRY, connection_string: CS, auth_type: 'key' },
    env: {},
    account: 'csacct',
    serviceUrl: 'http://127.0.0.1:10000/csacct',
    auth: 'connection-string',
    source: `${ENTRY} connection_string (AccountName=csacct)`,
  },
];

test('azureTarget: where the account, endpoint and credential come from', () => {
  for (const r of ROWS) {
    const t = azureTarget(r.url ?? 'as://acct/models/repo', r.cred, r.env);
    assert.equal(t.account, r.account, r.name);
    assert.equal(t.serviceUrl, r.serviceUrl, r.name);
    assert.equal(t.auth.kind, r.auth, r.name);
    assert.equal(t.credentialSource, r.source, r.name);
    assert.ok(!t.credentialSource.includes(KEY), `${r.name}: no secret in the source`);
    assert.equal(t.container, 'models', r.name);
    assert.equal(t.prefix, 'repo/', r.name);
  }
});

test('azureTarget: malformed credentials and endpoints are INVALID_ARG naming what to write', () => {
  const rows: [string, AzureCredential | undefined, Env, RegExp][] = [
    [
      'an unserved auth_type',
      { source: ENTRY, auth_type: 'managed_identity' },
      {},
      /has auth_type 'managed_identity', which nodetron does not serve yet; give account_key or connection_string instead$/,
    ],
    [
      'an endpoint that is no URL',
      undefined,
      { AZURE_STORAGE_BLOB_ENDPOINT: '127.0.0.1:10000' },
      /AZURE_STORAGE_BLOB_ENDPOINT '127\.0\.0\.1:10000' (is not a URL|must be an http:\/\/ or https:\/\/ URL)/,
    ],
    [
      'an ftp endpoint',
      { source: ENTRY, blob_endpoint: 'ftp://h/acct' },
      {},
      /entry "as:\/\/acct" blob_endpoint 'ftp:\/\/h\/acct' must be an http:\/\/ or https:\/\/ URL$/,
    ],
    [
      'a connection string without a key or endpoint',
      undefined,
      { AZURE_STORAGE_CONNECTION_STRING: 'AccountName=a' },
      /environment AZURE_STORAGE_CONNECTION_STRING has neither AccountKey=, SharedAccessSignature= nor BlobEndpoint=/,
    ],
  ];
  for (const [name, cred, env, re] of rows) {
    assert.throws(
      () => azureTarget('as://acct/models', cred, env),
      (err: unknown) => {
        assert.ok(err instanceof ServerError, name);
        assert.equal(err.code, 'INVALID_ARG', name);
        assert.match(err.message, /^invalid Azure Blob repository path 'as:\/\/acct\/models': /, name);
        assert.match(err.message, re, name);
        return true;
      },
      name,
    );
  }
});

test('azureCredentialFromEntry: the credential file entry in typed form, or a text naming the entry and field', () => {
  assert.deepEqual(azureCredentialFromEntry({ account_str: 'a', account_key: KEY, region: 'ignored' }, ENTRY), {
    source: ENTRY,
    account_str: 'a',
    account_key: KEY,
  });
  const rows: [unknown, string][] = [
    [
      'just a string',
      `${ENTRY} is not an object: write it as { "account_str": "<account>", "account_key": "<key>" } or { "connection_string": "<connection string>" }`,
    ],
    [null, `${ENTRY} is not an object: write it as { "account_str": "<account>", "account_key": "<key>" } or { "connection_string": "<connection string>" }`],
    [{ account_key: 42 }, `${ENTRY} field account_key is 42; write it as a string`],
  ];
  for (const [entry, text] of rows) {
    assert.throws(
      () => azureCredentialFromEntry(entry, ENTRY),
      (err: unknown) => {
        assert.ok(err instanceof ServerError);
        assert.equal(err.code, 'INVALID_ARG');
        assert.equal(err.message, text);
        return true;
      },
    );
  }
});
