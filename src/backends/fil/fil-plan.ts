/**
 * What a FIL model answers, worked out once per load from its config and
 * its forest: the output mode (class, probabilities or prediction) and the
 * row width in and out, with the config checked against the model (Triton
 * FIL's tensor names input__0 / output__0, FP32 only). Used by
 * auto-complete on the main thread and by each instance.
 */
import { ServerError } from '../../core/errors';
import type { ModelConfig } from '../../core/model-config';
import type { Forest } from './forest';
import { outputWidth } from './forest-predict';
import type { OutputMode } from './forest-predict';
import type { FilParams } from './fil-params';

export const FIL_INPUT = 'input__0';
export const FIL_OUTPUT = 'output__0';

export interface FilPlan {
  numFeatures: number;
  mode: OutputMode;
}

/** The output mode the parameters ask of this forest; INVALID_ARG when they do not fit it. */
export function outputModeOf(model: string, forest: Forest, params: FilParams, file: string): Omit<OutputMode, 'width'> {
  const outputClass = params.outputClass ?? forest.numClasses > 0;
  if (outputClass && forest.numClasses === 0) {
    throw new ServerError(
      'INVALID_ARG',
      `unable to load model '${model}': parameter output_class is true, but ${file} is a ${forest.library} regression model ` +
        `(objective '${forest.objective}'): set output_class to false, or serve the classifier`,
    );
  }
  return { outputClass, predictProba: outputClass && params.predictProba, threshold: params.threshold };
}

function describe(mode: Omit<OutputMode, 'width'>, forest: Forest): string {
  if (!mode.outputClass) return forest.numGroups === 1 ? 'one prediction per row' : `${forest.numGroups} predictions per row (one per class)`;
  if (!mode.predictProba) return 'the class index of each row (predict_proba false)';
  return `one probability per class (predict_proba true, ${Math.max(2, forest.numClasses)} classes)`;
}

const dimsText = (d: number[]): string => `[${d.join(',')}]`;

/** Checks the config's input and output against the forest; returns the plan. */
export function filPlan(config: ModelConfig, forest: Forest, params: FilParams, file: string): FilPlan {
  const m = config.name;
  const mode = outputModeOf(m, forest, params, file);
  const width = outputWidth(forest, mode);
  if (config.max_batch_size <= 0) {
    throw new ServerError(
      'INVALID_ARG',
      `unable to load model '${m}': FIL models take rows along a batch dimension: set max_batch_size (for example 1024) in config.pbtxt`,
    );
  }
  if (config.input.length !== 1 || config.input[0]!.name !== FIL_INPUT) {
    throw new ServerError(
      'INVALID_ARG',
      `unable to load model '${m}': a FIL model has one input, named '${FIL_INPUT}'; the config has ` +
        `${config.input.length === 0 ? 'none' : config.input.map((i) => `'${i.name}'`).join(', ')}. Name it '${FIL_INPUT}' (TYPE_FP32, dims [ ${forest.numFeatures} ])`,
    );
  }
  const input = config.input[0]!;
  if (input.data_type !== 'TYPE_FP32') {
    throw new ServerError(
      'INVALID_ARG',
      `unable to load model '${m}': input '${FIL_INPUT}' must be TYPE_FP32 (FIL reads 32-bit features), the config says ${input.data_type}`,
    );
  }
  if (input.dims.length !== 1 || (input.dims[0] !== forest.numFeatures && input.dims[0] !== -1)) {
    throw new ServerError(
      'INVALID_ARG',
      `unable to load model '${m}': input '${FIL_INPUT}' has dims ${dimsText(input.dims)}, but ${file} has ${forest.numFeatures} features: set dims: [ ${forest.numFeatures} ]`,
    );
  }
  const output = config.output.find((o) => o.name === FIL_OUTPUT);
  if (output === undefined) {
    throw new ServerError(
      'INVALID_ARG',
      `unable to load model '${m}': a FIL model answers in an output named '${FIL_OUTPUT}'; the config has ` +
        `${config.output.length === 0 ? 'none' : config.output.map((o) => `'${o.name}'`).join(', ')}. Add output '${FIL_OUTPUT}' (TYPE_FP32, dims [ ${width} ])`,
    );
  }
  const extra = config.output.filter((o) => o.name !== FIL_OUTPUT);
  if (extra.length > 0) {
    throw new ServerError(
      'UNSUPPORTED',
      `unable to load model '${m}': output ${extra.map((o) => `'${o.name}'`).join(', ')} is not one nodetron's FIL backend produces (only '${FIL_OUTPUT}'; SHAP values, output__1, are not implemented)`,
    );
  }
  if (output.data_type !== 'TYPE_FP32') {
    throw new ServerError('INVALID_ARG', `unable to load model '${m}': output '${FIL_OUTPUT}' must be TYPE_FP32, the config says ${output.data_type}`);
  }
  // A binary classifier's probabilities may be asked for as [2] (both classes) or [1] (the positive class).
  const binaryOne = mode.predictProba && forest.numGroups === 1 && output.dims.length === 1 && output.dims[0] === 1;
  const got = binaryOne ? 1 : width;
  if (output.dims.length !== 1 || (output.dims[0] !== got && output.dims[0] !== -1)) {
    throw new ServerError(
      'INVALID_ARG',
      `unable to load model '${m}': output '${FIL_OUTPUT}' has dims ${dimsText(output.dims)}, but the model answers ` +
        `${describe(mode, forest)}: set dims: [ ${width} ]`,
    );
  }
  return { numFeatures: forest.numFeatures, mode: { ...mode, width: got } };
}
