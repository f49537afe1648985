/**
 * `--backend-config=python,<key>=<value>` settings (python_backend.md §3.7).
 * Triton's keys are accepted with Triton's rules; the ones that tune
 * Triton-internal machinery nodetron does not have (message queue size,
 * thread pool, region prefix) are checked and otherwise unused.
 * `stub-timeout-seconds` (default 30), which Triton parses and logs but no
 * wait of its uses, bounds here how long a new stub may take to start (to
 * report alive: interpreter up, its runtime imported), so a start that a
 * loaded machine delays is told apart from a stub that died.
 * `interpreter` is nodetron's own: the Python executable for the stubs
 * (Triton instead links one libpython into its stub binary).
 * `env-cache-dir`, `env-pip-args` and `env-build-timeout-secs` are
 * nodetron's own too, set by the --python-env-* flags: where
 * requirements.txt environments are built, what pip is given beyond
 * `install -r`, and how long a build may take (0: no limit).
 */
import path from 'node:path';
import { ServerError } from '../core/errors';
import { defaultModelCacheDir, pythonEnvCacheDir } from '../core/model-cache-dir';
import { splitPipArgs, type EnvBuildOptions } from './requirements-env';

export interface PythonBackendOptions {
  shmDefaultBytes: number;
  shmGrowthBytes: number;
  /** stub-timeout-seconds in ms: the longest a new stub may take to report alive. */
  stubTimeoutMs: number;
  interpreter: string;
  /** requirements.txt environments (requirements-env.ts). */
  env: EnvBuildOptions;
}

const MIB = 1024 * 1024;

export function parsePythonBackendOptions(cfg: Record<string, string>): PythonBackendOptions {
  const int = (key: string, def: number): number => {
    const text = cfg[key];
    if (text === undefined) return def;
    const n = Number(text);
    if (text.trim() === '' || !Number.isSafeInteger(n)) {
      throw new ServerError('INVALID_ARG', `failed to parse python backend config '${key}': expected an integer, got '${text}'`);
    }
    return n;
  };
  const shmDefaultBytes = int('shm-default-byte-size', MIB);
  // Triton's check is 1 MiB; its message says 4 MiB (kept, as the reference notes).
  if (shmDefaultBytes < MIB) {
    throw new ServerError('INVALID_ARG', "shm-default-byte-size can't be smaller than 4 MiBs");
  }
  const shmGrowthBytes = int('shm-growth-byte-size', MIB);
  if (shmGrowthBytes <= 0) throw new ServerError('INVALID_ARG', 'shm-growth-byte-size can not be less than 1 byte.');
  const stubTimeoutSeconds = int('stub-timeout-seconds', 30);
  if (stubTimeoutSeconds <= 0) throw new ServerError('INVALID_ARG', 'stub-timeout-seconds must be greater than 0');
  if (int('thread-pool-size', 32) < 1) throw new ServerError('INVALID_ARG', 'thread-pool-size must be at least 1');
  int('shm_message_queue_size', 1000);
  if (cfg['shm-region-prefix-name'] === '') throw new ServerError('INVALID_ARG', 'shm-region-prefix-name must not be empty');
  const interpreter = cfg['interpreter'] ?? 'python3';
  if (interpreter === '') throw new ServerError('INVALID_ARG', "python backend config 'interpreter' must not be empty");
  const cacheDir = cfg['env-cache-dir'] ?? pythonEnvCacheDir(defaultModelCacheDir());
  if (cacheDir === '') throw new ServerError('INVALID_ARG', '--python-env-cache-dir must not be empty');
  const timeoutSecs = int('env-build-timeout-secs', 1800);
  if (timeoutSecs < 0) throw new ServerError('INVALID_ARG', `--python-env-build-timeout-secs must be 0 (no limit) or more, got ${timeoutSecs}`);
  const env = { cacheDir: path.resolve(cacheDir), pipArgs: splitPipArgs(cfg['env-pip-args'] ?? ''), timeoutMs: timeoutSecs * 1000 };
  return { shmDefaultBytes, shmGrowthBytes, stubTimeoutMs: stubTimeoutSeconds * 1000, interpreter, env };
}
