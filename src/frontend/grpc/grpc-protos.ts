/**
 * Our protos (proto/grpc_service.proto, proto/health.proto) loaded for
 * @grpc/grpc-js. The two inference RPCs bypass protobufjs: requests are
 * decoded by infer-request-wire.ts (into proto-loader's object shape), and
 * responses are encoded by the handlers themselves (infer-response-wire.ts,
 * synchronously, while the output bytes are still in the arena), so their
 * serializers pass ready Buffers through unchanged.
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { protoDir } from '../../repository/config/schema';
import { decodeModelInferRequestBytes } from './infer-request-wire';

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
    inference[rpc] = {
      ...def,
      requestDeserialize: decodeModelInferRequestBytes,
      responseSerialize: (v: unknown) => (Buffer.isBuffer(v) ? v : original(v)),
    };
  }
  cached = {
    inference,
    health: pkg['grpc.health.v1.Health'] as grpc.ServiceDefinition,
  };
  return cached;
}
