/**
 * --grpc-infer-response-compression-level: ModelInfer and ModelStreamInfer
 * responses compressed as Triton's gRPC server compresses them. Triton sets
 * the level on each inference call; gRPC core then picks the algorithm from
 * those the client accepts (its `grpc-accept-encoding`), ranked gzip then
 * deflate: low takes the first, medium the middle one, high the last, so a
 * client that accepts both gets gzip at low and deflate at medium and high;
 * a client that accepts neither gets identity. zlib runs at its default
 * level, and a message that would not get smaller goes uncompressed (flag 0),
 * as gRPC core sends it.
 *
 * @grpc/grpc-js 1.14 never compresses what a server sends: its base call's
 * serializeMessage writes the compressed flag 0 and its sendMetadata sends
 * `grpc-encoding: identity`, and the request's `grpc-accept-encoding` is
 * dropped before any interceptor sees it. So this file reaches into
 * grpc-js internals (not public API), each guarded: the server's http2
 * servers (`http2Servers`, to read each stream's request headers), the base
 * call's `stream`, `serializeMessage` and `sendMetadata`. When one of them is
 * not there, responses go uncompressed, and
 * test/integration/grpc-response-compression.test.ts fails.
 */
import { deflateSync, gzipSync } from 'node:zlib';
import type { EventEmitter } from 'node:events';
import * as grpc from '@grpc/grpc-js';

export type CompressionLevel = 'none' | 'low' | 'medium' | 'high';
export type ResponseEncoding = 'gzip' | 'deflate';

/** gRPC's message prefix: the compressed flag, then the length as 4 bytes big-endian. */
const PREFIX_BYTES = 5;

/**
 * The encoding gRPC core chooses for `level` among those the client accepts
 * (`grpc-accept-encoding`, comma-separated; absent: identity only); null:
 * identity.
 */
export function responseEncoding(level: CompressionLevel, acceptEncoding: string | undefined): ResponseEncoding | null {
  if (level === 'none' || acceptEncoding === undefined) return null;
  const accepted = new Set(acceptEncoding.split(',').map((e) => e.trim().toLowerCase()));
  const ranked = (['gzip', 'deflate'] as const).filter((e) => accepted.has(e));
  if (ranked.length === 0) return null;
  if (level === 'low') return ranked[0]!;
  if (level === 'medium') return ranked[Math.floor(ranked.length / 2)]!;
  return ranked[ranked.length - 1]!;
}

/** `framed` (a gRPC-prefixed message) compressed with `encoding`; unchanged when that would not make it smaller. */
export function compressFramed(framed: Buffer, encoding: ResponseEncoding): Buffer {
  const body = framed.subarray(PREFIX_BYTES);
  const packed = encoding === 'gzip' ? gzipSync(body) : deflateSync(body);
  if (packed.length >= body.length) return framed;
  const out = Buffer.allocUnsafe(PREFIX_BYTES + packed.length);
  out[0] = 1;
  out.writeUInt32BE(packed.length, 1);
  packed.copy(out, PREFIX_BYTES);
  return out;
}

/**
 * The `grpc-accept-encoding` of each request stream of a grpc-js server,
 * read from the request headers as its http2 servers receive them.
 */
export class AcceptedEncodings {
  private readonly byStream = new WeakMap<object, string>();

  /**
   * Listens on the server's http2 servers (call after each bind): false when
   * grpc-js keeps them where this file does not know.
   */
  watch(server: grpc.Server): boolean {
    const servers = (server as unknown as { http2Servers?: unknown }).http2Servers;
    if (!(servers instanceof Map)) return false;
    for (const h2 of servers.keys() as IterableIterator<EventEmitter & { [watched]?: true }>) {
      if (typeof h2?.prependListener !== 'function' || h2[watched] === true) continue;
      h2[watched] = true;
      h2.prependListener('stream', (stream: object, headers: Record<string, string | string[] | undefined>) => {
        const accept = headers['grpc-accept-encoding'];
        if (accept !== undefined) this.byStream.set(stream, Array.isArray(accept) ? accept.join(',') : accept);
      });
    }
    return true;
  }

  /** What the client of the base call `call` accepts (undefined: nothing said, or the call's shape is unknown). */
  of(call: grpc.ServerInterceptingCallInterface): string | undefined {
    const stream = (call as unknown as { stream?: unknown }).stream;
    return typeof stream === 'object' && stream !== null ? this.byStream.get(stream) : undefined;
  }
}

const watched = Symbol('nodetron.acceptedEncodings');

type Serialize = (value: unknown) => Buffer;
type SendMetadata = (metadata?: grpc.Metadata) => void;

/**
 * Makes the base call `call` send its messages compressed with `encoding`
 * and say so (`grpc-encoding`); false, and nothing changed, when the call
 * does not have the shape this file knows.
 */
export function compressResponses(call: grpc.ServerInterceptingCallInterface, encoding: ResponseEncoding): boolean {
  const base = call as unknown as { serializeMessage?: Serialize; sendMetadata?: SendMetadata };
  const serialize = base.serializeMessage;
  const sendMetadata = base.sendMetadata;
  if (typeof serialize !== 'function' || typeof sendMetadata !== 'function') return false;
  base.serializeMessage = function (this: unknown, value: unknown): Buffer {
    return compressFramed(serialize.call(this, value), encoding);
  };
  base.sendMetadata = function (this: unknown, metadata?: grpc.Metadata): void {
    const md = metadata?.clone() ?? new grpc.Metadata();
    md.set('grpc-encoding', encoding);
    sendMetadata.call(this, md);
  };
  return true;
}
