/**
 * A model repository root in cloud storage, as the repository layer sees
 * it: a flat list of objects under one prefix, each with a tag that changes
 * when its bytes change, and a way to fetch one object to a local file.
 * Every provider (S3, Azure Blob, GCS) gives this one shape; what is above
 * it (the local cache, the scan, poll, load) never knows which provider it
 * has.
 *
 * Errors: every method throws `ServerError` with a sentence that names the
 * root, the credential used (`credentialSource`, never a secret) and what
 * to do, for these cases at least: bucket or container not found, access
 * denied, endpoint unreachable.
 */

/** One object under the root. */
export interface StoredObject {
  /** Path below the root prefix, '/'-separated, no leading '/': `simple/1/model.onnx`. */
  readonly key: string;
  readonly size: number;
  /**
   * Changes whenever the object's bytes change: the ETag (S3, Azure, GCS),
   * or a version id or generation where the provider has one. Compared for
   * equality only.
   */
  readonly tag: string;
}

export type CloudScheme = 's3' | 'as' | 'gs';

const CLOUD = /^(s3|gs|as):\/\//;

/** The URL's cloud scheme, or undefined for a local path. */
export function cloudScheme(url: string): CloudScheme | undefined {
  return CLOUD.exec(url)?.[1] as CloudScheme | undefined;
}

export interface ObjectStore {
  readonly scheme: CloudScheme;
  /** The root as the user wrote it (`s3://host:9000/bucket/path`). */
  readonly url: string;
  /**
   * Where the credential came from, for error texts and the log: e.g.
   * `environment AWS_ACCESS_KEY_ID=AKIA…`, `TRITON_CLOUD_CREDENTIAL_PATH
   * /etc/creds.json entry "s3://bucket"`, `anonymous`. Never a secret.
   */
  readonly credentialSource: string;
  /** Every object under the root prefix (all pages), keys relative to it. */
  list(): Promise<StoredObject[]>;
  /**
   * Writes the object at `key` (relative to the root) straight to `file`,
   * creating its folder; a failed download removes what it wrote. `file` is
   * a temporary name: the caller (cloud-mirror.ts) renames it into place,
   * so a provider makes no temporary file of its own.
   */
  download(key: string, file: string): Promise<void>;
  /** Frees the client's sockets. */
  close(): void;
}
