/**
 * What an `as://` root means before any request is made: the account, the
 * container, the prefix, the blob service endpoint and the credential, from
 * the URL, the credential-file entry (when the caller found one) or the
 * environment. Pure: the environment is a parameter, so the rules are
 * table-tested (test/unit/azure-target.test.ts).
 *
 * The rules, Triton's first, then what nodetron adds:
 * - `as://<account>/<container>[/<path>]`; a host written as
 *   `<account>.blob.core.windows.net` means `<account>`.
 * - A credential-file entry is the whole credential (the environment's
 *   keys are not read then). Without one: AZURE_STORAGE_CONNECTION_STRING, else AZURE_STORAGE_KEY
 *   (with AZURE_STORAGE_ACCOUNT), else anonymous.
 * - `account_str` / AZURE_STORAGE_ACCOUNT, when set, names the account
 *   instead of the URL's (as in Triton); a connection string's AccountName
 *   does too.
 * - The endpoint is Triton's `https://<account>.blob.core.windows.net`
 *   unless overridden: the entry's `blob_endpoint`, else
 *   AZURE_STORAGE_BLOB_ENDPOINT (the account's blob service URL, e.g.
 *   Azurite's `http://127.0.0.1:10000/devstoreaccount1` or a sovereign
 *   cloud's `https://<account>.blob.core.usgovcloudapi.net`). A connection
 *   string names its endpoint itself (BlobEndpoint= or EndpointSuffix=), so
 *   the override does not apply to it.
 */
import { ServerError } from '../../core/errors';

/** One `as` entry of TRITON_CLOUD_CREDENTIAL_PATH, as the credential-file reader hands it over. */
export interface AzureCredential {
  /**
   * What the texts call this entry, e.g. `TRITON_CLOUD_CREDENTIAL_PATH
   * /etc/creds.json entry "as://acct/models"`. Never a secret.
   */
  readonly source: string;
  /** Triton's field: the account name, instead of the URL's. */
  readonly account_str?: string;
  /** Triton's field: the account's shared key (base64). */
  readonly account_key?: string;
  /** nodetron's field: a full connection string (AccountName=…;AccountKey=…;BlobEndpoint=…). */
  readonly connection_string?: string;
  /** nodetron's field: the account's blob service URL, instead of the public one. */
  readonly blob_endpoint?: string;
  /** Triton's field; only "key" (the default) is served here. */
  readonly auth_type?: string;
}

export type AzureAuth = { kind: 'key'; account: string; key: string } | { kind: 'connection-string'; value: string } | { kind: 'anonymous' };

export interface AzureTarget {
  account: string;
  container: string;
  /** '' or ends with '/'. */
  prefix: string;
  /** The blob service URL; for a connection string, the one it names (for the texts). */
  serviceUrl: string;
  auth: AzureAuth;
  /** For the texts and the log; never a secret. */
  credentialSource: string;
}

export type Env = Readonly<Record<string, string | undefined>>;

const PUBLIC_SUFFIX = '.blob.core.windows.net';

function invalid(url: string, what: string): ServerError {
  return new ServerError('INVALID_ARG', `invalid Azure Blob repository path '${url}': ${what}`);
}

/** `as://account/container/path` → its three parts (path '' or ending in '/'). */
export function parseAzureUrl(url: string): { account: string; container: string; prefix: string } {
  const m = /^as:\/\/([^/?#]+)\/([^/?#]+)(?:\/([^?#]*))?$/.exec(url);
  if (!m) throw invalid(url, "expected 'as://<account>/<container>[/<path>]'");
  const host = m[1]!;
  const account = host.endsWith(PUBLIC_SUFFIX) ? host.slice(0, -PUBLIC_SUFFIX.length) : host;
  const path = (m[3] ?? '').replace(/\/+$/, '');
  return { account, container: m[2]!, prefix: path === '' ? '' : `${path}/` };
}

/** `Key=value;Key=value` → a map (the keys as written). */
export function connectionStringParts(cs: string): Map<string, string> {
  const parts = new Map<string, string>();
  for (const piece of cs.split(';')) {
    const eq = piece.indexOf('=');
    if (eq > 0) parts.set(piece.slice(0, eq).trim(), piece.slice(eq + 1).trim());
  }
  return parts;
}

function endpointOf(url: string, endpoint: string, whence: string): string {
  let parsed: URL;
  try {
    parsed = new URL(endpoint);
  } catch {
    throw invalid(
      url,
      `${whence} '${endpoint}' is not a URL; write the account's blob service URL, e.g. https://<account>.blob.core.windows.net or http://127.0.0.1:10000/<account>`,
    );
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw invalid(url, `${whence} '${endpoint}' must be an http:// or https:// URL`);
  }
  return endpoint.replace(/\/+$/, '');
}

function fromConnectionString(url: string, cs: string, whence: string, fallbackAccount: string): Omit<AzureTarget, 'container' | 'prefix'> {
  const parts = connectionStringParts(cs);
  const account = parts.get('AccountName') ?? fallbackAccount;
  const blobEndpoint = parts.get('BlobEndpoint');
  if (!parts.has('AccountKey') && !parts.has('SharedAccessSignature') && !blobEndpoint) {
    throw invalid(
      url,
      `${whence} has neither AccountKey=, SharedAccessSignature= nor BlobEndpoint=; copy the whole connection string from the storage account's "Access keys" page`,
    );
  }
  const protocol = parts.get('DefaultEndpointsProtocol') ?? 'https';
  const suffix = parts.get('EndpointSuffix') ?? 'core.windows.net';
  const serviceUrl = blobEndpoint !== undefined ? endpointOf(url, blobEndpoint, `${whence} BlobEndpoint`) : `${protocol}://${account}.blob.${suffix}`;
  return { account, serviceUrl, auth: { kind: 'connection-string', value: cs }, credentialSource: `${whence} (AccountName=${account})` };
}

/** The account, endpoint and credential for `url`, from `cred` when given, else from `env`. */
export function azureTarget(url: string, cred: AzureCredential | undefined, env: Env): AzureTarget {
  const where = parseAzureUrl(url);
  const resolved = cred !== undefined ? fromEntry(url, where.account, cred, env) : fromEnv(url, where.account, env);
  return { ...where, ...resolved };
}

function fromEntry(url: string, urlAccount: string, cred: AzureCredential, env: Env): Omit<AzureTarget, 'container' | 'prefix'> {
  if (cred.auth_type !== undefined && cred.auth_type !== '' && cred.auth_type !== 'key') {
    throw invalid(url, `${cred.source} has auth_type '${cred.auth_type}', which nodetron does not serve yet; give account_key or connection_string instead`);
  }
  if (cred.connection_string !== undefined && cred.connection_string !== '') {
    return fromConnectionString(url, cred.connection_string, `${cred.source} connection_string`, urlAccount);
  }
  const account = cred.account_str !== undefined && cred.account_str !== '' ? cred.account_str : urlAccount;
  const override = cred.blob_endpoint ?? env['AZURE_STORAGE_BLOB_ENDPOINT'];
  const whence = cred.blob_endpoint !== undefined ? `${cred.source} blob_endpoint` : 'AZURE_STORAGE_BLOB_ENDPOINT';
  const serviceUrl = override !== undefined && override !== '' ? endpointOf(url, override, whence) : `https://${account}${PUBLIC_SUFFIX}`;
  if (cred.account_key !== undefined && cred.account_key !== '') {
    return { account, serviceUrl, auth: { kind: 'key', account, key: cred.account_key }, credentialSource: `${cred.source} (account ${account}, account_key)` };
  }
  return { account, serviceUrl, auth: { kind: 'anonymous' }, credentialSource: `anonymous (${cred.source} has no account_key)` };
}

function fromEnv(url: string, urlAccount: string, env: Env): Omit<AzureTarget, 'container' | 'prefix'> {
  const cs = env['AZURE_STORAGE_CONNECTION_STRING'];
  if (cs !== undefined && cs !== '') return fromConnectionString(url, cs, 'environment AZURE_STORAGE_CONNECTION_STRING', urlAccount);
  const envAccount = env['AZURE_STORAGE_ACCOUNT'];
  const account = envAccount !== undefined && envAccount !== '' ? envAccount : urlAccount;
  const override = env['AZURE_STORAGE_BLOB_ENDPOINT'];
  const serviceUrl =
    override !== undefined && override !== '' ? endpointOf(url, override, 'AZURE_STORAGE_BLOB_ENDPOINT') : `https://${account}${PUBLIC_SUFFIX}`;
  const key = env['AZURE_STORAGE_KEY'];
  if (key !== undefined && key !== '') {
    const named =
      envAccount !== undefined && envAccount !== ''
        ? `AZURE_STORAGE_ACCOUNT=${account} and AZURE_STORAGE_KEY`
        : `AZURE_STORAGE_KEY (account ${account} from the path)`;
    return { account, serviceUrl, auth: { kind: 'key', account, key }, credentialSource: `environment ${named}` };
  }
  return {
    account,
    serviceUrl,
    auth: { kind: 'anonymous' },
    credentialSource: 'anonymous (no TRITON_CLOUD_CREDENTIAL_PATH entry, AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_KEY)',
  };
}

const ENTRY_FIELDS = ['account_str', 'account_key', 'connection_string', 'blob_endpoint', 'auth_type'] as const;

/**
 * The credential file's `as` entry (as `credential-file.ts` matched it) in
 * typed form: an object whose fields named above are strings. Other fields
 * are ignored, as Triton ignores them.
 */
export function azureCredentialFromEntry(entry: unknown, source: string): AzureCredential {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    throw new ServerError(
      'INVALID_ARG',
      `${source} is not an object: write it as { "account_str": "<account>", "account_key": "<key>" } or { "connection_string": "<connection string>" }`,
    );
  }
  const fields: Record<string, string> = {};
  for (const name of ENTRY_FIELDS) {
    const v = (entry as Record<string, unknown>)[name];
    if (v === undefined) continue;
    if (typeof v !== 'string') throw new ServerError('INVALID_ARG', `${source} field ${name} is ${JSON.stringify(v)}; write it as a string`);
    fields[name] = v;
  }
  return { source, ...fields };
}
