/**
 * A real @grpc/grpc-js client for nodetron, built from OUR protos with
 * @grpc/proto-loader (as any Node client of Triton would): promise helpers
 * for unary rpcs and the raw bidi stream for ModelStreamInfer.
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { REPO_ROOT } from './server-process';

const PROTO_DIR = path.join(REPO_ROOT, 'proto');

export interface GrpcTestClient {
  inference: grpc.Client & Record<string, (...args: unknown[]) => unknown>;
  health: grpc.Client & Record<string, (...args: unknown[]) => unknown>;
  /** Unary call on the inference service; rejects with the ServiceError. */
  call<T = Record<string, unknown>>(rpc: string, request: object, metadata?: grpc.Metadata): Promise<T>;
  check(): Promise<{ status: string }>;
  close(): void;
}

export function createClient(port: number, credentials = grpc.credentials.createInsecure(), options: grpc.ChannelOptions = {}): GrpcTestClient {
  const pkg = protoLoader.loadSync(['grpc_service.proto', 'health.proto'], {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs: [PROTO_DIR],
  });
  const loaded = grpc.loadPackageDefinition(pkg) as unknown as {
    inference: { GRPCInferenceService: grpc.ServiceClientConstructor };
    grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
  };
  const opts = { 'grpc.max_receive_message_length': -1, 'grpc.max_send_message_length': -1, ...options };
  const target = `127.0.0.1:${port}`;
  const inference = new loaded.inference.GRPCInferenceService(target, credentials, opts) as GrpcTestClient['inference'];
  const health = new loaded.grpc.health.v1.Health(target, credentials, opts) as GrpcTestClient['health'];
  const unaryOn = <T>(client: GrpcTestClient['inference'], rpc: string, request: object, metadata = new grpc.Metadata()): Promise<T> =>
    new Promise((resolve, reject) => {
      client[rpc](request, metadata, (err: grpc.ServiceError | null, res: T) => (err ? reject(err) : resolve(res)));
    });
  return {
    inference,
    health,
    call: (rpc, request, metadata) => unaryOn(inference, rpc, request, metadata),
    check: () => unaryOn(health, 'Check', { service: '' }),
    close: () => {
      inference.close();
      health.close();
    },
  };
}

/**
 * `requests` on one ModelStreamInfer stream, which is then half-closed:
 * every reply until the server ends the stream (rejects on its error status).
 */
export async function streamAll<R>(client: GrpcTestClient, requests: readonly object[]): Promise<R[]> {
  const s = client.inference.ModelStreamInfer() as grpc.ClientDuplexStream<object, R>;
  const replies: R[] = [];
  const ended = new Promise<void>((resolve, reject) => {
    s.on('data', (r: R) => replies.push(r));
    s.on('end', resolve);
    s.on('error', reject);
  });
  for (const r of requests) s.write(r);
  s.end();
  await ended;
  return replies;
}

/** INT32 little-endian bytes of a list. */
export function int32Bytes(values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeInt32LE(v, i * 4));
  return b;
}

export function int32Values(b: Buffer | Uint8Array): number[] {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const out: number[] = [];
  for (let i = 0; i + 4 <= buf.length; i += 4) out.push(buf.readInt32LE(i));
  return out;
}
