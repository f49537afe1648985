/**
 * HTTP compression (protocol.md §1.8.8). Requests: `Content-Encoding: gzip`
 * or `deflate` (exact values) are inflated before anything else, with gzip or
 * zlib headers auto-detected as Triton's inflater does; anything else but
 * `identity` / empty is 501. Responses: Accept-Encoding negotiation as
 * Triton parses it, then the whole body is compressed. Sync zlib: bodies are
 * bounded by --http-max-input-size.
 */
import zlib from 'node:zlib';
import { ServerError } from '../../core/errors';

export type ResponseEncoding = 'identity' | 'gzip' | 'deflate';

/** Sent as `Accept-Encoding` with the 501 for an unsupported request encoding. */
export const SUPPORTED_REQUEST_ENCODINGS = 'gzip, deflate';

/**
 * The request body, decompressed when `contentEncoding` says so. The
 * decompressed size is bounded by `maxInputSize` (Triton's
 * --http-max-input-size applies to the decompressed data): zlib stops as soon
 * as its output passes the bound and the partial output is dropped with the
 * error, so a small body that inflates without end costs at most
 * `maxInputSize` of memory, and only until the error is sent.
 */
export function decompressRequest(body: Buffer, contentEncoding: string | undefined, maxInputSize: number): Buffer {
  if (contentEncoding === undefined || contentEncoding === '' || contentEncoding === 'identity') return body;
  if (contentEncoding !== 'gzip' && contentEncoding !== 'deflate') {
    throw new ServerError('UNSUPPORTED', 'Unsupported compression type');
  }
  if (body.length === 0) throw new ServerError('INVALID_ARG', 'nothing to be decompressed');
  try {
    // unzip detects a gzip or a zlib header, whichever encoding was named.
    return zlib.unzipSync(body, { maxOutputLength: Math.max(1, maxInputSize) });
  } catch (err) {
    if (err instanceof RangeError || (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new ServerError(
        'INVALID_ARG',
        `decompressed request body size exceeds the maximum allowed value of ${maxInputSize} bytes. Use --http-max-input-size to increase the limit.`,
      );
    }
    throw new ServerError('INVALID_ARG', `failed to decompress the request body: ${(err as Error).message}`);
  }
}

/**
 * Triton's Accept-Encoding choice: comma-separated entries, leading spaces
 * skipped, optional `;q=<weight>` (default 1); only identity, deflate and gzip
 * count (exact, case-sensitive); the highest weight wins, ties keep the
 * earlier entry, weight 0 never wins; default identity.
 */
export function negotiateEncoding(acceptEncoding: string | undefined): ResponseEncoding {
  if (acceptEncoding === undefined || acceptEncoding === '') return 'identity';
  let best: ResponseEncoding = 'identity';
  let bestWeight = 0;
  for (const entry of acceptEncoding.split(',')) {
    const start = entry.search(/[^ ]/);
    const q = entry.indexOf(';q=');
    if (start < 0 || (q >= 0 && start >= q)) continue;
    const type = q < 0 ? entry.slice(start) : entry.slice(start, q);
    let weight = 1;
    if (q >= 0) {
      weight = parseFloat(entry.slice(q + 3)); // like std::stod: leading number, rest ignored
      if (Number.isNaN(weight)) continue;
    }
    if ((type === 'identity' || type === 'deflate' || type === 'gzip') && weight > bestWeight) {
      best = type;
      bestWeight = weight;
    }
  }
  return best;
}

/**
 * The whole response body compressed (gzip container for gzip, zlib container
 * for deflate); undefined on failure, when the body goes out uncompressed.
 */
export function compressResponse(body: Uint8Array, encoding: 'gzip' | 'deflate'): Buffer | undefined {
  try {
    return encoding === 'gzip' ? zlib.gzipSync(body) : zlib.deflateSync(body);
  } catch {
    return undefined;
  }
}
