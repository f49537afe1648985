/**
 * gRPC side of `nodetron perf`: one grpc-js channel, ModelInfer calls whose
 * request is encoded once (protobufjs, from our proto/grpc_service.proto) and
 * whose response is kept as raw bytes, so the generator pays for framing only.
 * (A client, so it lives with the tool rather than in src/frontend/grpc/.)
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { protoDir } from '../repository/config/schema';
import type { PerfTensor } from './input-tensors';

const passthrough = (b: Buffer): Buffer => b;

const SERVICE: grpc.ServiceDefinition = {
  ModelInfer: {
    path: '/inference.GRPCInferenceService/ModelInfer',
    requestStream: false,
    responseStream: false,
    requestSerialize: passthrough,
    requestDeserialize: passthrough,
    responseSerialize: passthrough,
    responseDeserialize: passthrough,
  },
};

let requestType: protobuf.Type | undefined;
let responseType: protobuf.Type | undefined;
function types(): { req: protobuf.Type; res: protobuf.Type } {
  if (requestType === undefined || responseType === undefined) {
    const root = new protobuf.Root().loadSync(path.join(protoDir(), 'grpc_service.proto'), { keepCase: true });
    requestType = root.lookupType('inference.ModelInferRequest');
    responseType = root.lookupType('inference.ModelInferResponse');
  }
  return { req: requestType, res: responseType };
}

/** ModelInferRequest bytes with every tensor in raw_input_contents. */
export function encodeGrpcRequest(model: string, version: string, tensors: PerfTensor[]): Buffer {
  const { req } = types();
  const msg = req.fromObject({
    model_name: model,
    model_version: version,
    inputs: tensors.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape })),
    raw_input_contents: tensors.map((t) => t.bytes),
  });
  return Buffer.from(req.encode(msg).finish());
}

/** Decoded response (for the tool's one-time check of the first answer). */
export function decodeGrpcResponse(bytes: Buffer): Record<string, unknown> {
  const { res } = types();
  return res.toObject(res.decode(bytes), { longs: String }) as Record<string, unknown>;
}

type Unary = (req: Buffer, cb: (err: grpc.ServiceError | null, res?: Buffer) => void) => grpc.ClientUnaryCall;

export class GrpcConn {
  private readonly client: grpc.Client;
  private readonly call: Unary;

  constructor(address: string) {
    const Ctor = grpc.makeGenericClientConstructor(SERVICE, 'GRPCInferenceService');
    this.client = new Ctor(address, grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
    });
    this.call = (this.client as unknown as { ModelInfer: Unary }).ModelInfer.bind(this.client);
  }

  /** Resolves with the gRPC status code (0 = OK) and the raw response. */
  send(request: Buffer): Promise<{ code: number; body?: Buffer; message?: string }> {
    return new Promise((resolve) => {
      this.call(request, (err, res) => {
        if (err) resolve({ code: err.code, message: err.details });
        else resolve(res === undefined ? { code: 0 } : { code: 0, body: res });
      });
    });
  }

  close(): void {
    this.client.close();
  }
}
