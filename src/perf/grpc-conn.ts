/**
 * gRPC messages of `nodetron perf`, lean like perf_analyzer's C++ client: the
 * ModelInferRequest is encoded and framed once (5-byte gRPC prefix) and sent
 * as is on every call (h2-grpc-conn.ts); replies are only counted, and the
 * first one is decoded once as a check. Metadata and statistics use the same
 * client (model-probe.ts); they are not on the hot path.
 * (A client, so it lives with the tool rather than in src/frontend/grpc/.)
 */
import path from 'node:path';
import protobuf from 'protobufjs';
import { protoDir } from '../repository/config/schema';
import type { PerfTensor } from './input-tensors';

export const MODEL_INFER_PATH = '/inference.GRPCInferenceService/ModelInfer';

let root: protobuf.Root | undefined;
/** A message type of our proto/grpc_service.proto (`ModelInferRequest`, ...), loaded once. */
export function grpcMessageType(name: string): protobuf.Type {
  root ??= new protobuf.Root().loadSync(path.join(protoDir(), 'grpc_service.proto'), { keepCase: true });
  return root.lookupType(`inference.${name}`);
}

/** ModelInferRequest bytes with every tensor in raw_input_contents. */
export function encodeGrpcRequest(model: string, version: string, tensors: PerfTensor[]): Buffer {
  const req = grpcMessageType('ModelInferRequest');
  const msg = req.fromObject({
    model_name: model,
    model_version: version,
    inputs: tensors.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape })),
    raw_input_contents: tensors.map((t) => t.bytes),
  });
  return Buffer.from(req.encode(msg).finish());
}

/** One length-prefixed gRPC message (uncompressed). */
export function frameGrpcMessage(message: Buffer): Buffer {
  const framed = Buffer.allocUnsafe(5 + message.length);
  framed[0] = 0;
  framed.writeUInt32BE(message.length, 1);
  message.copy(framed, 5);
  return framed;
}

/** The message of a one-message gRPC body (the response of a unary call). */
export function unframeGrpcMessage(body: Buffer): Buffer {
  if (body.length < 5) throw new Error(`gRPC response body of ${body.length} bytes has no message`);
  if (body[0] !== 0) throw new Error('gRPC response is compressed; the perf client does not decompress');
  const n = body.readUInt32BE(1);
  if (body.length !== 5 + n) throw new Error(`gRPC response body is ${body.length} bytes, its prefix says ${5 + n}`);
  return body.subarray(5);
}

/** Decoded response (for the tool's one-time check of the first answer). */
export function decodeGrpcResponse(bytes: Buffer): Record<string, unknown> {
  const res = grpcMessageType('ModelInferResponse');
  return res.toObject(res.decode(bytes), { longs: String }) as Record<string, unknown>;
}

export interface GrpcReply {
  /** gRPC status (0 = OK). */
  code: number;
  message?: string;
  /** The whole response body (prefix included), only when asked for. */
  body?: Buffer;
}
