/**
 * A real S3 server for the tests and bench/cloud-start.ts: the npm `s3rver`
 * on 127.0.0.1, a free port and a temp folder of its own, with an access
 * key of the test's choosing. s3rver checks that the access key id exists
 * but does not check SigV4 signatures, so this helper verifies every
 * signed request's signature with the key's secret first (the SigV4
 * canonical request and signing key, node:crypto) and answers 403
 * SignatureDoesNotMatch as S3 does: a wrong secret is refused for real.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, DeleteObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';

export const S3_KEY_ID = 'NODETRONTEST';
export const S3_SECRET = 'nodetron-test-secret-0123456789';
export const S3_REGION = 'us-east-1';

interface KoaContext {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  status: number;
  type: string;
  body: unknown;
}
interface S3rverApp {
  middleware: ((ctx: KoaContext, next: () => Promise<void>) => Promise<void>)[];
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
}
// s3rver ships no types; these are the parts used.
const S3rver = require('s3rver') as new (options: object) => S3rverApp;
const AWSAccount = require('s3rver/lib/models/account') as new (id: number, name: string) => { createKeyPair(id: string, secret: string): void };

export interface S3Server {
  /** `127.0.0.1:<port>`: the host:port of Triton's `s3://host:port/bucket/path` form. */
  hostPort: string;
  client: S3Client;
  createBucket(name: string): Promise<void>;
  put(bucket: string, key: string, body: Buffer | string): Promise<void>;
  remove(bucket: string, key: string): Promise<void>;
  /** Every file under `dir` to `bucket` under `prefix/` (keys '/'-separated). */
  upload(bucket: string, prefix: string, dir: string): Promise<void>;
  /** Requests refused for a wrong signature so far. */
  refusedSignatures(): number;
  /** Object listings (ListObjectsV2) answered so far. */
  listRequests(): number;
  close(): Promise<void>;
}

let account: { createKeyPair(id: string, secret: string): void } | undefined;

export async function startS3(): Promise<S3Server> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true'; // the pinned SDK supports Node 20
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-s3rver-'));
  if (account === undefined) {
    account = new AWSAccount(123456789012, 'nodetron-test');
    account.createKeyPair(S3_KEY_ID, S3_SECRET);
  }
  const app = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory });
  let refused = 0;
  let listed = 0;
  app.middleware.unshift(async (ctx, next) => {
    const why = signatureProblem(ctx, S3_KEY_ID, S3_SECRET);
    if (why === undefined) {
      if (ctx.method === 'GET' && /[?&]list-type=2(&|$)/.test(ctx.url)) listed++;
      return next();
    }
    refused++;
    ctx.status = 403;
    ctx.type = 'application/xml';
    ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided. Check your key and signing method. (${why})</Message></Error>`;
  });
  const { port } = await app.run();
  const hostPort = `127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint: `http://${hostPort}`,
    forcePathStyle: true,
    region: S3_REGION,
    credentials: { accessKeyId: S3_KEY_ID, secretAccessKey: S3_SECRET },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const put = async (bucket: string, key: string, body: Buffer | string): Promise<void> => {
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
  };
  return {
    hostPort,
    client,
    createBucket: async (name) => {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    },
    put,
    remove: async (bucket, key) => {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    upload: async (bucket, prefix, dir) => {
      for (const rel of filesUnder(dir)) {
        await put(bucket, prefix === '' ? rel : `${prefix}/${rel}`, fs.readFileSync(path.join(dir, rel)));
      }
    },
    refusedSignatures: () => refused,
    listRequests: () => listed,
    close: async () => {
      client.destroy();
      await app.close();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}

function filesUnder(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel === '' ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) out.push(...filesUnder(dir, r));
    else out.push(r);
  }
  return out;
}

const AUTH = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]+)$/;

/** Why a header-signed SigV4 request's signature is wrong for `secret`; undefined when it is right (or unsigned: s3rver answers those). */
export function signatureProblem(ctx: Pick<KoaContext, 'method' | 'url' | 'headers'>, keyId: string, secret: string): string | undefined {
  const auth = ctx.headers.authorization;
  if (typeof auth !== 'string') return undefined;
  const m = AUTH.exec(auth);
  if (!m) return undefined;
  const [, id, day, region, service, signedHeaders, signature] = m;
  if (id !== keyId) return undefined; // s3rver answers InvalidAccessKeyId
  const header = (name: string): string => {
    const v = ctx.headers[name];
    return (Array.isArray(v) ? v.join(',') : (v ?? '')).trim().replace(/\s+/g, ' ');
  };
  const q = ctx.url.indexOf('?');
  const rawPath = q < 0 ? ctx.url : ctx.url.slice(0, q);
  const query = q < 0 ? '' : ctx.url.slice(q + 1);
  const canonicalQuery =
    query === ''
      ? ''
      : query
          .split('&')
          .filter(Boolean)
          .map((pair) => {
            const eq = pair.indexOf('=');
            const k = decodeURIComponent((eq < 0 ? pair : pair.slice(0, eq)).replace(/\+/g, ' '));
            const v = eq < 0 ? '' : decodeURIComponent(pair.slice(eq + 1).replace(/\+/g, ' '));
            return [rfc3986(k), rfc3986(v)];
          })
          .sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1))
          .map(([k, v]) => `${k}=${v}`)
          .join('&');
  const names = signedHeaders.split(';');
  const canonical = [
    ctx.method,
    rawPath,
    canonicalQuery,
    names.map((n) => `${n}:${header(n)}\n`).join(''),
    signedHeaders,
    header('x-amz-content-sha256') || 'UNSIGNED-PAYLOAD',
  ].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', header('x-amz-date'), scope, sha256(canonical)].join('\n');
  let key: Buffer = hmac(`AWS4${secret}`, day);
  for (const part of [region, service, 'aws4_request']) key = hmac(key, part);
  const expected = crypto.createHmac('sha256', key).update(toSign).digest('hex');
  return expected === signature ? undefined : `signature ${signature.slice(0, 8)}… for key ${id}`;
}

function rfc3986(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function sha256(s: string): string {
  return crypto.createHash('sha256').update(s).digest('hex');
}

function hmac(key: string | Buffer, data: string): Buffer {
  return crypto.createHmac('sha256', key).update(data).digest();
}
