/**
 * Our protos (proto/grpc_service.proto, proto/health.proto) loaded for
 * @grpc/grpc-js. The inference responses are encoded by the handlers
 * themselves (protobufjs, synchronously, while the output bytes are still in
 * the arena), so their serializers pass ready Buffers through unchanged.
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { protoDir } from '../../repository/config/schema';

export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

export interface Protos {
  inference: grpc.ServiceDefinition;
  health: grpc.ServiceDefinition;
  /** protobufjs types for the messages the handlers encode themselves. */
  modelInferResponse: protobuf.Type;
  modelStreamInferResponse: protobuf.Type;
}

let cached: Protos | undefined;

export function grpcServiceProtoPath(): string {
  return path.join(protoDir(), 'grpc_service.proto');
}

export function healthProtoPath(): string {
  return path.join(protoDir(), 'health.proto');
}

export function loadProtos(): Protos {
  if (cached !== undefined) return cached;
  const pkg = protoLoader.loadSync([grpcServiceProtoPath(), healthProtoPath()], { ...LOADER_OPTIONS, includeDirs: [protoDir()] });
  const inference = { ...(pkg['inference.GRPCInferenceService'] as grpc.ServiceDefinition) };
  for (const rpc of ['ModelInfer', 'ModelStreamInfer']) {
    const def = inference[rpc]!;
    const original = def.responseSerialize;
    inference[rpc] = { ...def, responseSerialize: (v: unknown) => (Buffer.isBuffer(v) ? v : original(v)) };
  }
  const root = new protobuf.Root();
  root.loadSync(grpcServiceProtoPath(), { keepCase: true });
  root.resolveAll();
  cached = {
    inference,
    health: pkg['grpc.health.v1.Health'] as grpc.ServiceDefinition,
    modelInferResponse: root.lookupType('inference.ModelInferResponse'),
    modelStreamInferResponse: root.lookupType('inference.ModelStreamInferResponse'),
  };
  return cached;
}

/** protobufjs encoding of a message object (64-bit fields may be numbers or decimal strings). */
export function encodeMessage(type: protobuf.Type, obj: object): Buffer {
  const bytes = type.encode(type.fromObject(obj as Record<string, unknown>)).finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
