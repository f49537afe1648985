/**
 * Main-thread side of the ONNX Runtime backend: auto-complete a config from
 * the model file and check the config against it, following Triton's ONNX
 * Runtime backend rules and texts (protocol.md §3.12, §4.4):
 *
 * - auto-complete is skipped when the config lists both inputs and outputs;
 * - otherwise, when every model input and output has a variable first dim,
 *   the model can batch: an unset max_batch_size becomes the backend config
 *   `default-max-batch-size` (4), and a batching model (> 1) without a
 *   scheduling choice gets `dynamic_batching {}` (normalization then fills
 *   preferred_batch_size); a model that cannot batch with max_batch_size > 0
 *   fails;
 * - missing inputs (or outputs) are all filled from the model, the batch dim
 *   dropped when max_batch_size > 0;
 * - the config is always checked: names, counts, datatypes and dims.
 */
import { ServerError } from '../../core/errors';
import type { ModelConfig, ModelDynamicBatching, ModelInput, ModelOutput } from '../../core/model-config';
import { resolveOnnxModelFile } from './model-file';
import { OnnxParseError, readOnnxModelInfo } from './onnx-model-info';
import type { OnnxModelInfo, OnnxTensorInfo } from './onnx-model-info';
import { onnxElemTypeName, onnxElemTypeToConfigType } from './ort-types';

export const DEFAULT_MAX_BATCH_SIZE = 4;

/** Backend.completeConfig of the onnxruntime backend. */
export async function completeOnnxConfig(
  config: ModelConfig,
  modelPath: string,
  autoComplete: boolean,
  backendConfig: Record<string, string>,
): Promise<ModelConfig> {
  const info = loadModelInfo(resolveOnnxModelFile(modelPath));
  const completed = structuredClone(config);
  completed.input ??= [];
  completed.output ??= [];
  if (autoComplete) autoCompleteConfig(completed, info, defaultMaxBatchSize(backendConfig));
  checkConfigAgainstModel(completed, info);
  return completed;
}

function loadModelInfo(file: string): OnnxModelInfo {
  try {
    return readOnnxModelInfo(file);
  } catch (err) {
    if (err instanceof OnnxParseError) {
      // Triton's text for a file ONNX Runtime cannot parse, with what was wrong.
      throw new ServerError('INTERNAL', `onnx runtime error 7: Load model from ${file} failed:Protobuf parsing failed. (${err.message})`);
    }
    throw new ServerError('INTERNAL', `failed to read model file ${file}: ${(err as Error).message}`);
  }
}

/** `default-max-batch-size` from --backend-config=onnxruntime,default-max-batch-size=<n>. */
export function defaultMaxBatchSize(backendConfig: Record<string, string>): number {
  const text = backendConfig['default-max-batch-size'];
  if (text === undefined) return DEFAULT_MAX_BATCH_SIZE;
  const n = Number(text);
  if (text.trim() === '' || !Number.isInteger(n)) {
    throw new ServerError('INVALID_ARG', `failed to parse backend config 'default-max-batch-size': expected an integer, got '${text}'`);
  }
  return Math.max(n, 0);
}

/** Fills max_batch_size, dynamic_batching, inputs and outputs in place. */
export function autoCompleteConfig(config: ModelConfig, info: OnnxModelInfo, defaultMaxBatch: number): void {
  if (config.input.length > 0 && config.output.length > 0) return;
  const m = config.name;
  const batchable = [...info.inputs, ...info.outputs].every((t) => t.dims !== null && t.dims.length > 0 && t.dims[0] === -1);
  if (batchable) {
    if (config.max_batch_size === 0) config.max_batch_size = defaultMaxBatch;
    if (config.max_batch_size > 1 && config.dynamic_batching === undefined && config.sequence_batching === undefined) {
      config.dynamic_batching = emptyDynamicBatching();
    }
  } else if (config.max_batch_size !== 0) {
    throw new ServerError('INVALID_ARG', `autofill failed for model '${m}': model does not support batching while non-zero max_batch_size is specified`);
  }
  if (config.input.length === 0) {
    config.input = info.inputs.map((t) => {
      const { dataType, dims, reshape } = autofillTensor(m, 'input', t, config.max_batch_size);
      const input: ModelInput = {
        name: t.name,
        data_type: dataType,
        format: 'FORMAT_NONE',
        dims,
        is_shape_tensor: false,
        allow_ragged_batch: false,
        optional: false,
        is_non_linear_format_io: false,
      };
      if (reshape) input.reshape = reshape;
      return input;
    });
  }
  if (config.output.length === 0) {
    config.output = info.outputs.map((t) => {
      const { dataType, dims, reshape } = autofillTensor(m, 'output', t, config.max_batch_size);
      const output: ModelOutput = {
        name: t.name,
        data_type: dataType,
        dims,
        label_filename: '',
        is_shape_tensor: false,
        is_non_linear_format_io: false,
      };
      if (reshape) output.reshape = reshape;
      return output;
    });
  }
}

function autofillTensor(
  model: string,
  io: 'input' | 'output',
  t: OnnxTensorInfo,
  maxBatchSize: number,
): { dataType: string; dims: number[]; reshape?: { shape: number[] } } {
  requireTensor(model, io, t);
  const dataType = onnxElemTypeToConfigType(t.elemType);
  if (dataType === 'TYPE_INVALID') {
    throw new ServerError('INVALID_ARG', `unable to autofill for '${model}': unsupported datatype ${onnxElemTypeName(t.elemType)} for ${io} '${t.name}'`);
  }
  if (t.dims === null) {
    throw new ServerError(
      'INVALID_ARG',
      `unable to autofill for '${model}': the model gives no shape for ${io} '${t.name}'; specify it in the model configuration`,
    );
  }
  const dims = maxBatchSize > 0 ? t.dims.slice(1) : [...t.dims];
  // A scalar (after the batch dim) is configured as [1] and reshaped to [] for the model.
  if (dims.length === 0) return { dataType, dims: [1], reshape: { shape: [] } };
  return { dataType, dims };
}

function emptyDynamicBatching(): ModelDynamicBatching {
  return {
    preferred_batch_size: [],
    max_queue_delay_microseconds: 0,
    preserve_ordering: false,
    priority_levels: 0,
    default_priority_level: 0,
    priority_queue_policy: {},
  };
}

/** Checks the config's tensors against the model; throws INVALID_ARG with Triton's texts. */
export function checkConfigAgainstModel(config: ModelConfig, info: OnnxModelInfo): void {
  const m = config.name;
  const modelInputs = new Map([...info.inputs, ...info.overridableInitializers].map((t) => [t.name, t]));
  const overridable = new Set(info.overridableInitializers.map((t) => t.name));
  const sequenceInputs = sequenceInputNames(config);
  const expectedInputs = config.input.filter((i) => !overridable.has(i.name)).length + sequenceInputs.filter((n) => !overridable.has(n)).length;
  if (expectedInputs !== info.inputs.length) {
    throw new ServerError(
      'INVALID_ARG',
      `unable to load model '${m}', configuration expects ${expectedInputs} inputs, model provides ${info.inputs.length}` +
        missingNote(info.inputs, [...config.input.map((i) => i.name), ...sequenceInputs]),
    );
  }
  for (const input of config.input) {
    const t = modelInputs.get(input.name);
    if (t === undefined) {
      throw new ServerError('INVALID_ARG', `unexpected inference input '${input.name}', allowed inputs are: ${sortedNames(modelInputs.keys())}`);
    }
    checkTensor(config, 'input', input.name, input.data_type, input.reshape?.shape ?? input.dims, t);
  }
  const modelOutputs = new Map(info.outputs.map((t) => [t.name, t]));
  for (const output of config.output) {
    const t = modelOutputs.get(output.name);
    if (t === undefined) {
      throw new ServerError('INVALID_ARG', `unexpected inference output '${output.name}', allowed outputs are: ${sortedNames(modelOutputs.keys())}`);
    }
    checkTensor(config, 'output', output.name, output.data_type, output.reshape?.shape ?? output.dims, t);
  }
}

function checkTensor(config: ModelConfig, io: 'input' | 'output', name: string, dataType: string, dims: number[], t: OnnxTensorInfo): void {
  const m = config.name;
  requireTensor(m, io, t);
  const provided = onnxElemTypeToConfigType(t.elemType);
  if (dataType !== provided) {
    throw new ServerError(
      'INVALID_ARG',
      `unable to load model '${m}', configuration expects datatype ${dataType} for ${io} '${name}', model provides ${provided}`,
    );
  }
  // A model that does not say its shape accepts whatever the config says.
  if (t.dims !== null) compareDims(m, name, t.dims, dims, config.max_batch_size);
}

function requireTensor(model: string, io: 'input' | 'output', t: OnnxTensorInfo): void {
  if (t.kind !== 'tensor') {
    throw new ServerError(
      'INVALID_ARG',
      `unable to load model '${model}', ${io} '${t.name}' is a ${t.kind.replace('_', ' ')} in the model; only tensors are supported`,
    );
  }
}

/**
 * Model dims vs config dims. A model dim of -1 accepts any config dim; with
 * max_batch_size > 0 the model must have a leading -1 batch dim before the
 * config dims.
 */
function compareDims(model: string, tensor: string, modelDims: number[], dims: number[], maxBatchSize: number): void {
  const prefix = `model '${model}', tensor '${tensor}': `;
  const full = maxBatchSize > 0 ? [-1, ...dims] : dims;
  if (maxBatchSize > 0 && (modelDims.length === 0 || modelDims[0] !== -1)) {
    throw new ServerError(
      'INVALID_ARG',
      prefix +
        'for the model to support batching the shape should have at least 1 dimension and the first dimension must be -1; ' +
        `but shape expected by the model is ${shapeText(modelDims)}`,
    );
  }
  const same = modelDims.length === full.length && modelDims.every((d, i) => d === -1 || d === full[i]);
  if (same) return;
  const configured =
    maxBatchSize > 0
      ? `${full.length} dimensions (an initial batch dimension because max_batch_size > 0 followed by the explicit tensor shape, making complete shape ${shapeText(full)})`
      : `${dims.length} dimensions (shape ${shapeText(dims)})`;
  throw new ServerError(
    'INVALID_ARG',
    prefix + `the model expects ${modelDims.length} dimensions (shape ${shapeText(modelDims)}) but the model configuration specifies ${configured}`,
  );
}

/** Inputs that sequence batching adds besides config.input: control inputs and implicit state. */
function sequenceInputNames(config: ModelConfig): string[] {
  const seq = config.sequence_batching as { control_input?: { name: string }[]; state?: { input_name: string }[] } | undefined;
  if (seq === undefined) return [];
  return [...(seq.control_input ?? []).map((c) => c.name), ...(seq.state ?? []).map((s) => s.input_name)];
}

function missingNote(modelInputs: OnnxTensorInfo[], configured: string[]): string {
  const have = new Set(configured);
  const missing = modelInputs.filter((t) => !have.has(t.name)).map((t) => `'${t.name}'`);
  return missing.length === 0 ? '' : ` (not in the configuration: ${missing.join(', ')})`;
}

function sortedNames(names: Iterable<string>): string {
  return [...names].sort().join(', ');
}

function shapeText(dims: number[]): string {
  return `[${dims.join(',')}]`;
}
