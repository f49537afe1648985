/**
 * The tool's control-plane calls, over the protocol being measured as
 * perf_analyzer does: model metadata (inputs), config (max_batch_size) and
 * statistics (for the server-side split). Not on the hot path.
 */
import { frameGrpcMessage, grpcMessageType, unframeGrpcMessage } from './grpc-conn';
import { H2GrpcConn } from './h2-grpc-conn';
import type { InputInfo } from './input-tensors';

export interface ModelProbe {
  inputs(): Promise<InputInfo[]>;
  maxBatchSize(): Promise<number>;
  /** Triton's statistics JSON (`{model_stats: [...]}`). */
  stats(): Promise<unknown>;
  close(): void;
}

function modelPath(model: string, version: string): string {
  return `/v2/models/${encodeURIComponent(model)}${version ? `/versions/${version}` : ''}`;
}

async function getJson(url: string): Promise<Record<string, unknown>> {
  const res = await fetch(url, { headers: { 'Accept-Encoding': 'identity' } });
  const body = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${String(body.error ?? '')}`);
  return body;
}

export function httpProbe(base: string, model: string, version: string): ModelProbe {
  const p = base + modelPath(model, version);
  return {
    inputs: async () => ((await getJson(p)).inputs as InputInfo[]).map((i) => ({ ...i, shape: i.shape.map(Number) })),
    maxBatchSize: async () => Number((await getJson(p + '/config')).max_batch_size ?? 0),
    stats: () => getJson(p + '/stats'),
    close: () => undefined,
  };
}

/** Unary calls on the inference service, one connection per method. */
export interface GrpcUnary {
  /** `method` is the rpc (`ModelMetadata`, `RepositoryModelLoad`, ...); rejects with the gRPC message when the status is not OK. */
  call(method: string, req: object): Promise<Record<string, unknown>>;
  close(): void;
}

/**
 * Over the same raw HTTP/2 client as the load (h2-grpc-conn.ts), one
 * connection per method; messages coded by protobufjs from our proto, decoded
 * to the shape @grpc/proto-loader gives (snake_case, 64-bit as strings).
 * Also the soak bench's control client (bench/soak-churn.ts).
 */
export function grpcUnary(address: string): GrpcUnary {
  const conns = new Map<string, Promise<H2GrpcConn>>();
  return {
    call: async (method, req) => {
      const reqType = grpcMessageType(`${method}Request`);
      const resType = grpcMessageType(`${method}Response`);
      let conn = conns.get(method);
      if (conn === undefined) {
        conn = H2GrpcConn.open(address, `/inference.GRPCInferenceService/${method}`);
        conns.set(method, conn);
      }
      const bytes = Buffer.from(reqType.encode(reqType.fromObject(req)).finish());
      const reply = await (await conn).send(frameGrpcMessage(bytes), true);
      if (reply.code !== 0) throw new Error(`${method}: ${reply.message ?? `gRPC status ${reply.code}`}`);
      const msg = resType.decode(unframeGrpcMessage(reply.body ?? Buffer.alloc(0)));
      return resType.toObject(msg, { longs: String, enums: String, defaults: true, oneofs: true }) as Record<string, unknown>;
    },
    close: () => {
      for (const c of conns.values())
        void c.then(
          (x) => x.close(),
          () => undefined,
        );
    },
  };
}

export function grpcProbe(address: string, model: string, version: string): ModelProbe {
  const { call, close } = grpcUnary(address);
  const req = { name: model, version };
  return {
    inputs: async () =>
      ((await call('ModelMetadata', req)).inputs as { name: string; datatype: string; shape: string[] }[]).map((i) => ({
        name: i.name,
        datatype: i.datatype,
        shape: i.shape.map(Number),
      })),
    maxBatchSize: async () => Number(((await call('ModelConfig', req)).config as Record<string, unknown>).max_batch_size ?? 0),
    stats: () => call('ModelStatistics', req),
    close,
  };
}
