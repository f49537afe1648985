/**
 * Fakes shared by the scheduler tests: a ModelInstance whose executions
 * finish only when the test says so, request and config builders, and a
 * recorder of responses. Not a test file itself.
 */
import type { ModelInstance } from '../../src/instances/instance';
import type { ModelConfig, ModelDynamicBatching } from '../../src/core/model-config';
import type { ExecuteResult, InferRequest, InferResponse, Respond } from '../../src/core/request';

export interface FakeExecution {
  requests: InferRequest[];
  /** Finish with one response per request (`echo` = request id); `make` overrides the responses. */
  finish(make?: (requests: InferRequest[]) => InferResponse[]): void;
  fail(err: unknown): void;
}

export class FakeInstance implements ModelInstance {
  readonly executions: FakeExecution[] = [];
  /** Executions not finished yet. */
  running = 0;
  /** Requests the scheduler told it were cancelled (ModelInstance.cancel), in order. */
  readonly cancelled: InferRequest[] = [];

  constructor(readonly name: string) {}

  execute(requests: InferRequest[]): Promise<ExecuteResult> {
    if (this.running > 0) throw new Error(`${this.name}: a second execution started while one is running`);
    this.running++;
    return new Promise((resolve, reject) => {
      this.executions.push({
        requests,
        finish: (make) => {
          this.running--;
          resolve({
            responses: make ? make(requests) : requests.map(echo),
            timings: { computeStartNs: 1, computeInputEndNs: 2, computeInferEndNs: 3, computeEndNs: 4 },
          });
        },
        fail: (err) => {
          this.running--;
          reject(err);
        },
      });
    });
  }

  cancel(request: InferRequest): void {
    this.cancelled.push(request);
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }

  kill(): Promise<void> {
    return Promise.resolve();
  }

  /** Request ids of every batch this instance got, in order. */
  batches(): string[][] {
    return this.executions.map((e) => e.requests.map((r) => r.id));
  }

  /** The one running execution. */
  current(): FakeExecution {
    const e = this.executions[this.executions.length - 1];
    if (e === undefined || this.running === 0) throw new Error(`${this.name}: nothing running`);
    return e;
  }
}

export function echo(r: InferRequest): InferResponse {
  return { outputs: [], parameters: { echo: r.id }, final: true };
}

export function request(id: string, batchSize = 1, dims: number[] = [4]): InferRequest {
  return {
    id,
    model: 'm',
    version: 3,
    latest: false,
    batchSize,
    inputs: [{ name: 'x', datatype: 'FP32', shape: [batchSize, ...dims], offset: 0, gen: 0, byteSize: 0 }],
    requestedOutputs: null,
    parameters: {},
    arrivalNs: 0,
  };
}

export function config(maxBatchSize: number, dynamic?: Partial<ModelDynamicBatching>, inputDims: number[] = [4]): ModelConfig {
  const c = {
    name: 'm',
    platform: '',
    backend: 'fake',
    runtime: '',
    version_policy: { latest: { num_versions: 1 } },
    max_batch_size: maxBatchSize,
    input: [
      {
        name: 'x',
        data_type: 'TYPE_FP32',
        format: 'FORMAT_NONE',
        dims: inputDims,
        is_shape_tensor: false,
        allow_ragged_batch: false,
        optional: false,
        is_non_linear_format_io: false,
      },
    ],
    output: [],
    batch_input: [],
    batch_output: [],
    instance_group: [],
    default_model_filename: '',
    cc_model_filenames: {},
    metric_tags: {},
    parameters: {},
    model_warmup: [],
  } as ModelConfig;
  if (dynamic !== undefined) {
    c.dynamic_batching = {
      preferred_batch_size: [],
      max_queue_delay_microseconds: 0,
      preserve_ordering: false,
      priority_levels: 0,
      default_priority_level: 0,
      priority_queue_policy: {},
      ...dynamic,
    };
  }
  return c;
}

/** Records every response per request id, and the order of final responses. */
export class Recorder {
  readonly responses = new Map<string, InferResponse[]>();
  readonly finalOrder: string[] = [];

  respond(id: string): Respond {
    return (r) => {
      const list = this.responses.get(id) ?? [];
      list.push(r);
      this.responses.set(id, list);
      if (r.final) this.finalOrder.push(id);
    };
  }

  /** The single response of a request; fails unless there is exactly one. */
  only(id: string): InferResponse {
    const list = this.responses.get(id) ?? [];
    if (list.length !== 1) throw new Error(`request ${id}: ${list.length} responses, expected 1`);
    return list[0]!;
  }
}

/** Lets promise callbacks (execution results) run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Polls until `cond` holds, for scheduler timers; throws after ~2 s so a bug cannot hang the run. */
export async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !cond(); i++) await new Promise((resolve) => setTimeout(resolve, 1));
  if (!cond()) throw new Error('condition never held');
}
