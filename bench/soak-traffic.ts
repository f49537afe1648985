/**
 * The soak's steady traffic (bench/soak.ts): one open-loop stream per
 * protocol and steady model, paced by the perf tool's open loop
 * (src/perf/load-driver.ts `openLoop`) over its lean clients (HttpConn,
 * H2GrpcConn), every answer checked against the expected outputs. Each
 * sender owns one connection; a request not answered within `timeoutMs` is a
 * failure and its connection is dropped, so the stream always ends. A
 * connection idle for a few seconds is reopened before use: uWS closes idle
 * keep-alive connections after ~10 s, and a send racing that close would be
 * the client's failure, not the server's.
 */
import { buildInferBody } from '../src/client/kserve-http-client';
import { decodeGrpcResponse, encodeGrpcRequest, frameGrpcMessage, MODEL_INFER_PATH, unframeGrpcMessage } from '../src/perf/grpc-conn';
import { H2GrpcConn } from '../src/perf/h2-grpc-conn';
import { buildHttpRequest, HttpConn } from '../src/perf/http-conn';
import type { PerfTensor } from '../src/perf/input-tensors';
import { openLoop, SenderPool, type Sender, type Transport } from '../src/perf/load-driver';
import { percentile } from '../src/perf/perf-math';

export type Protocol = 'http' | 'grpc';

/** A model the soak keeps busy: its request tensors and the outputs it must answer. */
export interface SteadyModel {
  name: string;
  inputs: PerfTensor[];
  expected: Record<string, number[]>;
}

function tensor(name: string, datatype: 'INT32' | 'FP32', shape: number[], values: number[]): PerfTensor {
  const bytes = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => (datatype === 'INT32' ? bytes.writeInt32LE(v, i * 4) : bytes.writeFloatLE(v, i * 4)));
  return { name, datatype, shape, values, bytes };
}

const ramp = Array.from({ length: 16 }, (_, i) => i);

/** `simple` (ONNX, model_repository/): OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 − INPUT1. */
export const SIMPLE: SteadyModel = {
  name: 'simple',
  inputs: [
    tensor('INPUT0', 'INT32', [1, 16], ramp),
    tensor(
      'INPUT1',
      'INT32',
      [1, 16],
      ramp.map(() => 1),
    ),
  ],
  expected: { OUTPUT0: ramp.map((i) => i + 1), OUTPUT1: ramp.map((i) => i - 1) },
};

/** `add_sub` (Python, test/integration/fixtures/python_models/): the same sums over FP32 [4]. */
export const ADD_SUB: SteadyModel = {
  name: 'add_sub',
  inputs: [tensor('INPUT0', 'FP32', [4], [1, 2, 3, 4]), tensor('INPUT1', 'FP32', [4], [10, 20, 30, 40])],
  expected: { OUTPUT0: [11, 22, 33, 44], OUTPUT1: [-9, -18, -27, -36] },
};

/** What is wrong with the outputs answered, or undefined when they are the expected ones. */
export function outputsProblem(model: SteadyModel, got: Map<string, number[]>): string | undefined {
  for (const [name, want] of Object.entries(model.expected)) {
    const have = got.get(name);
    if (have === undefined) return `${model.name}: output ${name} is missing (got ${[...got.keys()].join(', ') || 'none'})`;
    if (have.length !== want.length || have.some((v, i) => v !== want[i])) return `${model.name}: ${name} is [${have.join(',')}], expected [${want.join(',')}]`;
  }
  return undefined;
}

function httpOutputs(body: Buffer): Map<string, number[]> {
  const j = JSON.parse(body.toString('utf8')) as { outputs?: { name: string; data: number[] }[] };
  return new Map((j.outputs ?? []).map((o) => [o.name, o.data]));
}

function grpcOutputs(body: Buffer): Map<string, number[]> {
  const r = decodeGrpcResponse(unframeGrpcMessage(body)) as { outputs?: { name: string; datatype: string }[]; raw_output_contents?: Uint8Array[] };
  const out = new Map<string, number[]>();
  (r.outputs ?? []).forEach((o, k) => {
    const raw = r.raw_output_contents?.[k] ?? new Uint8Array(0);
    const b = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    const values: number[] = [];
    for (let i = 0; i + 4 <= b.length; i += 4) values.push(o.datatype === 'FP32' ? b.readFloatLE(i) : b.readInt32LE(i));
    out.set(o.name, values);
  });
  return out;
}

/** One connection's worth of a protocol: open, send the prebuilt request, say what went wrong (undefined: a right answer). */
interface Conn {
  attempt(): Promise<string | undefined>;
  close(): void;
}

async function openConn(protocol: Protocol, port: number, model: SteadyModel): Promise<Conn> {
  if (protocol === 'http') {
    const { body } = buildInferBody(model.inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape, data: t.values })));
    const request = buildHttpRequest(`127.0.0.1:${port}`, `/v2/models/${model.name}/infer`, { 'Content-Type': 'application/json' }, body);
    const c = await HttpConn.open('127.0.0.1', port);
    return {
      attempt: async () => {
        const r = await c.send(request, true);
        const text = r.body ?? Buffer.alloc(0);
        if (r.status !== 200) return `HTTP ${r.status}: ${text.toString('utf8').slice(0, 300)}`;
        return outputsProblem(model, httpOutputs(text));
      },
      close: () => c.close(),
    };
  }
  const request = frameGrpcMessage(encodeGrpcRequest(model.name, '', model.inputs));
  const c = await H2GrpcConn.open(`127.0.0.1:${port}`, MODEL_INFER_PATH);
  return {
    attempt: async () => {
      const r = await c.send(request, true);
      if (r.code !== 0) return `gRPC status ${r.code}: ${(r.message ?? '').slice(0, 300)}`;
      return outputsProblem(model, grpcOutputs(r.body!));
    },
    close: () => c.close(),
  };
}

/** A connection idle this long is reopened before its next request (uWS's idle timeout is ~10 s). */
const REOPEN_IDLE_MS = 4000;

export interface IntervalStats {
  ok: number;
  failed: number;
  /** Every request completed in the interval, failed ones included. */
  latenciesMs: number[];
}

/** Several streams' intervals as one: counts summed, p50 and p99 over all their latencies. */
export function mergeIntervals(parts: IntervalStats[]): { ok: number; failed: number; p50Ms: number; p99Ms: number } {
  const sorted = Float64Array.from(parts.flatMap((p) => p.latenciesMs)).sort();
  return {
    ok: parts.reduce((n, p) => n + p.ok, 0),
    failed: parts.reduce((n, p) => n + p.failed, 0),
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
  };
}

/** One protocol × model stream at a fixed rate: counts, failures (the first few, timestamped) and per-interval latencies. */
export class SteadyStream {
  ok = 0;
  failed = 0;
  /** Sends that found no idle connection and waited (the open loop's backlog). */
  delayed = 0;
  readonly failures: string[] = [];
  private latenciesMs: number[] = [];
  private intervalFailed = 0;
  private running = false;
  private loop: Promise<void> | undefined;
  private readonly conns = new Set<Conn>();

  constructor(
    readonly protocol: Protocol,
    readonly model: SteadyModel,
    readonly rate: number,
    private readonly port: number,
    private readonly timeoutMs: number,
    private readonly maxConnections: number,
  ) {}

  get label(): string {
    return `${this.protocol} ${this.model.name}`;
  }

  start(): void {
    if (this.loop !== undefined || this.rate <= 0) return;
    this.running = true;
    const timed = async (s: Sender): Promise<void> => {
      const t0 = performance.now();
      const ok = await s.send();
      this.latenciesMs.push(performance.now() - t0);
      if (ok) this.ok++;
      else {
        this.failed++;
        this.intervalFailed++;
      }
    };
    const pool = new SenderPool(this.transport());
    this.loop = openLoop(
      pool,
      { value: this.rate, maxConnections: this.maxConnections },
      () => this.running,
      timed,
      () => this.delayed++,
    );
  }

  /** Stops sending, waits for the requests in flight (each bounded by the timeout) and closes the connections. */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    this.loop = undefined;
    for (const c of this.conns) c.close();
    this.conns.clear();
  }

  /** Counts and latencies since the previous call. */
  takeInterval(): IntervalStats {
    const stats = { ok: this.latenciesMs.length - this.intervalFailed, failed: this.intervalFailed, latenciesMs: this.latenciesMs };
    this.latenciesMs = [];
    this.intervalFailed = 0;
    return stats;
  }

  private fail(what: string): void {
    if (this.failures.length < 20) this.failures.push(`${new Date().toISOString()} ${this.label}: ${what}`);
  }

  private transport(): Transport {
    return {
      open: () => Promise.resolve(this.sender()),
      close: () => undefined,
    };
  }

  /** A sender with its own connection, opened on first use and again after a failure or an idle spell. */
  private sender(): Sender {
    let conn: Conn | undefined;
    let lastUsed = 0;
    const drop = (): void => {
      if (conn === undefined) return;
      conn.close();
      this.conns.delete(conn);
      conn = undefined;
    };
    return {
      send: async () => {
        if (conn !== undefined && performance.now() - lastUsed > REOPEN_IDLE_MS) drop();
        let problem: string | undefined;
        let timer: NodeJS.Timeout | undefined;
        try {
          if (conn === undefined) {
            conn = await openConn(this.protocol, this.port, this.model);
            this.conns.add(conn);
          }
          const c = conn;
          const timeout = new Promise<string>((resolve) => {
            timer = setTimeout(() => resolve(`no answer within ${this.timeoutMs} ms (connection dropped)`), this.timeoutMs);
          });
          problem = await Promise.race([c.attempt(), timeout]);
        } catch (err) {
          problem = `connection failed: ${(err as Error).message}`;
        } finally {
          clearTimeout(timer);
        }
        lastUsed = performance.now();
        if (problem === undefined) return true;
        this.fail(problem);
        drop();
        return false;
      },
    };
  }
}
