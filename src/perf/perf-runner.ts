/**
 * `nodetron perf` as a library: probe the model, build the request once,
 * check one answer, then sweep the concurrency or request-rate range. The
 * bench (bench/side-by-side.ts) and the tests call `runPerf` directly.
 */
import { buildInferBody } from '../client/kserve-http-client';
import { decodeGrpcResponse, encodeGrpcRequest, frameGrpcMessage, MODEL_INFER_PATH, unframeGrpcMessage } from './grpc-conn';
import { H2GrpcConn } from './h2-grpc-conn';
import { HttpConn, buildHttpRequest } from './http-conn';
import { buildTensors, type PerfTensor } from './input-tensors';
import { runStep, SenderPool, type StepResult, type Transport } from './load-driver';
import { grpcProbe, httpProbe, type ModelProbe } from './model-probe';
import { rangeSteps, type PerfOptions } from './perf-options';
import { stepLine, windowLine } from './report';

/** host and port from `host:port` or `http://host:port`. */
export function splitUrl(url: string): { host: string; port: number } {
  const u = new URL(/^[a-z]+:\/\//i.test(url) ? url : `http://${url}`);
  return { host: u.hostname, port: Number(u.port || 80) };
}

function modelPath(o: PerfOptions): string {
  return `/v2/models/${encodeURIComponent(o.model)}${o.version ? `/versions/${o.version}` : ''}/infer`;
}

/** The HTTP request bytes: JSON tensors or the binary tensor extension. */
export function httpRequestBytes(o: PerfOptions, tensors: PerfTensor[]): Buffer {
  const { host, port } = splitUrl(o.url);
  const { body, headerLength } = buildInferBody(
    tensors.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape, data: o.inputFormat === 'binary' ? t.bytes : t.values })),
    { binaryDataOutput: o.outputFormat === 'binary' },
  );
  const headers: Record<string, string> = { 'Content-Type': headerLength === undefined ? 'application/json' : 'application/octet-stream' };
  if (headerLength !== undefined) headers['Inference-Header-Content-Length'] = String(headerLength);
  return buildHttpRequest(`${host}:${port}`, modelPath(o), headers, body);
}

export async function httpTransport(o: PerfOptions, tensors: PerfTensor[]): Promise<Transport> {
  const { host, port } = splitUrl(o.url);
  const request = httpRequestBytes(o, tensors);
  const conns: HttpConn[] = [];
  const probe = await HttpConn.open(host, port);
  const first = await probe.send(request, true);
  probe.close();
  if (first.status !== 200) throw new Error(`first inference failed: HTTP ${first.status} ${first.body?.toString('utf8').slice(0, 500) ?? ''}`);
  return {
    open: async () => {
      let c = await HttpConn.open(host, port);
      conns.push(c);
      return {
        send: async () => {
          // A connection the server closed while it idled (between steps, or while tune reloads a model) is opened again.
          if (c.closed) {
            c = await HttpConn.open(host, port);
            conns.push(c);
          }
          return (await c.send(request)).status === 200;
        },
      };
    },
    close: () => conns.forEach((c) => c.close()),
  };
}

/** Concurrent calls per HTTP/2 connection; more concurrency opens more connections. */
const GRPC_STREAMS_PER_CONN = 32;

async function grpcTransport(o: PerfOptions, tensors: PerfTensor[]): Promise<Transport> {
  const address = o.url.replace(/^[a-z]+:\/\//i, '');
  const request = frameGrpcMessage(encodeGrpcRequest(o.model, o.version, tensors));
  const probe = await H2GrpcConn.open(address, MODEL_INFER_PATH);
  const first = await probe.send(request, true);
  try {
    if (first.code !== 0) throw new Error(`first inference failed: gRPC status ${first.code} ${first.message ?? ''}`);
    try {
      decodeGrpcResponse(unframeGrpcMessage(first.body!));
    } catch (err) {
      throw new Error(`first inference: the response does not decode as a ModelInferResponse: ${(err as Error).message}`);
    }
  } catch (err) {
    probe.close();
    throw err;
  }
  // Opened on demand (the open loop may open senders concurrently, so connections are kept as promises).
  const conns: Promise<H2GrpcConn>[] = [Promise.resolve(probe)];
  let senders = 0;
  return {
    open: async () => {
      const k = Math.floor(senders++ / GRPC_STREAMS_PER_CONN);
      while (conns.length <= k) conns.push(H2GrpcConn.open(address, MODEL_INFER_PATH));
      const conn = await conns[k];
      return { send: async () => (await conn.send(request)).code === 0 };
    },
    close: () =>
      conns.forEach(
        (c) =>
          void c.then(
            (conn) => conn.close(),
            () => undefined,
          ),
      ),
  };
}

export interface PerfRun {
  tensors: PerfTensor[];
  results: StepResult[];
}

/** `tensors` skips the metadata probe and `stats: false` the statistics (peers that have neither). */
export interface PerfPreset {
  tensors?: PerfTensor[];
  stats?: boolean;
}

export async function runPerf(o: PerfOptions, log: (line: string) => void = () => undefined, preset: PerfPreset = {}): Promise<PerfRun> {
  const probe: ModelProbe =
    o.protocol === 'grpc'
      ? grpcProbe(o.url.replace(/^[a-z]+:\/\//i, ''), o.model, o.version)
      : httpProbe(`http://${splitUrl(o.url).host}:${splitUrl(o.url).port}`, o.model, o.version);
  let transport: Transport | undefined;
  try {
    const tensors = preset.tensors ?? buildTensors(await probe.inputs(), await probe.maxBatchSize(), o);
    transport = o.protocol === 'grpc' ? await grpcTransport(o, tensors) : await httpTransport(o, tensors);
    const pool = new SenderPool(transport);
    const mode = o.requestRate !== undefined ? 'rate' : 'concurrency';
    const steps = rangeSteps(o.requestRate ?? o.concurrency!);
    const results: StepResult[] = [];
    for (const value of steps) {
      const r = await runStep(
        pool,
        {
          mode,
          value,
          intervalMs: o.measurementIntervalMs,
          stabilityPct: o.stabilityPercentage,
          maxTrials: o.maxTrials,
          percentile: o.percentile,
          batchSize: o.batchSize,
          maxConnections: o.maxConnections,
          windowRequests: o.windowRequests,
          onWindow: o.verbose ? (w, i) => log(windowLine(w, i, o.batchSize)) : undefined,
        },
        preset.stats === false ? undefined : () => probe.stats(),
        o.model,
      );
      results.push(r);
      log(`${stepLine(r)}`);
      const latencyUs = r.latency.reportUs;
      if (o.latencyThresholdMs !== undefined && latencyUs > o.latencyThresholdMs * 1000) {
        log(`latency ${(latencyUs / 1000).toFixed(3)} ms is over --latency-threshold ${o.latencyThresholdMs} ms: stopping the sweep`);
        break;
      }
    }
    return { tensors, results };
  } finally {
    transport?.close();
    probe.close();
  }
}
