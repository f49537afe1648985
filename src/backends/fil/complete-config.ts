/**
 * FIL's config completion, on the main thread at load: reads the forest,
 * fills what auto-complete may fill (input__0 from the model's feature
 * count, output__0 from the output mode, max_batch_size and
 * dynamic_batching), then checks the config against the model.
 */
import type { ModelConfig, ModelInput, ModelOutput } from '../../core/model-config';
import { readForest } from './model-file';
import { readFilParams } from './fil-params';
import { FIL_INPUT, FIL_OUTPUT, filPlan, outputModeOf } from './fil-plan';
import { outputWidth } from './forest-predict';

/** What auto-complete sets max_batch_size to when the config leaves it 0. */
export const FIL_DEFAULT_MAX_BATCH = 1024;

export async function completeFilConfig(config: ModelConfig, modelPath: string, autoComplete: boolean): Promise<ModelConfig> {
  const params = readFilParams(config);
  const forest = readForest(config.name, modelPath, params.modelType);
  const completed: ModelConfig = { ...config, input: [...config.input], output: [...config.output] };
  if (autoComplete) {
    if (completed.max_batch_size === 0) completed.max_batch_size = FIL_DEFAULT_MAX_BATCH;
    if (completed.max_batch_size > 1 && completed.dynamic_batching === undefined && completed.sequence_batching === undefined) {
      completed.dynamic_batching = {
        preferred_batch_size: [],
        max_queue_delay_microseconds: 0,
        preserve_ordering: false,
        priority_levels: 0,
        default_priority_level: 0,
        priority_queue_policy: {},
      };
    }
    if (completed.input.length === 0) completed.input.push(tensor(FIL_INPUT, forest.numFeatures));
    if (completed.output.length === 0) {
      const width = outputWidth(forest, outputModeOf(config.name, forest, params, modelPath));
      completed.output.push(tensor(FIL_OUTPUT, width));
    }
  }
  filPlan(completed, forest, params, modelPath);
  return completed;
}

function tensor(name: string, width: number): ModelInput & ModelOutput {
  return {
    name,
    data_type: 'TYPE_FP32',
    format: 'FORMAT_NONE',
    dims: [width],
    label_filename: '',
    is_shape_tensor: false,
    allow_ragged_batch: false,
    optional: false,
    is_non_linear_format_io: false,
  };
}
