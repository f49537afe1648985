/**
 * A request message that could not be read, handed to the call in place of
 * the decoded message. Every request deserializer of our services returns
 * one instead of throwing: grpc-js answers a throwing deserializer with
 * INTERNAL 'Error deserializing request', which names nothing, and on a
 * ModelStreamInfer stream it ends the call at once, losing the responses of
 * the requests still in flight. With the marker, call-guard.ts answers a
 * unary call INVALID_ARGUMENT, and the stream handler answers the message in
 * its place in the stream (infer-handlers.ts).
 *
 * The ways a request is malformed, each with its own text: its protobuf
 * does not parse, its compressed bytes do not decompress (call-guard.ts
 * hands the deserializer an empty Buffer marked with why, `undecompressable`),
 * the stream ended inside its gRPC length prefix or body (call-guard.ts sees
 * that at half-close), or a unary call ended with no message at all, or sent
 * a second one.
 */
import { ServerError } from '../../core/errors';
import { decodeModelInferRequestBytes, emptyModelInferRequest } from './infer-request-wire';
import type { ModelInferRequestMsg } from './proto-types';

/** gRPC's message prefix: a compressed flag, then the length as 4 bytes big-endian. */
export const GRPC_PREFIX_BYTES = 5;

/** Stand-ins for messages that did not decompress, each with its MalformedRequest (call-guard.ts makes them). */
const undecompressable = new WeakMap<Buffer, MalformedRequest>();

/** An empty Buffer that the deserializers below turn into `m`. */
export function undecompressableMessage(m: MalformedRequest): Buffer {
  const stand = Buffer.alloc(0);
  undecompressable.set(stand, m);
  return stand;
}

export class MalformedRequest {
  private constructor(
    /** The whole error text (the call's status details, or the stream response's error_message). */
    readonly message: string,
    /** The request id, when it was read before the bad byte ('' otherwise). */
    readonly id: string,
    /** The model name, when it was read before the bad byte ('' otherwise). */
    readonly model: string,
    /** Bytes of the message that came. */
    readonly byteLength: number,
  ) {}

  /** The error to answer with: INVALID_ARG (gRPC INVALID_ARGUMENT). */
  error(): ServerError {
    return new ServerError('INVALID_ARG', this.message);
  }

  /** A message whose protobuf does not parse; `partial` holds the fields read before `err`. */
  static unparseable(type: string, byteLength: number, err: unknown, partial?: ModelInferRequestMsg): MalformedRequest {
    const reason = err instanceof Error ? err.message : String(err);
    const id = partial?.id ?? '';
    const model = partial?.model_name ?? '';
    const prefix = id !== '' ? `[request id: ${id}] ` : '';
    const forModel = model !== '' ? ` for model '${model}'` : '';
    return new MalformedRequest(
      `${prefix}unable to parse the ${type} message (${byteLength} bytes)${forModel}: ${reason}. ` +
        `Send a ${type} serialized from Triton's grpc_service.proto`,
      id,
      model,
      byteLength,
    );
  }

  /** A message whose compressed bytes (`grpc-encoding`) do not decompress. */
  static undecompressable(type: string, encoding: string, byteLength: number, reason: string): MalformedRequest {
    return new MalformedRequest(
      `unable to decompress the ${type} message (${byteLength} bytes, grpc-encoding ${encoding}): ${reason}. ` +
        `Send it compressed with the encoding the call's grpc-encoding header names, or uncompressed (compressed flag 0)`,
      '',
      '',
      byteLength,
    );
  }

  /**
   * The request stream ended (client half-close) inside a message:
   * `prefixBytes` of its 5-byte prefix came, and when the prefix was whole,
   * `received` of the `declared` body bytes.
   */
  static cutOff(type: string, prefixBytes: number, declared: number, received: number): MalformedRequest {
    const what =
      prefixBytes < GRPC_PREFIX_BYTES
        ? `inside the 5-byte gRPC prefix of a ${type} message (${prefixBytes} of its bytes came)`
        : `inside a ${type} message: its gRPC prefix declares ${declared} bytes, ${received} came`;
    return new MalformedRequest(
      `the request stream ended ${what}. Send each message whole: the 5-byte prefix ` +
        '(compressed flag, then the length as 4 bytes big-endian) and then exactly that many bytes',
      '',
      '',
      prefixBytes < GRPC_PREFIX_BYTES ? prefixBytes : received,
    );
  }

  /** A unary call that half-closed without sending its one request message. */
  static missing(rpc: string, type: string): MalformedRequest {
    return new MalformedRequest(`${rpc} received no request message: a unary call carries exactly one ${type} message`, '', '', 0);
  }

  /** A unary call that sent a second request message. */
  static extra(rpc: string, type: string): MalformedRequest {
    return new MalformedRequest(`${rpc} received a second request message: a unary call carries exactly one ${type} message`, '', '', 0);
  }
}

/** The deserializer of ModelInfer and ModelStreamInfer: the decoded request, or why it could not be read. */
export function readModelInferRequest(buf: Buffer): ModelInferRequestMsg | MalformedRequest {
  if (buf.length === 0) {
    const m = undecompressable.get(buf);
    if (m !== undefined) return m;
  }
  const msg = emptyModelInferRequest();
  try {
    return decodeModelInferRequestBytes(buf, msg);
  } catch (err) {
    return MalformedRequest.unparseable('ModelInferRequest', buf.length, err, msg);
  }
}

/** Any other rpc's deserializer (protobufjs), returning a MalformedRequest instead of throwing. */
export function tolerantDeserializer(type: string, deserialize: (buf: Buffer) => unknown): (buf: Buffer) => unknown {
  return (buf) => {
    if (buf.length === 0) {
      const m = undecompressable.get(buf);
      if (m !== undefined) return m;
    }
    try {
      return deserialize(buf);
    } catch (err) {
      return MalformedRequest.unparseable(type, buf.length, err);
    }
  };
}
