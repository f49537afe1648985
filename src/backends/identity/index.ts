/**
 * The identity backend (Triton's `backend: "identity"`, the test backend
 * Triton's own tests and perf_analyzer examples build pipelines with): each
 * requested OUTPUT<i> is a copy of INPUT<i>, same data type and shape, BYTES
 * included; no model file (the version folder may be empty). Instances run
 * on worker threads like any in-process backend (identity-instance.ts).
 */
import path from 'node:path';
import type { Backend } from '../backend';
import { checkIdentityConfig, identityDelay } from './identity-config';

export const identityBackend: Backend = {
  name: 'identity',
  defaultModelFilename: '',
  platform: '',
  completeConfig: (config) => {
    checkIdentityConfig(config);
    identityDelay(config, 'execute_delay_ms');
    identityDelay(config, 'creation_delay_sec');
    return Promise.resolve(structuredClone(config));
  },
  instanceModule: path.join(__dirname, 'identity-instance.js'),
};
