/**
 * The S3 provider of `ObjectStore` (object-store.ts), on @aws-sdk/client-s3:
 * `s3://bucket/path` on AWS, `s3://host:port/bucket/path` on an
 * S3-compatible endpoint with path-style addressing (s3-url.ts).
 *
 * Credentials as Triton reads them (s3-credential.ts): the `s3` section of
 * TRITON_CLOUD_CREDENTIAL_PATH when that is set, else AWS_ACCESS_KEY_ID /
 * AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, else AWS_PROFILE, else the
 * SDK's default chain. Requests give up fast (a 3 s connect timeout, two
 * attempts), so a start on an unreachable endpoint fails in seconds.
 * Every SDK error becomes one of `store-failure.ts`'s sentences here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { ListObjectsV2CommandOutput } from '@aws-sdk/client-s3';
import type { ServerError } from '../../core/errors';
import type { ObjectStore, StoredObject } from './object-store';
import { parseS3Url } from './s3-url';
import type { S3Location } from './s3-url';
import { s3CredentialFor } from './s3-credential';
import type { S3Credential } from './s3-credential';
import { isNetworkFailure, storeFailure } from './store-failure';

const CONNECT_TIMEOUT_MS = 3000;
/** A socket idle this long aborts the request (a large download that keeps moving is not cut). */
const IDLE_TIMEOUT_MS = 30_000;
const MAX_ATTEMPTS = 2;

export function openS3Store(url: string, env: NodeJS.ProcessEnv = process.env): S3Store {
  // The pinned SDK supports Node 20; its warning is about later releases, which package.json does not take.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  return new S3Store(url, parseS3Url(url), s3CredentialFor(url, env));
}

export class S3Store implements ObjectStore {
  readonly scheme = 's3' as const;
  readonly credentialSource: string;
  private readonly client: S3Client;

  constructor(
    readonly url: string,
    private readonly where: S3Location,
    credential: S3Credential,
  ) {
    this.credentialSource = credential.source;
    this.client = new S3Client({
      region: credential.region,
      endpoint: where.endpoint,
      forcePathStyle: where.endpoint !== undefined,
      credentials: credential.keys,
      profile: credential.profile,
      maxAttempts: MAX_ATTEMPTS,
      requestHandler: { connectionTimeout: CONNECT_TIMEOUT_MS, requestTimeout: IDLE_TIMEOUT_MS },
      // Checksums only where S3 requires them: S3-compatible servers do not all know the newer headers.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  async list(): Promise<StoredObject[]> {
    const base = this.where.prefix === '' ? '' : `${this.where.prefix}/`;
    const out: StoredObject[] = [];
    let token: string | undefined;
    do {
      let page: ListObjectsV2CommandOutput;
      try {
        page = await this.client.send(new ListObjectsV2Command({ Bucket: this.where.bucket, Prefix: base, ContinuationToken: token }));
      } catch (err) {
        throw this.failure('list the objects', err);
      }
      for (const o of page.Contents ?? []) {
        if (o.Key === undefined || !o.Key.startsWith(base) || o.Key.endsWith('/')) continue; // folder markers
        out.push({ key: o.Key.slice(base.length), size: o.Size ?? 0, tag: (o.ETag ?? '').replace(/"/g, '') });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return out;
  }

  async download(key: string, file: string): Promise<void> {
    const full = this.where.prefix === '' ? key : `${this.where.prefix}/${key}`;
    let body: Readable;
    try {
      const got = await this.client.send(new GetObjectCommand({ Bucket: this.where.bucket, Key: full }));
      body = got.Body as Readable;
    } catch (err) {
      throw this.failure(`download '${key}'`, err, key);
    }
    fs.mkdirSync(path.dirname(file), { recursive: true });
    try {
      await pipeline(body, fs.createWriteStream(file));
    } catch (err) {
      fs.rmSync(file, { force: true });
      throw this.failure(`download '${key}'`, err, key);
    }
  }

  close(): void {
    this.client.destroy();
  }

  /**
   * What went wrong, as one of store-failure.ts's sentences: which root,
   * which credential (its source, never the secret), what to do. Access
   * failures lead with Triton's own S3 sentence.
   */
  private failure(what: string, err: unknown, key?: string): ServerError {
    const e = err as { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number } };
    const name = e.name ?? 'Error';
    const status = e.$metadata?.httpStatusCode;
    const where = this.where.endpoint === undefined ? 'AWS S3' : `the S3 endpoint ${this.where.endpoint}`;
    const raw = `${name}${status === undefined ? '' : `, HTTP ${status}`}: ${e.message ?? ''}`.trim();
    const bucket = `bucket '${this.where.bucket}'`;
    const f = { url: this.url, doing: what, credentialSource: this.credentialSource };
    if (name === 'NoSuchBucket' || (status === 404 && key === undefined)) {
      return storeFailure({
        ...f,
        kind: 'not-found',
        detail: `${bucket} not found at ${where} (${raw})`,
        hint: `Check the bucket name in --model-repository, and the region (${where === 'AWS S3' ? 'AWS_DEFAULT_REGION' : 'the endpoint'}).`,
      });
    }
    if (name === 'NoSuchKey' || status === 404) {
      return storeFailure({
        ...f,
        kind: 'object-gone',
        detail: `the object is gone from ${bucket} at ${where} (${raw})`,
        hint: 'It was removed after the listing; the next poll or load reads the listing again. Retry once the upload is complete.',
      });
    }
    if (status === 403 || status === 401 || ACCESS_ERRORS.has(name)) {
      return storeFailure({
        ...f,
        kind: 'denied',
        lead: TRITON_CREDENTIAL_TEXT,
        detail: `access denied to ${bucket} at ${where} (${raw})`,
        hint: 'Give that credential s3:ListBucket and s3:GetObject on the bucket, or set the right one (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or TRITON_CLOUD_CREDENTIAL_PATH).',
      });
    }
    if (name === 'CredentialsProviderError') {
      return storeFailure({
        ...f,
        kind: 'denied',
        lead: TRITON_CREDENTIAL_TEXT,
        detail: `no AWS credential found (${e.message ?? ''})`,
        hint: 'Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or TRITON_CLOUD_CREDENTIAL_PATH.',
      });
    }
    if (isNetworkFailure(err)) {
      const code = e.code ?? name;
      return storeFailure({
        ...f,
        kind: 'unreachable',
        detail: `${where} is unreachable (${code}${e.message ? `: ${e.message}` : ''}) after ${MAX_ATTEMPTS} attempts`,
        hint: 'Check the host and port in --model-repository and that the server is up.',
      });
    }
    return storeFailure({
      ...f,
      kind: 'other',
      detail: `${raw} (${bucket} at ${where})`,
      hint: "Check the bucket's state; the server keeps its last good models while a poll fails.",
    });
  }
}

/** Triton's text for an S3 client its credential does not get into. */
const TRITON_CREDENTIAL_TEXT = 'Unable to create S3 filesystem client. Check account credentials.';
const ACCESS_ERRORS = new Set(['AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'Forbidden', 'ExpiredToken', 'InvalidToken']);
