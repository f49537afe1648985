/**
 * The grpc-js server interceptor that answers, with a status and a message,
 * what grpc-js would otherwise answer obscurely or not at all (the one place
 * for these grpc-js quirks):
 *
 * - Request metadata over `maxMetadataBytes` (name + value + 32 per entry,
 *   HPACK's measure, as gRPC core counts it): RESOURCE_EXHAUSTED before any
 *   handler runs. grpc-js has no limit of its own.
 * - A message that did not parse (a MalformedRequest from the tolerant
 *   deserializers, malformed-request.ts): a unary call ends INVALID_ARGUMENT
 *   here; on a stream the handler gets the marker and answers it in order.
 * - A message whose compressed bytes do not decompress: grpc-js ended the
 *   call INTERNAL 'Failed to decompress message' at once, and a stream lost
 *   every response still in flight. Here the deserializer gets a marked
 *   stand-in (malformed-request.ts), so the message is answered like one
 *   that did not parse. Other decompression refusals (an encoding grpc-js
 *   does not know, a message that decompresses past the receive limit) are
 *   left to grpc-js, which ends the call with its status.
 * - A client half-close inside a message (its 5-byte prefix or its body cut
 *   off): grpc-js drops the partial message, so a unary call saw "no request
 *   message" (UNIMPLEMENTED, naming a "server streaming method") and a
 *   stream lost the request without a word. Here a unary call ends
 *   INVALID_ARGUMENT and a stream gets a MalformedRequest before its end.
 * - A unary call that half-closes without a message, or sends a second one:
 *   INVALID_ARGUMENT (grpc-js says UNIMPLEMENTED, naming a "server
 *   streaming method").
 * - Bearer tokens (--grpc-auth-token-file): a call without the right one
 *   ends UNAUTHENTICATED before its handler hears of it.
 * - Response compression of the inference rpcs
 *   (--grpc-infer-response-compression-level, response-compression.ts),
 *   which grpc-js does not do: set up on each call it applies to.
 *
 * Two of these reach into the base call (BaseServerInterceptingCall, not
 * public API; @grpc/grpc-js 1.14): the cut-off check reads its message
 * decoder, and the decompression wraps its decompressMessage. When that
 * shape is not there they do nothing, and test/integration/grpc-fuzz.test.ts
 * fails on its cut-off and corrupt-compression cases.
 */
import { gunzipSync, inflateSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { MalformedRequest, GRPC_PREFIX_BYTES, undecompressableMessage } from './malformed-request';
import { type BearerTokens, tokenRefusal } from '../../core/bearer-tokens';
import { compressResponses, responseEncoding, type AcceptedEncodings, type CompressionLevel } from './response-compression';

/** Metadata gRPC core (Triton's server) refuses above: its default hard limit, GRPC_ARG_ABSOLUTE_MAX_METADATA_SIZE. */
export const MAX_METADATA_BYTES = 16 * 1024;

/** HPACK's per-entry overhead (RFC 7541 §4.1), which gRPC core counts too. */
const ENTRY_OVERHEAD = 32;

export interface CallGuardOptions {
  maxMetadataBytes: number;
  /** Each method path's request message type (grpc-protos.ts). */
  requestTypes: ReadonlyMap<string, string>;
  /** Told of each call the guard ends itself with its status (the access log of refused inferences). */
  onRefused?: (path: string, status: grpc.StatusObject, call: grpc.ServerInterceptingCallInterface, malformed?: MalformedRequest) => void;
  /**
   * --grpc-auth-token-file: every call's metadata must carry
   * `authorization: Bearer <token>` (core/bearer-tokens.ts), else it ends
   * UNAUTHENTICATED before any handler runs; `exempt`: method paths that need none.
   */
  auth?: { tokens: BearerTokens; exempt: ReadonlySet<string> };
  /** Compress the responses of the calls to `paths` at `level`, in an encoding the client accepts. */
  responseCompression?: { level: CompressionLevel; paths: ReadonlySet<string>; accepted: AcceptedEncodings };
}

/** Metadata size as gRPC core counts it, and its largest entry. */
export function metadataSize(md: grpc.Metadata): { bytes: number; largest: string; largestBytes: number } {
  let bytes = 0;
  let largest = '';
  let largestBytes = 0;
  const all = md.toJSON();
  for (const key in all) {
    for (const v of all[key]) {
      // Binary (-bin) values travel base64-encoded; text values are ASCII (latin1 off the wire): a char is a byte.
      const n = key.length + (typeof v === 'string' ? v.length : Math.ceil(v.length / 3) * 4) + ENTRY_OVERHEAD;
      bytes += n;
      if (n > largestBytes) {
        largestBytes = n;
        largest = key;
      }
    }
  }
  return { bytes, largest, largestBytes };
}

export function metadataTooLargeText(size: { bytes: number; largest: string; largestBytes: number }, limit: number): string {
  return (
    `received metadata size exceeds hard limit (${size.bytes} vs. ${limit}): request metadata (headers) is counted as ` +
    `name + value + 32 bytes per entry, and the largest entry is '${size.largest}' (${size.largestBytes} bytes); send less metadata`
  );
}

/** Where grpc-js's decoder stands: undefined when its shape is not the one this file knows. */
export interface DecoderView {
  readState: number;
  readSizeRemaining: number;
  readMessageSize: number;
  readMessageRemaining: number;
}

const NO_DATA = 0;
const READING_SIZE = 1;

function decoderOf(call: grpc.ServerInterceptingCallInterface): DecoderView | undefined {
  const d = (call as unknown as { decoder?: Partial<DecoderView> }).decoder;
  if (d === undefined || d === null) return undefined;
  const { readState, readSizeRemaining, readMessageSize, readMessageRemaining } = d;
  if (typeof readState !== 'number' || typeof readSizeRemaining !== 'number' || typeof readMessageSize !== 'number' || typeof readMessageRemaining !== 'number')
    return undefined;
  return { readState, readSizeRemaining, readMessageSize, readMessageRemaining };
}

/** The message the stream ended inside, if it ended inside one. */
export function cutOffMessage(type: string, d: DecoderView | undefined): MalformedRequest | undefined {
  if (d === undefined || d.readState === NO_DATA) return undefined;
  if (d.readState === READING_SIZE) {
    // The flag byte was read on entering READING_SIZE; then 4 - remaining of the length bytes.
    return MalformedRequest.cutOff(type, 1 + (GRPC_PREFIX_BYTES - 1 - d.readSizeRemaining), 0, 0);
  }
  return MalformedRequest.cutOff(type, GRPC_PREFIX_BYTES, d.readMessageSize, d.readMessageSize - d.readMessageRemaining);
}

type Decompress = (message: Buffer, encoding: string) => Buffer | Promise<Buffer>;

/**
 * Makes the base call's failed decompressions (grpc-js rejects with INTERNAL)
 * resolve to a marked stand-in instead, naming zlib's reason. A no-op when
 * the base call has no decompressMessage.
 */
function answerFailedDecompression(call: grpc.ServerInterceptingCallInterface, type: string): void {
  const base = call as unknown as { decompressMessage?: Decompress };
  const original = base.decompressMessage;
  if (typeof original !== 'function') return;
  base.decompressMessage = function (this: unknown, message: Buffer, encoding: string) {
    const out = original.call(this, message, encoding);
    if (!(out instanceof Promise)) return out;
    return out.catch((err: { code?: number }) => {
      if (err?.code !== grpc.status.INTERNAL) throw err;
      return undecompressableMessage(MalformedRequest.undecompressable(type, encoding, message.length - GRPC_PREFIX_BYTES, zlibReason(message, encoding)));
    });
  };
}

/** What zlib says about a message that did not decompress (only run once grpc-js's own attempt failed). */
function zlibReason(message: Buffer, encoding: string): string {
  try {
    const body = message.subarray(GRPC_PREFIX_BYTES);
    if (encoding === 'gzip') gunzipSync(body, { maxOutputLength: 1 << 20 });
    else inflateSync(body, { maxOutputLength: 1 << 20 });
  } catch (err) {
    // Past the first MiB zlib is not asked again: the reason would be the cap, not the data.
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') return 'its data breaks off after the first MiB';
    return (err as Error).message;
  }
  return 'it does not decompress';
}

export function callGuard(opts: CallGuardOptions): grpc.ServerInterceptor {
  return (method, next) => new GuardedCall(method, next, opts);
}

class GuardedCall extends grpc.ServerInterceptingCall {
  private ended = false;
  private messages = 0;
  private readonly type: string;

  constructor(
    private readonly method: grpc.ServerMethodDefinition<unknown, unknown>,
    private readonly inner: grpc.ServerInterceptingCallInterface,
    private readonly opts: CallGuardOptions,
  ) {
    super(inner);
    this.type = opts.requestTypes.get(method.path) ?? 'request';
    answerFailedDecompression(inner, this.type);
    const rc = opts.responseCompression;
    if (rc !== undefined && rc.paths.has(method.path)) {
      const encoding = responseEncoding(rc.level, rc.accepted.of(inner));
      if (encoding !== null) compressResponses(inner, encoding);
    }
  }

  override start(listener: Parameters<grpc.ServerInterceptingCallInterface['start']>[0]): void {
    this.inner.start({
      onReceiveMetadata: (md) => {
        const size = metadataSize(md);
        if (size.bytes > this.opts.maxMetadataBytes) {
          return this.refuse(grpc.status.RESOURCE_EXHAUSTED, metadataTooLargeText(size, this.opts.maxMetadataBytes));
        }
        const auth = this.opts.auth;
        if (auth !== undefined && !auth.exempt.has(this.method.path)) {
          const value = md.get('authorization')[0];
          const check = auth.tokens.check(typeof value === 'string' ? value : '');
          if (check !== 'ok') return this.refuse(grpc.status.UNAUTHENTICATED, tokenRefusal(check, '--grpc-auth-token-file', 'metadata'));
        }
        listener.onReceiveMetadata(md);
      },
      onReceiveMessage: (msg: unknown) => {
        if (this.ended) return;
        this.messages++;
        if (!this.method.requestStream) {
          if (msg instanceof MalformedRequest) return this.refuse(grpc.status.INVALID_ARGUMENT, msg.message, msg);
          if (this.messages > 1) {
            const extra = MalformedRequest.extra(this.rpc(), this.type);
            return this.refuse(grpc.status.INVALID_ARGUMENT, extra.message, extra);
          }
        }
        listener.onReceiveMessage(msg);
      },
      onReceiveHalfClose: () => {
        if (this.ended) return;
        const cut = cutOffMessage(this.type, decoderOf(this.inner));
        if (!this.method.requestStream) {
          if (cut !== undefined) return this.refuse(grpc.status.INVALID_ARGUMENT, cut.message, cut);
          if (this.messages === 0) {
            const missing = MalformedRequest.missing(this.rpc(), this.type);
            return this.refuse(grpc.status.INVALID_ARGUMENT, missing.message, missing);
          }
        } else if (cut !== undefined) {
          listener.onReceiveMessage(cut);
        }
        listener.onReceiveHalfClose();
      },
      onCancel: () => listener.onCancel(),
    });
  }

  private rpc(): string {
    return this.method.path.slice(this.method.path.lastIndexOf('/') + 1);
  }

  /** Ends the call with `code` before (or instead of) its handler; later events are dropped. */
  private refuse(code: grpc.status, details: string, malformed?: MalformedRequest): void {
    if (this.ended) return;
    this.ended = true;
    const status: grpc.StatusObject = { code, details, metadata: new grpc.Metadata() };
    this.opts.onRefused?.(this.method.path, status, this.inner, malformed);
    this.inner.sendStatus(status);
  }
}
