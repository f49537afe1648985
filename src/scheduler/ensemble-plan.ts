/**
 * An ensemble's plan, compiled once at load (STYLE.md item 9): every ensemble
 * tensor becomes a numbered slot, every step knows the slots it reads and
 * writes, and every slot knows the steps that consume it and whether the
 * ensemble may free it once they ran. Per request the ensemble scheduler only
 * follows this plan.
 *
 * Compiling also checks the steps against the composing models' configs with
 * Triton's texts: mapped inputs/outputs must exist, every required input must
 * be mapped, and a tensor's data type and shape must agree everywhere it is
 * seen (a -1 dim matches anything; shapes are compared with and without the
 * batch dimension so batching and non-batching models can share tensors).
 * The ensemble config's own structure (cycles, unused or unwritten tensors)
 * was checked already by config/validate-ensemble.ts.
 */
import { ServerError } from '../core/errors';
import type { ModelConfig } from '../core/model-config';

export interface StepTensor {
  /** Input or output name of the composing model. */
  name: string;
  slot: number;
}

export interface EnsembleStepPlan {
  model: string;
  /** -1 = the newest READY version at request time. */
  version: number;
  inputs: StepTensor[];
  outputs: StepTensor[];
  /** Output names the step asks its model for (the mapped ones). */
  requestedOutputs: string[];
  /** Distinct slots the step reads: it runs once all of them are written. */
  inputSlots: number[];
}

export interface EnsemblePlan {
  name: string;
  slotNames: string[];
  /** Slot of each ensemble input, by name. */
  inputSlots: ReadonlyMap<string, number>;
  /** Ensemble outputs in config order. */
  outputs: { name: string; slot: number }[];
  steps: EnsembleStepPlan[];
  /** Per slot: the steps that read it (each once). */
  consumers: number[][];
  /** Per slot: the step that writes it, or -1 for an ensemble input. */
  producer: number[];
  /** Per slot: whether it is an ensemble output (handed to the requester, never freed by the ensemble). */
  isOutput: boolean[];
}

interface TensorNode {
  model: string;
  type: string;
  dims: number[];
  fullDims: number[];
}

/** The config of a composing model of `ensemble` (READY version `version`, -1 = newest); throws Triton's dependency error when there is none. */
export type ComposingConfig = (ensemble: string, model: string, version: number) => ModelConfig;

const invalid = (msg: string): ServerError => new ServerError('INVALID_ARG', msg);

function node(model: string, batching: boolean, type: string, dims: readonly number[]): TensorNode {
  return { model, type, dims: [...dims], fullDims: batching ? [-1, ...dims] : [...dims] };
}

function sameWithWildcard(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && a[i] !== -1 && b[i] !== -1) return false;
  return true;
}

const dimsText = (d: readonly number[]): string => `[${d.join(',')}]`;

function checkConsistent(known: TensorNode, seen: TensorNode, prefix: string): void {
  if (known.type !== seen.type) {
    throw invalid(
      `${prefix}inconsistent data type: ${known.type} is inferred from model ${known.model} while ${seen.type} is inferred from model ${seen.model}`,
    );
  }
  if (!sameWithWildcard(known.dims, seen.dims) && !sameWithWildcard(known.fullDims, seen.fullDims)) {
    throw invalid(
      `${prefix}inconsistent shape: ${dimsText(known.fullDims)} is inferred from model ${known.model} while ${dimsText(seen.fullDims)} is inferred from model ${seen.model}`,
    );
  }
}

/** Record `seen` for ensemble tensor `tensor`, or check it against what is known. */
function see(tensors: Map<string, TensorNode>, tensor: string, seen: TensorNode, e: string): void {
  const known = tensors.get(tensor);
  if (known === undefined) tensors.set(tensor, seen);
  else checkConsistent(known, seen, `in ensemble ${e}, ensemble tensor ${tensor}: `);
}

export function compileEnsemblePlan(config: ModelConfig, composing: ComposingConfig): EnsemblePlan {
  const e = config.name;
  const batching = config.max_batch_size > 0;
  const tensors = new Map<string, TensorNode>();
  for (const i of config.input) tensors.set(i.name, node(e, batching, i.data_type, i.reshape?.shape ?? i.dims));
  for (const o of config.output) tensors.set(o.name, node(e, batching, o.data_type, o.reshape?.shape ?? o.dims));

  const rawSteps = config.ensemble_scheduling?.step ?? [];
  const modelConfigs = rawSteps.map((step) => composing(e, step.model_name, Number(step.model_version ?? -1)));
  rawSteps.forEach((step, idx) => {
    const mc = modelConfigs[idx]!;
    const m = step.model_name;
    if (mc.max_batch_size !== 0 && mc.max_batch_size < config.max_batch_size) {
      throw invalid(
        `ensemble ${e} allows maximum batch size ${config.max_batch_size}, but it contains model ${m} which only allows maximum batch size to be ${mc.max_batch_size}`,
      );
    }
    if (mc.model_transaction_policy?.decoupled === true) {
      throw new ServerError('UNSUPPORTED', `in ensemble ${e}, step of model '${m}': decoupled composing models are not supported`);
    }
    const stepBatching = mc.max_batch_size > 0;
    const inputMap = step.input_map ?? {};
    const outputMap = step.output_map ?? {};
    const inputs = new Map(mc.input.map((i) => [i.name, i]));
    for (const [modelInput, tensor] of Object.entries(inputMap)) {
      const input = inputs.get(modelInput);
      if (input === undefined) throw invalid(`in ensemble ${e}, ensemble tensor ${tensor} is mapping to non-existing input ${modelInput} in model ${m}`);
      see(tensors, tensor, node(m, stepBatching, input.data_type, input.dims), e);
    }
    for (const input of mc.input) {
      if (inputMap[input.name] === undefined && !input.optional) {
        throw invalid(`in ensemble ${e}, input ${input.name} in model ${m} is not mapped to any ensemble tensors`);
      }
    }
    const outputs = new Map(mc.output.map((o) => [o.name, o]));
    for (const [modelOutput, tensor] of Object.entries(outputMap)) {
      const output = outputs.get(modelOutput);
      if (output === undefined) throw invalid(`in ensemble ${e}, ensemble tensor ${tensor} is mapped from non-existing output ${modelOutput} in model ${m}`);
      see(tensors, tensor, node(m, stepBatching, output.data_type, output.dims), e);
    }
  });
  return layout(config, tensors);
}

/** Slots, step reads/writes and consumers, once the mapping is known to be sound. */
function layout(config: ModelConfig, tensors: Map<string, TensorNode>): EnsemblePlan {
  const slotNames = [...tensors.keys()];
  const slotOf = new Map(slotNames.map((n, i) => [n, i]));
  const slot = (name: string): number => slotOf.get(name)!;
  const consumers: number[][] = slotNames.map(() => []);
  const producer: number[] = slotNames.map(() => -1);
  const isOutput: boolean[] = slotNames.map(() => false);
  const outputs = config.output.map((o) => ({ name: o.name, slot: slot(o.name) }));
  for (const o of outputs) isOutput[o.slot] = true;
  const steps: EnsembleStepPlan[] = (config.ensemble_scheduling?.step ?? []).map((step, idx) => {
    const inputs = Object.entries(step.input_map ?? {}).map(([name, t]) => ({ name, slot: slot(t) }));
    const outs = Object.entries(step.output_map ?? {}).map(([name, t]) => ({ name, slot: slot(t) }));
    const inputSlots = [...new Set(inputs.map((i) => i.slot))];
    for (const s of inputSlots) consumers[s]!.push(idx);
    for (const o of outs) producer[o.slot] = idx;
    return {
      model: step.model_name,
      version: Number(step.model_version ?? -1),
      inputs,
      outputs: outs,
      requestedOutputs: outs.map((o) => o.name),
      inputSlots,
    };
  });
  const inputSlots = new Map(config.input.map((i) => [i.name, slot(i.name)]));
  return { name: config.name, slotNames, inputSlots, outputs, steps, consumers, producer, isOutput };
}
