/**
 * `model_warmup` (protocol.md §3.10): before a version turns READY, every
 * instance runs each warmup sample `count` times (at least once), one
 * request at a time, as Triton warms each model instance. The requests go
 * to the instance itself, not through the scheduler, so they count in
 * neither the statistics nor `nv_inference_count` (Triton counts neither).
 * Input data is zeros, random bytes, or a file under `<model>/warmup/`
 * holding one batch-1 sample (repeated `batch_size` times). Any failure fails
 * the load with Triton's `failed to run warmup sample '<name>': <reason>`.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { configTypeToDataType, elementCount, ELEMENT_SIZE, type DataType } from '../core/datatypes';
import { ServerError, toErrorInfo } from '../core/errors';
import type { DecodedRequest } from '../request/decoded-request';
import { validateRequest } from '../request/validate';
import type { ValidationPlan } from '../request/validation-plan';
import type { Arena } from '../dataplane/arena';
import { nowNs } from '../core/clock';
import type { InferRequest, InferResponse, TensorRef } from '../core/request';
import type { ModelInstance } from '../instances/instance';
import type { ModelConfig } from '../core/model-config';

interface WarmupInput {
  data_type?: string;
  dims?: number[];
  zero_data?: boolean;
  random_data?: boolean;
  input_data_file?: string;
}

interface WarmupSample {
  name?: string;
  batch_size?: number;
  inputs?: Record<string, WarmupInput>;
  count?: number;
}

/** One sample's inputs as bytes, built once per load. */
interface PreparedSample {
  name: string;
  count: number;
  batchSize: number;
  inputs: { name: string; datatype: DataType; shape: number[]; data: Uint8Array }[];
}

/** Warm every instance (concurrently; each runs its samples in order). */
export async function runWarmup(
  config: ModelConfig,
  modelDir: string,
  version: number,
  instances: readonly ModelInstance[],
  arena: Arena,
  plan: ValidationPlan,
): Promise<void> {
  const samples = (config.model_warmup ?? []) as WarmupSample[];
  if (samples.length === 0) return;
  const prepared = samples.map((raw) => {
    try {
      return prepareSample(raw, config, modelDir);
    } catch (err) {
      throw sampleFailure(raw.name ?? '', err);
    }
  });
  await Promise.all(
    instances.map(async (instance) => {
      for (const sample of prepared) {
        try {
          for (let i = 0; i < sample.count; i++) await runOnce(sample, config.name, version, instance, arena, plan);
        } catch (err) {
          throw sampleFailure(sample.name, err);
        }
      }
    }),
  );
}

function sampleFailure(name: string, err: unknown): ServerError {
  const e = toErrorInfo(err);
  return new ServerError(e.code, `failed to run warmup sample '${name}': ${e.message}`);
}

function prepareSample(raw: WarmupSample, config: ModelConfig, modelDir: string): PreparedSample {
  const batching = config.max_batch_size > 0;
  const batchSize = Math.max(1, Number(raw.batch_size ?? 1));
  if (!batching && batchSize > 1) throw new ServerError('INVALID_ARG', `batch_size must be 1 for model '${config.name}', which does not support batching`);
  const inputs = Object.entries(raw.inputs ?? {}).map(([name, input]) => {
    const datatype = configTypeToDataType(input.data_type ?? '');
    if (datatype === '<invalid>') throw new ServerError('INVALID_ARG', `warmup input '${name}' has invalid data type '${input.data_type ?? ''}'`);
    const dims = (input.dims ?? []).map(Number);
    if (dims.some((d) => d < 0)) throw new ServerError('INVALID_ARG', `warmup input '${name}' must have fixed dims, got [${dims.join(',')}]`);
    const one = sampleBytes(name, datatype, dims, input, modelDir);
    const data = new Uint8Array(one.byteLength * batchSize);
    for (let b = 0; b < batchSize; b++) data.set(one, b * one.byteLength);
    return { name, datatype, shape: batching ? [batchSize, ...dims] : dims, data };
  });
  return { name: raw.name ?? '', count: Math.max(1, Number(raw.count ?? 0)), batchSize, inputs };
}

/** The bytes of one batch-1 sample of an input. BYTES elements are empty strings unless read from a file. */
function sampleBytes(name: string, datatype: DataType, dims: number[], input: WarmupInput, modelDir: string): Uint8Array {
  const n = elementCount(dims);
  if (input.input_data_file !== undefined && input.input_data_file !== '') {
    const file = path.join(modelDir, 'warmup', input.input_data_file);
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(file);
    } catch {
      throw new ServerError('INVALID_ARG', `failed to read warmup data file '${file}' for input '${name}'`);
    }
    const want = datatype === 'BYTES' ? -1 : n * ELEMENT_SIZE[datatype];
    if (want >= 0 && bytes.byteLength !== want) {
      throw new ServerError('INVALID_ARG', `warmup data file '${file}' for input '${name}' holds ${bytes.byteLength} bytes, expected ${want}`);
    }
    return new Uint8Array(bytes);
  }
  if (datatype === 'BYTES') return new Uint8Array(4 * n); // n zero-length strings
  const size = n * ELEMENT_SIZE[datatype];
  if (input.random_data === true) {
    const bytes = new Uint8Array(crypto.randomBytes(size));
    // Random floats may be NaN/Inf; keep them finite and small by clearing each element's top byte.
    if (datatype === 'FP32' || datatype === 'FP64' || datatype === 'FP16' || datatype === 'BF16') {
      const step = ELEMENT_SIZE[datatype];
      for (let i = step - 1; i < size; i += step) bytes[i] = 0;
    }
    if (datatype === 'BOOL') for (let i = 0; i < size; i++) bytes[i] = bytes[i]! & 1;
    return bytes;
  }
  return new Uint8Array(size);
}

async function runOnce(sample: PreparedSample, model: string, version: number, instance: ModelInstance, arena: Arena, plan: ValidationPlan): Promise<void> {
  const decoded: DecodedRequest = {
    id: '',
    inputs: sample.inputs.map((i) => ({ ...i, parameters: {} })),
    outputs: null,
    parameters: {},
    binaryDataOutput: true,
  };
  const { batchSize } = validateRequest(plan, decoded);
  const inputs: TensorRef[] = [];
  try {
    for (const i of sample.inputs) {
      const { offset, gen } = arena.alloc(i.data.byteLength);
      inputs.push({ name: i.name, datatype: i.datatype, shape: i.shape, offset, gen, byteSize: i.data.byteLength });
      arena.bytes(offset, i.data.byteLength).set(i.data);
    }
    const request: InferRequest = {
      id: '',
      model,
      version,
      latest: false,
      batchSize: plan.maxBatchSize > 0 ? batchSize : 1,
      inputs, // warms this very version
      requestedOutputs: null,
      parameters: {},
      arrivalNs: nowNs(),
    };
    // Non-final responses (decoupled models) are dropped as they come, like the final one.
    const drop = (_index: number, response: InferResponse): void => {
      for (const o of response.outputs) arena.free(o);
    };
    const { responses } = await instance.execute([request], drop);
    const response = responses[0];
    if (response !== undefined) for (const o of response.outputs) arena.free(o);
    if (response?.error !== undefined) throw new ServerError(response.error.code, response.error.message);
  } finally {
    for (const t of inputs) arena.free(t);
  }
}
