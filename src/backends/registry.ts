/**
 * Backends nodetron knows, by the config's `backend` name.
 */
import { ServerError } from '../core/errors';
import { closestName } from '../core/spelling';
import type { Backend } from './backend';
import { onnxruntimeBackend } from './onnxruntime';
import { filBackend } from './fil';
import { pytorchBackend } from './pytorch';
import { identityBackend } from './identity';
import { repeatBackend, squareBackend } from './decoupled-test';
import { pythonBackend } from '../python-backend';

const BACKENDS: Record<string, Backend> = {
  onnxruntime: onnxruntimeBackend,
  python: pythonBackend,
  fil: filBackend,
  pytorch: pytorchBackend,
  identity: identityBackend,
  repeat: repeatBackend,
  square: squareBackend,
};

export function findBackend(name: string): Backend {
  const b = Object.prototype.hasOwnProperty.call(BACKENDS, name) ? BACKENDS[name] : undefined;
  if (!b) throw missingBackend(name);
  return b;
}

/**
 * How to bring a model of a Triton backend nodetron lacks to ONNX, which it
 * has. Triton's own text ("... try specifying runtime on the model
 * configuration") reads as if the config were wrong; this one says what the
 * server has and what to do.
 */
const CONVERSIONS: Record<string, string> = {
  tensorrt:
    'A TensorRT plan cannot be converted back: export the network it was built from to ONNX (the plan is usually built from an ONNX file) and serve that',
  tensorflow: 'Convert the model to ONNX (python -m tf2onnx.convert --saved-model <dir> --output model.onnx) and serve that',
  openvino: 'Serve the ONNX file the OpenVINO IR was made from',
};

/** Triton backends whose usual way out is not an ONNX file: the whole advice. */
const OTHER_WAYS: Record<string, string> = {
  dali: 'DALI pipelines run on NVIDIA GPUs: do the preprocessing in a Python model (backend: "python", with numpy or Pillow) and chain it before the model in an ensemble (platform: "ensemble").',
  vllm: 'Serve the LLM from a Python model (backend: "python") that runs it on the CPU (transformers, llama.cpp bindings) and sends tokens as a decoupled model; model_repository/tiny_llm is one, and /v1/chat/completions serves such models.',
  tensorrtllm:
    'TensorRT-LLM engines run only on NVIDIA GPUs: serve the model\'s Hugging Face checkpoint from a Python model (backend: "python") as a decoupled model; model_repository/tiny_llm is one, and /v1/chat/completions serves such models.',
};

/** Triton backends that exist but not in nodetron (an unknown name is more likely a typo). */
const TRITON_BACKENDS = new Set([...Object.keys(CONVERSIONS), ...Object.keys(OTHER_WAYS)]);

export function missingBackend(name: string): ServerError {
  const have = `nodetron has the backends ${listText(backendNames())}`;
  const prefix = `unable to find backend library for backend '${name}'`;
  if (TRITON_BACKENDS.has(name)) {
    const other = OTHER_WAYS[name];
    const how =
      other ??
      `${CONVERSIONS[name] ?? 'Convert the model to ONNX and serve it'} with backend: "onnxruntime", or call it from a Python model (backend: "python").`;
    return new ServerError('UNSUPPORTED', `${prefix}: ${have}; '${name}' is not available here (yet). ${how}`);
  }
  const meant = name.toLowerCase().includes('onnx') ? 'onnxruntime' : closestName(name, backendNames());
  const fix = meant === undefined ? `name one of them in config.pbtxt` : `did you mean backend: "${meant}"?`;
  return new ServerError('INVALID_ARG', `${prefix}: ${have}; ${fix}`);
}

export function backendNames(): string[] {
  return Object.keys(BACKENDS);
}

/** The server is stopping: every backend ends the load preparation it has in progress (Backend.abortPrepare). */
export function abortPreparations(): void {
  for (const b of Object.values(BACKENDS)) b.abortPrepare?.();
}

/** "a", "a and b", "a, b and c". */
export function listText(names: readonly string[]): string {
  if (names.length <= 1) return names.join('');
  return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}
