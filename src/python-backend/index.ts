/**
 * The Python backend: Triton model.py files run unchanged in stub child
 * processes, one per instance (stub/), exchanging tensors through shared
 * memory. This is the main-thread side the backend registry knows.
 */
import type { Backend } from '../backends/backend';
import { completePythonConfig } from './complete-config';
import { PythonStubInstance } from './python-stub-instance';

export const pythonBackend: Backend = {
  name: 'python',
  defaultModelFilename: 'model.py',
  platform: '',
  completeConfig: completePythonConfig,
  instanceModule: '',
  instanceKind: 'process',
  startProcess: (args, services) => PythonStubInstance.start(args, services),
};
