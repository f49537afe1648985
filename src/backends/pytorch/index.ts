/**
 * The pytorch backend (Triton's `backend: "pytorch"`): platform
 * `pytorch_libtorch` runs a TorchScript `model.pt`, platform `torch_aoti`
 * an AOTInductor package `model.pt2`. There is no libtorch binding for Node,
 * so each instance is a Python stub process (python-backend/, the same host
 * thread, shared memory and pipe as a Python model) that runs the model
 * nodetron ships for it, stub/_nt_torch_model.py, instead of a model.py:
 * the model author writes no Python. The stub's interpreter must have
 * torch (`--backend-config=pytorch,interpreter=<python3>`, default
 * `python3`); the stub's other settings are the Python backend's
 * (shm-default-byte-size, stub-timeout-seconds, ...), under `pytorch,`.
 */
import type { Backend } from '../backend';
import type { ModelConfig } from '../../core/model-config';
import { parsePythonBackendOptions } from '../../python-backend/backend-options';
import { PythonHost } from '../../python-backend/python-host';

/**
 * Triton's pytorch backend fills nothing in ("skipping model configuration
 * auto-complete ...: not supported for pytorch backend": TorchScript keeps
 * no tensor metadata), so neither does this one; the config's inputs and
 * outputs are checked against the model when an instance loads it.
 */
function completePytorchConfig(config: ModelConfig, _modelPath: string, _autoComplete: boolean, backendConfig: Record<string, string>): Promise<ModelConfig> {
  parsePythonBackendOptions(backendConfig);
  return Promise.resolve(structuredClone(config));
}

export const pytorchBackend: Backend = {
  name: 'pytorch',
  defaultModelFilename: 'model.pt',
  platform: 'pytorch_libtorch',
  completeConfig: completePytorchConfig,
  instanceModule: '',
  instanceKind: 'process',
  startProcess: (args, services) => PythonHost.start(args, services, 'pytorch'),
};
