/**
 * A `gs://bucket/path` root through `@google-cloud/storage`: the object
 * listing under the prefix (generations as tags) and downloads to local
 * files, checked against the crc32c the service sends.
 *
 * Credentials, in order (Triton reads the first two the same way):
 * 1. the credential file's `gs` entry for the root (the caller finds it):
 *    a path to a service-account or authorized-user JSON key;
 * 2. GOOGLE_APPLICATION_CREDENTIALS, the same kind of path;
 * 3. but with STORAGE_EMULATOR_HOST set (a local stand-in or emulator):
 *    anonymous, before 1 and 2;
 * 4. Google's application default credentials (gcloud's file, then the
 *    metadata server). Triton falls back to anonymous after the metadata
 *    server; nodetron does not, so a public bucket needs a key too
 *    (docs/not-done-yet.md).
 * A key file (1, 2) is read and checked when the store opens, so a wrong
 * path fails at once with its name. With STORAGE_EMULATOR_HOST set no key
 * is read or sent (the client's token exchange would go to Google).
 * STORAGE_EMULATOR_HOST is the SDK's variable: its value, with or without
 * `/storage/v1`, is where every request goes, and the project id is set
 * here, so the client never looks for one.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Storage, type StorageOptions } from '@google-cloud/storage';
import { ServerError } from '../../core/errors';
import type { ObjectStore, StoredObject } from './object-store';
import { firstLine, isNetworkFailure, storeFailure, type StoreFailureKind } from './store-failure';

/** One `gs` entry of TRITON_CLOUD_CREDENTIAL_PATH, as the credential-file reader hands it over. */
export interface GcsCredential {
  /** What the texts call this entry, e.g. `TRITON_CLOUD_CREDENTIAL_PATH /etc/creds.json entry "gs://bucket"`. */
  readonly source: string;
  /** Triton's value: the path of a JSON key file. */
  readonly path: string;
}

/** The credential file's `gs` entry (as `credential-file.ts` matched it): Triton's form is a path. */
export function gcsCredentialFromEntry(entry: unknown, source: string): GcsCredential {
  if (typeof entry !== 'string' || entry === '') {
    throw new ServerError(
      'INVALID_ARG',
      `${source} is ${JSON.stringify(entry)}; a "gs" entry is the path of a service account JSON key file, e.g. "/etc/gcs/key.json"`,
    );
  }
  return { source, path: entry };
}

export interface GcsStoreOptions {
  /** Objects per listing request; the service's maximum (1000) unless a test wants several pages. */
  pageSize?: number;
  /** The environment the credential rules read; process.env unless a test gives its own. */
  env?: Readonly<Record<string, string | undefined>>;
}

/** A listing request that takes longer is given up (then retried, up to MAX_RETRIES). */
const LIST_TIMEOUT_MS = 10_000;
const MAX_RETRIES = 2;

/** `gs://bucket/path` → bucket and prefix ('' or ending in '/'). */
export function parseGcsUrl(url: string): { bucket: string; prefix: string } {
  const m = /^gs:\/\/([^/?#]+)(?:\/([^?#]*))?$/.exec(url);
  if (!m) throw new ServerError('INVALID_ARG', `invalid GCS repository path '${url}': expected 'gs://<bucket>[/<path>]'`);
  const p = (m[2] ?? '').replace(/\/+$/, '');
  return { bucket: m[1]!, prefix: p === '' ? '' : `${p}/` };
}

interface KeyFile {
  type?: string;
  project_id?: string;
  client_email?: string;
  quota_project_id?: string;
}

/** Reads and checks a JSON key file; the account it names goes into the source (an email is no secret). */
function readKeyFile(url: string, file: string, whence: string): { json: KeyFile & Record<string, unknown>; who: string } {
  let json: KeyFile & Record<string, unknown>;
  try {
    json = JSON.parse(fs.readFileSync(file, 'utf8')) as KeyFile & Record<string, unknown>;
  } catch (err) {
    throw new ServerError(
      'INVALID_ARG',
      `cannot use the GCS credential for ${url}: ${whence} names '${file}', which is not a readable JSON key file (${firstLine(err)}). ` +
        'Point it at a service account key (IAM > Service accounts > Keys > JSON) or an authorized-user file from `gcloud auth application-default login`.',
    );
  }
  if (json.type !== 'service_account' && json.type !== 'authorized_user') {
    throw new ServerError(
      'INVALID_ARG',
      `cannot use the GCS credential for ${url}: '${file}' (${whence}) has type ${JSON.stringify(json.type)}; ` +
        'expected "service_account" or "authorized_user".',
    );
  }
  return { json, who: json.client_email !== undefined ? `service account ${json.client_email}` : json.type };
}

interface Resolved {
  options: StorageOptions;
  credentialSource: string;
}

function resolve(url: string, cred: GcsCredential | undefined, env: Readonly<Record<string, string | undefined>>): Resolved {
  const emulator = env['STORAGE_EMULATOR_HOST'];
  const base: StorageOptions = {
    projectId: 'nodetron',
    retryOptions: { maxRetries: MAX_RETRIES, maxRetryDelay: 1, totalTimeout: 30 },
  };
  if (emulator !== undefined && emulator !== '') base.apiEndpoint = emulator.replace(/\/+$/, '').replace(/\/storage\/v1$/, '');
  if (base.apiEndpoint !== undefined) {
    const unused =
      cred !== undefined ? `; ${cred.source} is not used` : env['GOOGLE_APPLICATION_CREDENTIALS'] ? '; GOOGLE_APPLICATION_CREDENTIALS is not used' : '';
    return { options: base, credentialSource: `anonymous (STORAGE_EMULATOR_HOST=${emulator}${unused})` };
  }
  const keyPath = cred?.path ?? env['GOOGLE_APPLICATION_CREDENTIALS'];
  if (keyPath !== undefined && keyPath !== '') {
    const whence = cred !== undefined ? cred.source : 'environment GOOGLE_APPLICATION_CREDENTIALS';
    const { json, who } = readKeyFile(url, path.resolve(keyPath), whence);
    return {
      options: { ...base, credentials: json, projectId: json.project_id ?? json.quota_project_id ?? 'nodetron' },
      credentialSource: `${whence} (${keyPath}, ${who})`,
    };
  }
  return {
    options: base,
    credentialSource: 'application default credentials (gcloud or the metadata server; no GOOGLE_APPLICATION_CREDENTIALS or credential entry)',
  };
}

interface GcsErrorLike {
  code?: number | string;
  status?: number;
  message?: string;
  response?: { status?: number; data?: { error?: string; error_description?: string } };
}

class GcsStore implements ObjectStore {
  readonly scheme = 'gs' as const;
  private readonly lister: Storage;
  private readonly fetcher: Storage;

  constructor(
    readonly url: string,
    private readonly bucket: string,
    private readonly prefix: string,
    private readonly resolved: Resolved,
    private readonly pageSize: number,
  ) {
    this.lister = new Storage({ ...resolved.options, timeout: LIST_TIMEOUT_MS });
    this.fetcher = new Storage(resolved.options);
  }

  get credentialSource(): string {
    return this.resolved.credentialSource;
  }

  async list(): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    const bucket = this.lister.bucket(this.bucket);
    let pageToken: string | undefined;
    try {
      do {
        const [files, next] = await bucket.getFiles({ prefix: this.prefix, maxResults: this.pageSize, autoPaginate: false, pageToken });
        for (const f of files) {
          const key = f.name.slice(this.prefix.length);
          if (key === '' || key.endsWith('/')) continue; // folder placeholders
          const md = f.metadata;
          out.push({ key, size: Number(md.size ?? 0), tag: String(md.generation ?? md.etag ?? '') });
        }
        pageToken = (next as { pageToken?: string } | null)?.pageToken;
      } while (pageToken !== undefined && pageToken !== '');
    } catch (err) {
      throw this.failure('list the objects', err);
    }
    return out;
  }

  async download(key: string, file: string): Promise<void> {
    await fs.promises.mkdir(path.dirname(file), { recursive: true });
    try {
      await this.fetcher
        .bucket(this.bucket)
        .file(this.prefix + key)
        .download({ destination: file, validation: 'crc32c' });
    } catch (err) {
      await fs.promises.rm(file, { force: true });
      throw this.failure(`download '${key}'`, err, key);
    }
  }

  close(): void {
    // The SDK's agent keeps no socket open past an idle request.
  }

  private failure(doing: string, err: unknown, key?: string): Error {
    const e = err as GcsErrorLike;
    const status = typeof e.code === 'number' ? e.code : (e.response?.status ?? e.status);
    const oauth = e.response?.data?.error;
    const where = `bucket '${this.bucket}'`;
    let detail = `${status !== undefined ? `HTTP ${status}: ` : ''}${firstLine(err)} (${where})`;
    let kind: StoreFailureKind;
    let hint: string;
    if (oauth !== undefined) {
      kind = 'denied';
      detail = `the token request was refused: ${oauth}${e.response?.data?.error_description !== undefined ? ` (${e.response.data.error_description})` : ''}`;
      hint = 'Check that the key file is current (a deleted or rotated key is refused) and belongs to a service account that may read the bucket.';
    } else if (status === undefined && isNetworkFailure(err)) {
      kind = 'unreachable';
      hint = 'Check that the endpoint is reachable from here (STORAGE_EMULATOR_HOST, when set, is where every request goes).';
    } else if (status === 404 && key !== undefined) {
      kind = 'object-gone';
      hint = 'The object was listed but is gone now; it was probably deleted or replaced during the download. The next poll or load reads the listing again.';
    } else if (status === 404) {
      kind = 'not-found';
      hint = 'Check the bucket name in the path.';
    } else if ((status === 401 || status === 403) && this.resolved.options.apiEndpoint !== undefined) {
      kind = 'denied';
      hint =
        'STORAGE_EMULATOR_HOST is set, so requests carry no credential: let that server serve the bucket to anonymous clients, or unset STORAGE_EMULATOR_HOST to use GOOGLE_APPLICATION_CREDENTIALS or a TRITON_CLOUD_CREDENTIAL_PATH "gs" entry.';
    } else if (status === 401 || status === 403) {
      kind = 'denied';
      hint =
        'Give a credential that may list and read the bucket (roles/storage.objectViewer): GOOGLE_APPLICATION_CREDENTIALS or a TRITON_CLOUD_CREDENTIAL_PATH "gs" entry.';
    } else if (status === undefined && /default credentials/i.test(firstLine(err))) {
      kind = 'denied';
      hint = 'Set GOOGLE_APPLICATION_CREDENTIALS to a service account JSON key, or give a TRITON_CLOUD_CREDENTIAL_PATH "gs" entry.';
    } else {
      kind = 'other';
      hint = "Check the bucket's state; the server keeps its last good models while a poll fails.";
    }
    return storeFailure({ kind, url: this.url, doing, credentialSource: this.credentialSource, detail, hint });
  }
}

/**
 * Opens `gs://bucket/path` with `cred` (the credential file's entry for it,
 * found by the caller) or, without one, the environment. Synchronous:
 * nothing is fetched until `list`; the key file, if any, is read and
 * checked now (INVALID_ARG when it is not one).
 */
export function openGcsStore(url: string, cred: GcsCredential | undefined, opts: GcsStoreOptions = {}): ObjectStore {
  const { bucket, prefix } = parseGcsUrl(url);
  const resolved = resolve(url, cred, opts.env ?? process.env);
  return new GcsStore(url, bucket, prefix, resolved, opts.pageSize ?? 1000);
}
