/**
 * Backends nodetron knows, by the config's `backend` name.
 */
import { ServerError } from '../core/errors';
import type { Backend } from './backend';
import { onnxruntimeBackend } from './onnxruntime';
import { pythonBackend } from '../python-backend';

const BACKENDS: Record<string, Backend> = {
  onnxruntime: onnxruntimeBackend,
  python: pythonBackend,
};

export function findBackend(name: string): Backend {
  const b = Object.prototype.hasOwnProperty.call(BACKENDS, name) ? BACKENDS[name] : undefined;
  if (!b) {
    throw new ServerError('INVALID_ARG', `unable to find backend library for backend '${name}', try specifying runtime on the model configuration.`);
  }
  return b;
}

export function backendNames(): string[] {
  return Object.keys(BACKENDS);
}
