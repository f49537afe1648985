/**
 * Triton FIL's config `parameters`, read and checked once per load (pure,
 * table-tested). What changes the answers: model_type, output_class,
 * predict_proba, threshold. What tunes FIL on a GPU (algo, storage_type,
 * threads_per_tree, blocks_per_sm, transfer_threshold) or FIL's own CPU
 * kernels (use_experimental_optimizations, layout, chunk_size, cpu_nthread)
 * is checked as Triton checks it and then ignored, with one warning each;
 * xgboost_allow_unknown_field needs nothing here: the reader never refuses
 * an unknown field.
 */
import { ServerError } from '../../core/errors';
import type { ModelConfig } from '../../core/model-config';
import { FIL_MODEL_FILES, FIL_MODEL_TYPES } from './model-file';
import type { FilModelType } from './model-file';

export interface FilParams {
  modelType: FilModelType;
  /** undefined: not set; the model's objective decides (a classifier answers classes). */
  outputClass: boolean | undefined;
  predictProba: boolean;
  threshold: number;
}

const GPU_ONLY = ['algo', 'storage_type', 'threads_per_tree', 'blocks_per_sm', 'transfer_threshold'];
const CPU_TUNING = ['use_experimental_optimizations', 'layout', 'chunk_size', 'cpu_nthread'];
const KNOWN = new Set(['model_type', 'output_class', 'predict_proba', 'threshold', 'xgboost_allow_unknown_field', ...GPU_ONLY, ...CPU_TUNING]);
const ALGOS = ['ALGO_AUTO', 'NAIVE', 'TREE_REORG', 'BATCH_TREE_REORG'];
const STORAGE = ['AUTO', 'DENSE', 'SPARSE', 'SPARSE8'];
const LAYOUTS = ['depth_first', 'breadth_first', 'layered'];

function bad(model: string, key: string, want: string, got: string): ServerError {
  return new ServerError('INVALID_ARG', `unable to load model '${model}': parameter '${key}' must be ${want}, got '${got}'`);
}

/** The model_type a config names, else the one its default_model_filename is Triton's default for, else 'xgboost' (Triton's default). */
export function modelTypeOf(config: Pick<ModelConfig, 'name' | 'parameters' | 'default_model_filename'>): FilModelType {
  const text = config.parameters?.['model_type']?.string_value;
  if (text === undefined) {
    const byFile = FIL_MODEL_TYPES.find((t) => FIL_MODEL_FILES[t] === config.default_model_filename);
    return byFile ?? 'xgboost';
  }
  const t = text.trim();
  if (!(FIL_MODEL_TYPES as string[]).includes(t)) {
    throw new ServerError(
      'INVALID_ARG',
      `unable to load model '${config.name}': Unknown model_type '${text}': expected one of ${FIL_MODEL_TYPES.join(', ')} ` +
        `(${FIL_MODEL_TYPES.map((m) => `${m}: ${FIL_MODEL_FILES[m]}`).join(', ')})`,
    );
  }
  return t as FilModelType;
}

export function readFilParams(config: Pick<ModelConfig, 'name' | 'parameters' | 'default_model_filename'>): FilParams {
  const m = config.name;
  const params = config.parameters ?? {};
  const text = (key: string): string | undefined => params[key]?.string_value;
  const bool = (key: string): boolean | undefined => {
    const v = text(key);
    if (v === undefined) return undefined;
    const t = v.trim().toLowerCase();
    if (t === 'true' || t === '1') return true;
    if (t === 'false' || t === '0') return false;
    throw bad(m, key, '"true" or "false"', v);
  };
  const int = (key: string, min: number): void => {
    const v = text(key);
    if (v === undefined) return;
    const n = Number(v);
    if (v.trim() === '' || !Number.isInteger(n) || n < min) throw bad(m, key, min === 0 ? 'a non-negative integer' : 'a positive integer', v);
  };
  const oneOf = (key: string, names: string[], triton: string): void => {
    const v = text(key);
    if (v !== undefined && !names.includes(v.trim())) {
      throw new ServerError('INVALID_ARG', `unable to load model '${m}': ${triton}: ${v} (parameter '${key}' is one of ${names.join(', ')})`);
    }
  };
  const thresholdText = text('threshold');
  let threshold = 0.5;
  if (thresholdText !== undefined) {
    threshold = Number(thresholdText);
    if (thresholdText.trim() === '' || !Number.isFinite(threshold)) throw bad(m, 'threshold', 'a number', thresholdText);
  }
  oneOf('algo', ALGOS, 'Unknown FIL algorithm name');
  oneOf('storage_type', STORAGE, 'Unknown FIL storage type name');
  oneOf('layout', LAYOUTS, 'Unknown FIL layout name');
  for (const key of ['threads_per_tree', 'blocks_per_sm', 'transfer_threshold', 'cpu_nthread']) int(key, 0);
  int('chunk_size', 1);
  bool('use_experimental_optimizations');
  bool('xgboost_allow_unknown_field');
  return {
    modelType: modelTypeOf(config),
    outputClass: bool('output_class'),
    predictProba: bool('predict_proba') ?? false,
    threshold,
  };
}

/** One warning per FIL parameter the config sets that changes nothing here, and per parameter FIL does not have. */
export function filParameterWarnings(config: Pick<ModelConfig, 'name' | 'parameters'>): string[] {
  const m = config.name;
  const out: string[] = [];
  for (const key of Object.keys(config.parameters ?? {})) {
    if (GPU_ONLY.includes(key)) {
      out.push(
        `model '${m}': FIL parameter '${key}' is ignored: it tunes FIL on a GPU, and nodetron evaluates the trees on the CPU. Remove it, or keep it for a Triton with GPUs.`,
      );
    } else if (CPU_TUNING.includes(key)) {
      out.push(
        `model '${m}': FIL parameter '${key}' is ignored: it tunes FIL's own CPU kernels, and nodetron evaluates the trees with its own (one thread per instance: use instance_group count for more).`,
      );
    } else if (!KNOWN.has(key)) {
      out.push(`model '${m}': parameter '${key}' is not a FIL parameter and is ignored (FIL's parameters: ${[...KNOWN].join(', ')}).`);
    }
  }
  return out;
}
