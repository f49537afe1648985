/**
 * The tool's control-plane calls, over the protocol being measured as
 * perf_analyzer does: model metadata (inputs), config (max_batch_size) and
 * statistics (for the server-side split). Not on the hot path.
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { protoDir } from '../repository/config/schema';

export interface InputInfo {
  name: string;
  datatype: string;
  /** Metadata shape, batch dimension included for batching models (-1). */
  shape: number[];
}

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

type Call = (req: object, cb: (err: grpc.ServiceError | null, res: Record<string, unknown>) => void) => void;

export function grpcProbe(address: string, model: string, version: string): ModelProbe {
  const def = protoLoader.loadSync(path.join(protoDir(), 'grpc_service.proto'), { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
  const pkg = grpc.loadPackageDefinition(def) as unknown as { inference: { GRPCInferenceService: grpc.ServiceClientConstructor } };
  const client = new pkg.inference.GRPCInferenceService(address, grpc.credentials.createInsecure());
  const call = (method: string, req: object): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      ((client as unknown as Record<string, Call>)[method]!).call(client, req, (err, res) => {
        if (err) reject(new Error(`${method}: ${err.details}`));
        else resolve(res);
      });
    });
  const req = { name: model, version };
  return {
    inputs: async () => ((await call('ModelMetadata', req)).inputs as { name: string; datatype: string; shape: string[] }[])
      .map((i) => ({ name: i.name, datatype: i.datatype, shape: i.shape.map(Number) })),
    maxBatchSize: async () => Number(((await call('ModelConfig', req)).config as Record<string, unknown>).max_batch_size ?? 0),
    stats: () => call('ModelStatistics', req),
    close: () => client.close(),
  };
}
