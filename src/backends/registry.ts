/**
 * Backends nodetron knows, by the config's `backend` name.
 */
import { ServerError } from '../core/errors';
import { closestName } from '../core/spelling';
import type { Backend } from './backend';
import { onnxruntimeBackend } from './onnxruntime';
import { pytorchBackend } from './pytorch';
import { pythonBackend } from '../python-backend';

const BACKENDS: Record<string, Backend> = {
  onnxruntime: onnxruntimeBackend,
  python: pythonBackend,
  pytorch: pytorchBackend,
};

export function findBackend(name: string): Backend {
  const b = Object.prototype.hasOwnProperty.call(BACKENDS, name) ? BACKENDS[name] : undefined;
  if (!b) throw missingBackend(name);
  return b;
}

/**
 * How to bring a model of a Triton backend nodetron lacks to one it has.
 * Triton's own text ("... try specifying runtime on the model
 * configuration") reads as if the config were wrong; this one says what the
 * server has and what to do.
 */
const CONVERSIONS: Record<string, string> = {
  tensorrt: 'A TensorRT plan cannot be converted back: export the network it was built from to ONNX (the plan is usually built from an ONNX file) and serve that',
  tensorflow: 'Convert the model to ONNX (python -m tf2onnx.convert --saved-model <dir> --output model.onnx) and serve that',
  openvino: 'Serve the ONNX file the OpenVINO IR was made from',
};

/** Triton backends that exist but not in nodetron (an unknown name is more likely a typo). */
const TRITON_BACKENDS = new Set([...Object.keys(CONVERSIONS), 'fil', 'dali', 'tensorrtllm', 'vllm', 'identity', 'repeat', 'square']);

export function missingBackend(name: string): ServerError {
  const have = `nodetron has the backends ${backendNames().join(' and ')}`;
  const prefix = `unable to find backend library for backend '${name}'`;
  if (TRITON_BACKENDS.has(name)) {
    const how = CONVERSIONS[name] ?? 'Convert the model to ONNX and serve it';
    return new ServerError(
      'UNSUPPORTED',
      `${prefix}: ${have}; '${name}' is not available here (yet). ${how} with backend: "onnxruntime", or call it from a Python model (backend: "python").`,
    );
  }
  const meant = name.toLowerCase().includes('onnx') ? 'onnxruntime' : closestName(name, backendNames());
  const fix = meant === undefined ? `name one of them in config.pbtxt` : `did you mean backend: "${meant}"?`;
  return new ServerError('INVALID_ARG', `${prefix}: ${have}; ${fix}`);
}

export function backendNames(): string[] {
  return Object.keys(BACKENDS);
}
