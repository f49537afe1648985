/**
 * The soak's churn (bench/soak.ts): every `everyMs` a Python model is loaded
 * over the repository API, inferred once (the answer checked), and unloaded,
 * so a stub process, its host thread and its /dev/shm regions come and go
 * beside the steady traffic. Cycles alternate between HTTP and gRPC for all
 * three calls, so both frontends' control paths churn. Each call is bounded
 * in time; a failed load is still followed by an unload.
 */
import { grpcUnary, type GrpcUnary } from '../src/perf/model-probe';

/** The churn model's request and answer (model_repository/add_vectors: OUTPUT = INPUT0 + INPUT1, FP32). */
const INPUT0 = [1, 2, 3, 4];
const INPUT1 = [10, 20, 30, 40];
const EXPECTED = [11, 22, 33, 44];

/** How long one repository or inference call may take before the cycle counts it as failed. */
const CALL_TIMEOUT_MS = 60_000;

function fp32(values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeFloatLE(v, i * 4));
  return b;
}

function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${CALL_TIMEOUT_MS} ms`)), CALL_TIMEOUT_MS);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export interface ChurnStats {
  cycles: number;
  /** Cycles with any failed call. */
  failedCycles: number;
  /** The first few failures, timestamped. */
  failures: string[];
  /** Milliseconds of each successful load and unload call. */
  loadMs: number[];
  unloadMs: number[];
}

export class ChurnLoop {
  readonly stats: ChurnStats = { cycles: 0, failedCycles: 0, failures: [], loadMs: [], unloadMs: [] };
  /** True from the start of a cycle's load until its unload answered. */
  loaded = false;
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private grpc: GrpcUnary | undefined;

  constructor(
    private readonly httpUrl: string,
    private readonly grpcAddress: string,
    readonly model: string,
    private readonly everyMs: number,
  ) {}

  start(): void {
    if (this.loop !== undefined) return;
    this.running = true;
    this.grpc ??= grpcUnary(this.grpcAddress);
    this.loop = (async () => {
      while (this.running) {
        const next = Date.now() + this.everyMs;
        await this.cycle(this.stats.cycles % 2 === 0 ? 'http' : 'grpc');
        const wait = next - Date.now();
        if (wait > 0 && this.running)
          await new Promise<void>((r) => {
            this.wake = r;
            setTimeout(r, wait);
          });
      }
    })();
  }

  /** One cycle now, outside the loop (the soak's priming). */
  async once(): Promise<void> {
    this.grpc ??= grpcUnary(this.grpcAddress);
    await this.cycle(this.stats.cycles % 2 === 0 ? 'http' : 'grpc');
  }

  /** Ends after the cycle in progress (which ends with its unload). */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    this.loop = undefined;
  }

  close(): void {
    this.grpc?.close();
    this.grpc = undefined;
  }

  private async cycle(protocol: 'http' | 'grpc'): Promise<void> {
    const n = ++this.stats.cycles;
    let failed = false;
    const fail = (what: string): void => {
      failed = true;
      if (this.stats.failures.length < 20) this.stats.failures.push(`${new Date().toISOString()} cycle ${n} (${protocol}): ${what}`);
    };
    this.loaded = true;
    const t0 = performance.now();
    try {
      await within(this.control(protocol, 'load'), `load ${this.model}`);
      this.stats.loadMs.push(performance.now() - t0);
      const got = await within(this.infer(protocol), `infer ${this.model}`);
      if (JSON.stringify(got) !== JSON.stringify(EXPECTED)) fail(`${this.model} answered [${got.join(',')}], expected [${EXPECTED.join(',')}]`);
    } catch (err) {
      fail((err as Error).message);
    }
    const t1 = performance.now();
    try {
      await within(this.control(protocol, 'unload'), `unload ${this.model}`);
      this.stats.unloadMs.push(performance.now() - t1);
    } catch (err) {
      fail((err as Error).message);
    }
    this.loaded = false;
    if (failed) this.stats.failedCycles++;
  }

  private async control(protocol: 'http' | 'grpc', action: 'load' | 'unload'): Promise<void> {
    if (protocol === 'grpc') {
      await this.grpc!.call(action === 'load' ? 'RepositoryModelLoad' : 'RepositoryModelUnload', { model_name: this.model });
      return;
    }
    const res = await fetch(`${this.httpUrl}/v2/repository/models/${this.model}/${action}`, { method: 'POST' });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${action} ${this.model}: HTTP ${res.status} ${text.slice(0, 300)}`);
  }

  private async infer(protocol: 'http' | 'grpc'): Promise<number[]> {
    if (protocol === 'grpc') {
      const r = (await this.grpc!.call('ModelInfer', {
        model_name: this.model,
        inputs: [
          { name: 'INPUT0', datatype: 'FP32', shape: [4] },
          { name: 'INPUT1', datatype: 'FP32', shape: [4] },
        ],
        raw_input_contents: [fp32(INPUT0), fp32(INPUT1)],
      })) as { raw_output_contents?: Uint8Array[] };
      const raw = r.raw_output_contents?.[0] ?? new Uint8Array(0);
      const b = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
      return Array.from({ length: b.length / 4 }, (_, i) => b.readFloatLE(i * 4));
    }
    const res = await fetch(`${this.httpUrl}/v2/models/${this.model}/infer`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        inputs: [
          { name: 'INPUT0', datatype: 'FP32', shape: [4], data: INPUT0 },
          { name: 'INPUT1', datatype: 'FP32', shape: [4], data: INPUT1 },
        ],
      }),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`infer ${this.model}: HTTP ${res.status} ${text.slice(0, 300)}`);
    return (JSON.parse(text) as { outputs: { data: number[] }[] }).outputs[0]?.data ?? [];
  }
}
