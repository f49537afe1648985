/**
 * Our protos (proto/grpc_service.proto, proto/health.proto) loaded for
 * @grpc/grpc-js. The two inference RPCs bypass protobufjs: requests are
 * decoded by infer-request-wire.ts (into proto-loader's object shape), and
 * responses are encoded by the handlers themselves (infer-response-wire.ts,
 * synchronously, while the output bytes are still in the arena), so their
 * serializers pass ready Buffers through unchanged. No request deserializer
 * throws: a message that does not parse comes to the call as a
 * MalformedRequest (malformed-request.ts, call-guard.ts).
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { protoDir } from '../../repository/config/schema';
import { readModelInferRequest, tolerantDeserializer } from './malformed-request';

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
  /** Each method path's request message type name ('/inference.GRPCInferenceService/ModelInfer' → 'ModelInferRequest'). */
  requestTypes: ReadonlyMap<string, string>;
  /** Both protos as proto-loader read them: what gRPC server reflection describes. */
  definition: protoLoader.PackageDefinition;
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
  const requestTypes = new Map<string, string>();
  const tolerant = (service: grpc.ServiceDefinition): grpc.ServiceDefinition => {
    const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
    for (const [rpc, def] of Object.entries(service)) {
      const type = requestTypeName(def, rpc);
      requestTypes.set(def.path, type);
      out[rpc] = { ...def, requestDeserialize: tolerantDeserializer(type, def.requestDeserialize) };
    }
    return out as grpc.ServiceDefinition;
  };
  const inference: Record<string, grpc.MethodDefinition<unknown, unknown>> = { ...tolerant(pkg['inference.GRPCInferenceService'] as grpc.ServiceDefinition) };
  for (const rpc of ['ModelInfer', 'ModelStreamInfer']) {
    const def = inference[rpc]!;
    const original = def.responseSerialize;
    inference[rpc] = {
      ...def,
      requestDeserialize: readModelInferRequest,
      responseSerialize: (v: unknown) => (Buffer.isBuffer(v) ? v : original(v)),
    };
  }
  cached = {
    inference: inference as grpc.ServiceDefinition,
    health: tolerant(pkg['grpc.health.v1.Health'] as grpc.ServiceDefinition),
    requestTypes,
    definition: pkg,
  };
  return cached;
}

/** The request message's name from proto-loader's method definition (its DescriptorProto), else `<rpc>Request`. */
function requestTypeName(def: grpc.MethodDefinition<unknown, unknown>, rpc: string): string {
  const name = (def as { requestType?: { type?: { name?: unknown } } }).requestType?.type?.name;
  return typeof name === 'string' && name !== '' ? name : `${rpc}Request`;
}
