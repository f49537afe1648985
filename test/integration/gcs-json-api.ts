/**
 * A small stand-in for the GCS JSON API, for the GCS tests: no GCS emulator
 * installs here, so this serves the part of the API the store uses, on a
 * free loopback port, the way the service answers it:
 * - `GET /storage/v1/b/<bucket>/o?prefix=&maxResults=&pageToken=` (also
 *   without `/storage/v1`, as the client sends it when STORAGE_EMULATOR_HOST
 *   is set): object resources in name order, `nextPageToken` while more
 *   remain;
 * - `GET …/b/<bucket>/o/<object>`: the object's resource; with `alt=media`
 *   its bytes, with `x-goog-hash` (crc32c and md5),
 *   `x-goog-generation` and `x-goog-stored-content-encoding`, so the client
 *   checks what it downloaded;
 * - 404 with GCS's error body for a missing bucket or object, 403 for a
 *   bucket configured as forbidden.
 * Each object's generation is a counter that grows with every write, and
 * its etag follows it, as in GCS. No authentication: the client sends none
 * to STORAGE_EMULATOR_HOST (and its service-account token exchange goes to
 * a fixed Google address, which a test must never reach).
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';

interface StoredBlob {
  data: Buffer;
  generation: number;
  updated: string;
}

/** CRC-32C (Castagnoli), as GCS's x-goog-hash carries it. */
const CRC32C_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32c(data: Buffer): number {
  let c = 0xffffffff;
  for (const b of data) c = CRC32C_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function crc32cBase64(data: Buffer): string {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(crc32c(data));
  return b.toString('base64');
}

export interface GcsStandIn {
  /** `http://127.0.0.1:<port>`: the value for STORAGE_EMULATOR_HOST. */
  host: string;
  createBucket(name: string, opts?: { forbidden?: boolean }): void;
  put(bucket: string, name: string, data: string | Buffer): void;
  remove(bucket: string, name: string): void;
  /** Requests served, as `METHOD path`, for the tests' checks. */
  requests: string[];
  close(): Promise<void>;
}

function gcsError(res: http.ServerResponse, code: number, message: string, reason: string): void {
  const body = JSON.stringify({ error: { code, message, errors: [{ message, domain: 'global', reason }] } });
  res.writeHead(code, { 'Content-Type': 'application/json; charset=UTF-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function json(res: http.ServerResponse, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(200, { 'Content-Type': 'application/json; charset=UTF-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function resource(bucket: string, name: string, o: StoredBlob): Record<string, string> {
  return {
    kind: 'storage#object',
    id: `${bucket}/${name}/${o.generation}`,
    name,
    bucket,
    generation: String(o.generation),
    metageneration: '1',
    contentType: 'application/octet-stream',
    size: String(o.data.length),
    md5Hash: crypto.createHash('md5').update(o.data).digest('base64'),
    crc32c: crc32cBase64(o.data),
    etag: Buffer.from(`etag-${o.generation}`).toString('base64'),
    updated: o.updated,
    timeCreated: o.updated,
  };
}

export async function startGcsStandIn(): Promise<GcsStandIn> {
  const buckets = new Map<string, { objects: Map<string, StoredBlob>; forbidden: boolean }>();
  const requests: string[] = [];
  let generation = 1_700_000_000_000_000;

  function objects(req: http.IncomingMessage, res: http.ServerResponse, url: URL): void {
    const m = /^(?:\/storage\/v1)?\/b\/([^/]+)\/o(?:\/(.+))?$/.exec(url.pathname);
    if (!m || req.method !== 'GET') return gcsError(res, 404, `Not Found: ${req.method} ${url.pathname}`, 'notFound');
    const bucketName = decodeURIComponent(m[1]!);
    const b = buckets.get(bucketName);
    if (!b) return gcsError(res, 404, 'The specified bucket does not exist.', 'notFound');
    if (b.forbidden) {
      return gcsError(
        res,
        403,
        `caller does not have storage.objects.list access to the Google Cloud Storage bucket. Permission 'storage.objects.list' denied on resource (or it may not exist).`,
        'forbidden',
      );
    }
    if (m[2] === undefined) {
      const prefix = url.searchParams.get('prefix') ?? '';
      const max = Math.min(Number(url.searchParams.get('maxResults') ?? 1000) || 1000, 1000);
      const after = url.searchParams.has('pageToken') ? Buffer.from(url.searchParams.get('pageToken')!, 'base64url').toString() : '';
      const names = [...b.objects.keys()].filter((n) => n.startsWith(prefix) && n > after).sort();
      const page = names.slice(0, max);
      const body: Record<string, unknown> = { kind: 'storage#objects', items: page.map((n) => resource(bucketName, n, b.objects.get(n)!)) };
      if (names.length > page.length) body['nextPageToken'] = Buffer.from(page[page.length - 1]!).toString('base64url');
      return json(res, body);
    }
    const name = decodeURIComponent(m[2]);
    const o = b.objects.get(name);
    if (!o) return gcsError(res, 404, `No such object: ${bucketName}/${name}`, 'notFound');
    if (url.searchParams.get('alt') !== 'media') return json(res, resource(bucketName, name, o));
    const r = resource(bucketName, name, o);
    res.writeHead(200, {
      'Content-Type': 'application/octet-stream',
      'Content-Length': o.data.length,
      'x-goog-hash': `crc32c=${r['crc32c']},md5=${r['md5Hash']}`,
      'x-goog-generation': String(o.generation),
      'x-goog-metageneration': '1',
      'x-goog-stored-content-encoding': 'identity',
      'x-goog-stored-content-length': String(o.data.length),
      ETag: r['etag'],
    });
    res.end(o.data);
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    requests.push(`${req.method} ${url.pathname}`);
    objects(req, res, url);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const host = `http://127.0.0.1:${port}`;
  return {
    host,
    requests,
    createBucket(name, opts = {}) {
      buckets.set(name, { objects: new Map(), forbidden: opts.forbidden ?? false });
    },
    put(bucket, name, data) {
      const b = buckets.get(bucket);
      if (!b) throw new Error(`no bucket ${bucket}`);
      b.objects.set(name, { data: Buffer.from(data), generation: ++generation, updated: new Date().toISOString() });
    },
    remove(bucket, name) {
      buckets.get(bucket)?.objects.delete(name);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
