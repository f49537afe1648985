/**
 * The Python backend: Triton model.py files run unchanged in stub child
 * processes, one per instance (stub/), exchanging tensors through shared
 * memory. Each instance's host side runs in its own thread (python-host.ts,
 * python-host-thread.ts). This is the main-thread side the backend registry knows.
 */
import type { Backend } from '../backends/backend';
import { parsePythonBackendOptions } from './backend-options';
import { completePythonConfig } from './complete-config';
import { preparePythonEnvironment } from './execution-env';
import { abortEnvironmentBuilds } from './requirements-env';
import { PythonHost } from './python-host';

export const pythonBackend: Backend = {
  name: 'python',
  defaultModelFilename: 'model.py',
  platform: '',
  completeConfig: completePythonConfig,
  prepare: (config, modelPath, backendConfig, progress) => {
    const opts = parsePythonBackendOptions(backendConfig);
    return preparePythonEnvironment(config, modelPath, opts.interpreter, opts.env, progress);
  },
  abortPrepare: abortEnvironmentBuilds,
  instanceModule: '',
  instanceKind: 'process',
  startProcess: (args, services) => PythonHost.start(args, services),
};
