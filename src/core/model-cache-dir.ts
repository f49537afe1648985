/**
 * --model-cache-dir's default, one folder per user under the OS temp folder
 * (cloud repository mirrors), and --python-env-cache-dir's, a folder in it
 * (requirements.txt environments), for the CLI and for a Python backend
 * set up without it.
 */
import os from 'node:os';
import path from 'node:path';

export function defaultModelCacheDir(): string {
  const uid = typeof process.getuid === 'function' ? `-${process.getuid()}` : '';
  return path.join(os.tmpdir(), `nodetron-model-cache${uid}`);
}

/** Where requirements.txt environments go inside a model cache folder. */
export function pythonEnvCacheDir(modelCacheDir: string): string {
  return path.join(modelCacheDir, 'python-envs');
}
