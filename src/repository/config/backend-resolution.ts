/**
 * Triton's server-side auto-fill of `backend`, `platform` and
 * `default_model_filename` (protocol.md §3.12), from the config, the file
 * names in the first version directory and the model directory name. Runs
 * before the backend's own auto-complete (which adds inputs/outputs).
 */
import { ServerError } from '../../core/errors';
import type { ModelConfig } from '../../core/model-config';

export const ENSEMBLE_PLATFORM = 'ensemble';

const TF_SAVEDMODEL_PLATFORM = 'tensorflow_savedmodel';
const TF_GRAPHDEF_PLATFORM = 'tensorflow_graphdef';
const TF_SAVEDMODEL_FILE = 'model.savedmodel';
const TF_GRAPHDEF_FILE = 'model.graphdef';
const TRT_PLATFORM = 'tensorrt_plan';
const TRT_FILE = 'model.plan';
const ORT_PLATFORM = 'onnxruntime_onnx';
const ORT_FILE = 'model.onnx';
const OPENVINO_FILE = 'model.xml';
const TORCH_PLATFORM = 'pytorch_libtorch';
const TORCH_PLATFORM_ALT = 'libtorch';
const TORCH_FILE = 'model.pt';
const TORCH_AOTI_PLATFORM = 'torch_aoti';
const TORCH_AOTI_FILE = 'model.pt2';
const PYTHON_FILE = 'model.py';
export type FilModelType = 'xgboost' | 'xgboost_json' | 'xgboost_ubj' | 'lightgbm' | 'treelite_checkpoint';

/** Triton FIL's default model file of each model_type parameter (its default model_type is 'xgboost'). */
export const FIL_MODEL_FILES: Record<FilModelType, string> = {
  xgboost: 'xgboost.model',
  xgboost_json: 'xgboost.json',
  xgboost_ubj: 'xgboost.ubj',
  lightgbm: 'model.txt',
  treelite_checkpoint: 'checkpoint.tl',
};

export interface ResolveOptions {
  /**
   * Whether a version-directory entry is a directory. Triton requires
   * model.savedmodel to be a directory and model.graphdef / model.plan /
   * model.pt / model.pt2 to be files. Default: only model.savedmodel is
   * taken as a directory.
   */
  isDirectory?: (entry: string) => boolean;
}

/** The model file a backend loads when the config names none. */
export function defaultModelFilename(backend: string, platform: string): string {
  switch (backend) {
    case 'onnxruntime':
      return ORT_FILE;
    case 'tensorrt':
      return TRT_FILE;
    case 'openvino':
      return OPENVINO_FILE;
    case 'python':
      return PYTHON_FILE;
    case 'pytorch':
      return platform === TORCH_AOTI_PLATFORM ? TORCH_AOTI_FILE : TORCH_FILE;
    case 'tensorflow':
      return platform === TF_SAVEDMODEL_PLATFORM ? TF_SAVEDMODEL_FILE : TF_GRAPHDEF_FILE;
    default:
      return '';
  }
}

/**
 * Returns a copy of `config` with name, backend, platform and
 * default_model_filename filled in the way Triton fills them. Throws
 * INVALID_ARG when nothing determines a backend.
 */
export function resolveBackend(config: ModelConfig, versionDirEntries: string[], modelDirName: string, opts: ResolveOptions = {}): ModelConfig {
  const c: ModelConfig = { ...config };
  c.name = c.name || modelDirName;
  c.platform = c.platform ?? '';
  c.backend = c.backend ?? '';
  c.default_model_filename = c.default_model_filename ?? '';
  fillBackendFields(c, new Set(versionDirEntries), modelDirName, opts.isDirectory ?? ((e) => e === TF_SAVEDMODEL_FILE));
  if (c.backend === '' && c.platform !== ENSEMBLE_PLATFORM) {
    // What Triton's validation reports for such a config; nothing could load it.
    throw new ServerError('INVALID_ARG', `unexpected platform type '${c.platform}' for ${c.name}`);
  }
  return c;
}

/** Triton's fill order: TensorFlow, TensorRT, ONNX Runtime, OpenVINO, PyTorch, Python, custom. */
function fillBackendFields(c: ModelConfig, files: Set<string>, modelDirName: string, isDir: (entry: string) => boolean): void {
  // Detection from files only when neither platform nor model file is given.
  const canScan = (): boolean => c.platform === '' && c.default_model_filename === '';
  const hasFile = (f: string): boolean => files.has(f) && !isDir(f);

  // TensorFlow needs a platform; derive it from the file name or the files.
  if (c.platform === '' && (c.backend === '' || c.backend === 'tensorflow')) {
    if (c.default_model_filename === TF_SAVEDMODEL_FILE) c.platform = TF_SAVEDMODEL_PLATFORM;
    else if (c.default_model_filename === TF_GRAPHDEF_FILE) c.platform = TF_GRAPHDEF_PLATFORM;
    else if (c.default_model_filename === '') {
      if (files.has(TF_SAVEDMODEL_FILE) && isDir(TF_SAVEDMODEL_FILE)) c.platform = TF_SAVEDMODEL_PLATFORM;
      if (hasFile(TF_GRAPHDEF_FILE)) c.platform = TF_GRAPHDEF_PLATFORM;
    }
  }
  if (c.platform === TF_SAVEDMODEL_PLATFORM || c.platform === TF_GRAPHDEF_PLATFORM) {
    if (c.backend === '') c.backend = 'tensorflow';
    if (c.default_model_filename === '') c.default_model_filename = defaultModelFilename('tensorflow', c.platform);
    return;
  }

  if (c.backend === '') {
    if (c.platform === TRT_PLATFORM || c.default_model_filename === TRT_FILE) c.backend = 'tensorrt';
    else if (canScan() && hasFile(TRT_FILE)) c.backend = 'tensorrt';
  }
  if (c.backend === 'tensorrt') {
    if (c.platform === '') c.platform = TRT_PLATFORM;
    if (c.default_model_filename === '') c.default_model_filename = TRT_FILE;
    return;
  }

  if (c.backend === '') {
    if (c.platform === ORT_PLATFORM || c.default_model_filename === ORT_FILE) c.backend = 'onnxruntime';
    // An ONNX model may be a directory (large models), so no file check.
    else if (canScan() && files.has(ORT_FILE)) c.backend = 'onnxruntime';
  }
  if (c.backend === 'onnxruntime') {
    if (c.platform === '') c.platform = ORT_PLATFORM;
    if (c.default_model_filename === '') c.default_model_filename = ORT_FILE;
    return;
  }

  if (c.backend === '') {
    if (c.default_model_filename === OPENVINO_FILE) c.backend = 'openvino';
    else if (canScan() && files.has(OPENVINO_FILE)) c.backend = 'openvino';
  }
  if (c.backend === 'openvino') {
    if (c.default_model_filename === '') c.default_model_filename = OPENVINO_FILE;
    return;
  }

  if (c.backend === '') {
    const p = c.platform;
    const f = c.default_model_filename;
    if (p === TORCH_PLATFORM || p === TORCH_PLATFORM_ALT || f === TORCH_FILE) c.backend = 'pytorch';
    else if (p === TORCH_AOTI_PLATFORM || f === TORCH_AOTI_FILE) c.backend = 'pytorch';
    else if (canScan() && hasFile(TORCH_FILE)) {
      c.backend = 'pytorch';
      c.platform = TORCH_PLATFORM;
    } else if (canScan() && hasFile(TORCH_AOTI_FILE)) {
      c.backend = 'pytorch';
      c.platform = TORCH_AOTI_PLATFORM;
    }
  }
  if (c.backend === 'pytorch') {
    // Triton only fills the file name when it also fills the platform (or for AOTI).
    if (c.platform === '') {
      c.platform = TORCH_PLATFORM;
      if (c.default_model_filename === '') c.default_model_filename = TORCH_FILE;
    } else if (c.platform === TORCH_AOTI_PLATFORM && c.default_model_filename === '') {
      c.default_model_filename = TORCH_AOTI_FILE;
    }
    return;
  }

  if (c.backend === 'fil') {
    // An unknown model_type is left for the backend to refuse with the list of types.
    const type = c.parameters?.['model_type']?.string_value?.trim() ?? 'xgboost';
    if (c.default_model_filename === '') c.default_model_filename = Object.hasOwn(FIL_MODEL_FILES, type) ? FIL_MODEL_FILES[type as FilModelType] : '';
    return;
  }

  if (c.backend === '') {
    if (c.default_model_filename === PYTHON_FILE) c.backend = 'python';
    else if (canScan() && files.has(PYTHON_FILE)) c.backend = 'python';
  }
  if (c.backend === 'python') {
    if (c.default_model_filename === '') c.default_model_filename = PYTHON_FILE;
    return;
  }

  // Custom backend: only when the config says nothing, the directory name
  // `<x>.<backend>` names it (split at the first '.').
  if (c.backend === '' && c.platform === '' && c.default_model_filename === '') {
    const dot = modelDirName.indexOf('.');
    if (dot < 0) {
      throw new ServerError(
        'INVALID_ARG',
        `Invalid model name: Could not determine backend for model '${modelDirName}' with no backend in model ` +
          "configuration. Expected model name of the form 'model.<backend_name>'.",
      );
    }
    c.backend = modelDirName.slice(dot + 1);
    c.default_model_filename = `model.${c.backend}`;
  }
}
