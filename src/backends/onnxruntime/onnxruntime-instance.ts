/**
 * Instance side of the ONNX Runtime backend, loaded inside an instance worker
 * thread: one InferenceSession per instance; `execute` gathers a batch's
 * inputs from the arena, runs the session once, and splits every output
 * along the batch dim back into the arena, one slice per request.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import type { DataType } from '../../core/datatypes';
import { configTypeToDataType } from '../../core/datatypes';
import { ServerError } from '../../core/errors';
import type { Arena } from '../../dataplane/arena';
import type { ModelConfig } from '../../core/model-config';
import { nowNs } from '../../core/clock';
import type { InferRequest, InferResponse, TensorRef } from '../../core/request';
import type { BackendInstance, BackendInstanceArgs, ComputeMarks, CreateBackendInstance } from '../backend';
import { resolveOnnxModelFile } from './model-file';
import { dataTypeToOrtType } from './ort-types';
import { sessionOptionsFor } from './session-options';
import { createSessionRunner, type SessionRunner } from './session-runner';
import { InputGatherer, scatterOutput } from './tensor-io';
import type { InputSpec } from './tensor-io';

interface OutputSpec {
  name: string;
  datatype: DataType;
  /** Config dims to report instead of the model's when the output has a reshape. */
  reportedItemShape: number[] | null;
}

export const createBackendInstance: CreateBackendInstance = async (args) => {
  const file = resolveOnnxModelFile(args.modelPath);
  const options = sessionOptionsFor(args, os.availableParallelism());
  if (args.kind === 'KIND_GPU') options.executionProviders = [gpuProvider(args), 'cpu'];
  const plan = compilePlan(args.config);
  let session: SessionRunner;
  try {
    session = await createSessionRunner(file, options);
  } catch (err) {
    const message = `onnx runtime error: ${(err as Error).message}`;
    throw new ServerError(args.kind === 'KIND_GPU' ? 'UNAVAILABLE' : 'INTERNAL', message);
  }
  return new OnnxRuntimeInstance(plan, session);
};

/** What execute needs from the config, worked out once. */
interface Plan {
  model: string;
  batching: boolean;
  inputs: InputSpec[];
  outputs: OutputSpec[];
}

function compilePlan(config: ModelConfig): Plan {
  return {
    model: config.name,
    batching: config.max_batch_size > 0,
    inputs: config.input.map((i) => {
      const datatype = tensorDataType(config.name, i.name, i.data_type);
      const ortType = dataTypeToOrtType(datatype);
      if (ortType === null) {
        throw new ServerError('UNSUPPORTED', `model '${config.name}', input '${i.name}': onnxruntime-node has no tensor type for ${datatype}`);
      }
      return { name: i.name, datatype, ortType, reshape: i.reshape?.shape ?? null };
    }),
    outputs: config.output.map((o) => ({
      name: o.name,
      datatype: tensorDataType(config.name, o.name, o.data_type),
      reportedItemShape: o.reshape !== undefined && o.dims.every((d) => d >= 0) ? o.dims : null,
    })),
  };
}

/** The CUDA execution provider for a KIND_GPU instance, or UNAVAILABLE when this onnxruntime-node has none. */
function gpuProvider(args: BackendInstanceArgs): InferenceSession.ExecutionProviderConfig {
  if (!cudaProviderInstalled()) {
    throw new ServerError(
      'UNAVAILABLE',
      `unable to create instance '${args.instanceName}' of model '${args.config.name}' on GPU ${args.deviceId}: ` +
        'the CUDA execution provider of onnxruntime-node is not installed (this build runs on CPU only); ' +
        'use instance_group kind KIND_CPU',
    );
  }
  return { name: 'cuda', deviceId: args.deviceId };
}

/** onnxruntime-node loads the CUDA provider from a library beside its binding, installed only for CUDA builds. */
function cudaProviderInstalled(): boolean {
  try {
    const root = path.dirname(require.resolve('onnxruntime-node/package.json'));
    const dir = path.join(root, 'bin', 'napi-v6', process.platform, process.arch);
    return fs.readdirSync(dir).some((f) => f.startsWith('libonnxruntime_providers_cuda'));
  } catch {
    return false;
  }
}

class OnnxRuntimeInstance implements BackendInstance {
  private readonly outputs: OutputSpec[];
  private readonly allOutputs: ReadonlySet<string>;
  private readonly batching: boolean;
  private readonly gatherer: InputGatherer;

  constructor(
    private readonly plan: Plan,
    private readonly session: SessionRunner,
  ) {
    this.batching = plan.batching;
    this.outputs = plan.outputs;
    this.allOutputs = new Set(plan.outputs.map((o) => o.name));
    this.gatherer = new InputGatherer(plan.model, plan.batching);
  }

  async execute(requests: InferRequest[], arena: Arena, marks?: ComputeMarks): Promise<InferResponse[]> {
    const feeds = this.gatherInputs(requests, arena);
    const wanted = this.wantedOutputs(requests);
    if (marks) marks.inputEndNs = nowNs();
    let results: InferenceSession.OnnxValueMapType;
    try {
      // Synchronous when the runner calls the binding directly (session-runner.ts).
      const run = this.session.run(
        feeds,
        this.outputs.filter((o) => wanted.has(o.name)).map((o) => o.name),
      );
      results = run instanceof Promise ? await run : run;
    } catch (err) {
      throw new ServerError('INTERNAL', `onnx runtime error: ${(err as Error).message}`);
    }
    if (marks) marks.inferEndNs = nowNs();
    return this.scatterOutputs(requests, results, wanted, arena);
  }

  async finalize(): Promise<void> {
    await this.session.release(); // idempotent (session-runner.ts)
  }

  private gatherInputs(requests: InferRequest[], arena: Arena): InferenceSession.FeedsType {
    const feeds: Record<string, Tensor> = {};
    for (const spec of this.plan.inputs) {
      const refs: TensorRef[] = [];
      for (const r of requests) {
        const ref = r.inputs.find((t) => t.name === spec.name);
        if (ref !== undefined) refs.push(ref);
      }
      // An optional input absent from every request is not fed; one present in only some cannot be batched.
      if (refs.length === 0) continue;
      if (refs.length !== requests.length) {
        throw new ServerError('INVALID_ARG', `model '${this.plan.model}': optional input '${spec.name}' is given by only some of the requests of a batch`);
      }
      feeds[spec.name] = this.gatherer.gather(spec, refs, arena);
    }
    return feeds;
  }

  /** Union of the requests' outputs; null = every config output. */
  private wantedOutputs(requests: InferRequest[]): ReadonlySet<string> {
    if (requests.some((r) => r.requestedOutputs === null)) return this.allOutputs;
    const wanted = new Set<string>();
    for (const r of requests) for (const name of r.requestedOutputs ?? []) wanted.add(name);
    return wanted;
  }

  private scatterOutputs(requests: InferRequest[], results: InferenceSession.OnnxValueMapType, wanted: ReadonlySet<string>, arena: Arena): InferResponse[] {
    const perRequest: TensorRef[][] = requests.map(() => []);
    const rows = this.batching ? requests.map((r) => r.batchSize) : null;
    const total = requests.reduce((n, r) => n + r.batchSize, 0);
    try {
      for (const spec of this.outputs) {
        if (!wanted.has(spec.name)) continue;
        const tensor = results[spec.name] as Tensor | undefined;
        if (tensor === undefined) {
          throw new ServerError('INTERNAL', `model '${this.plan.model}': onnx runtime returned no output '${spec.name}'`);
        }
        if (rows !== null && Number(tensor.dims[0]) !== total) {
          throw new ServerError(
            'INTERNAL',
            `model '${this.plan.model}', output '${spec.name}': expected a batch dimension of ${total}, ` +
              `the model produced shape [${tensor.dims.join(',')}]`,
          );
        }
        const include = requests.map((r) => r.requestedOutputs === null || r.requestedOutputs.includes(spec.name));
        const refs = scatterOutput(spec.name, spec.datatype, tensor, rows, include, spec.reportedItemShape, arena);
        refs.forEach((ref, i) => {
          if (ref !== null) perRequest[i].push(ref);
        });
      }
    } catch (err) {
      for (const refs of perRequest) for (const ref of refs) arena.free(ref);
      throw err;
    }
    // Outputs come in config order, each request with only those it asked for.
    return perRequest.map((outputs) => ({ outputs, final: true }));
  }
}

function tensorDataType(model: string, tensor: string, configType: string): DataType {
  const dt = configTypeToDataType(configType);
  if (dt === '<invalid>') {
    throw new ServerError('INVALID_ARG', `model '${model}', tensor '${tensor}': invalid data_type ${configType}`);
  }
  return dt;
}
