/**
 * Triton's decoupled test backends, `backend: "repeat"` and `backend:
 * "square"` (what Triton's simple_grpc_custom_repeat.py and decoupled
 * examples target): no model file; each instance is a Python stub process,
 * as a Python model's, that runs the model nodetron ships for it
 * (stub/_nt_repeat_model.py, stub/_nt_square_model.py) instead of a
 * model.py. Both need the decoupled transaction policy.
 *   repeat: IN (INT32 [-1]), DELAY (UINT32 [-1]), WAIT (UINT32 [1]) → one
 *     response per element of IN, OUT = IN[i] and IDX = i, DELAY[i] ms apart;
 *     execute returns after WAIT ms; parameter output_num_elements copies OUT.
 *   square: IN (INT32 [1]) = n → n responses of OUT = n.
 * The stub's settings are the Python backend's (`--backend-config=repeat,...`).
 */
import type { Backend } from '../backend';
import { ServerError } from '../../core/errors';
import type { ModelConfig } from '../../core/model-config';
import { parsePythonBackendOptions } from '../../python-backend/backend-options';
import { PythonHost } from '../../python-backend/python-host';

function complete(name: 'repeat' | 'square'): Backend['completeConfig'] {
  return (config: ModelConfig, _modelPath, _autoComplete, backendConfig) => {
    parsePythonBackendOptions(backendConfig);
    if (config.model_transaction_policy?.decoupled !== true) {
      throw new ServerError(
        'INVALID_ARG',
        `model '${config.name}': the '${name}' backend sends several responses per request, so it needs the decoupled transaction policy: add model_transaction_policy { decoupled: true } to config.pbtxt`,
      );
    }
    return Promise.resolve(structuredClone(config));
  };
}

export const repeatBackend: Backend = {
  name: 'repeat',
  defaultModelFilename: '',
  platform: '',
  completeConfig: complete('repeat'),
  instanceModule: '',
  instanceKind: 'process',
  startProcess: (args, services) => PythonHost.start(args, services, 'repeat'),
};

export const squareBackend: Backend = {
  name: 'square',
  defaultModelFilename: '',
  platform: '',
  completeConfig: complete('square'),
  instanceModule: '',
  instanceKind: 'process',
  startProcess: (args, services) => PythonHost.start(args, services, 'square'),
};
