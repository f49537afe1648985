/**
 * `EXECUTION_ENV_PATH` in a Python model's config parameters
 * (python_backend.md §3.8): the stub runs with that environment's
 * `bin/python3`, with the variables Triton sets instead of running
 * `activate` (VIRTUAL_ENV, VIRTUAL_ENV_PROMPT, PATH and LD_LIBRARY_PATH
 * first entries, no PYTHONHOME). The path is an unpacked environment
 * directory or a packed one (`.tar.gz`/`.tgz`, as conda-pack makes), which
 * is extracted once into `<tmpdir>/nodetron_python_env/<sha256 of the file>`
 * (a new file content is a new directory; concurrent loads extract into
 * private folders and rename, so one wins and the others reuse it).
 * `$$TRITON_MODEL_DIRECTORY` is replaced by the model directory, and the
 * result must then stay inside it.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ServerError } from '../core/errors';
import type { ModelConfig } from '../core/model-config';
import { MODEL_DIR_VAR, ensureEnvironment, requirementsFile, type EnvBuildHooks, type EnvBuildOptions } from './requirements-env';

const run = promisify(execFile);

export interface StubRuntime {
  /** The Python executable for the stub. */
  interpreter: string;
  /** Environment for the stub process (undefined: the server's own). */
  env?: NodeJS.ProcessEnv;
  /** The requirements file the environment was built from (requirements-env.ts). */
  requirements?: string;
}

/** A model version's requirements.txt, for a runtime that builds one (the Python backend's, not PyTorch's built-in stub). */
export interface RequirementsContext {
  version: number;
  options: EnvBuildOptions;
  hooks: EnvBuildHooks;
}

/**
 * The stub runtime of a model: its EXECUTION_ENV_PATH environment, else the
 * environment built from its requirements.txt (with `requirements`), else
 * the backend's interpreter. EXECUTION_ENV_PATH wins when both are given.
 */
export async function stubRuntime(config: ModelConfig, modelDir: string, interpreter: string, requirements?: RequirementsContext): Promise<StubRuntime> {
  const raw = config.parameters?.['EXECUTION_ENV_PATH']?.string_value;
  if (raw === undefined || raw === '') {
    const file = requirements === undefined ? undefined : requirementsFile(config, modelDir, requirements.version);
    if (file === undefined || requirements === undefined) return { interpreter };
    const dir = await ensureEnvironment(config.name, file, interpreter, requirements.options, requirements.hooks);
    return { interpreter: path.join(dir, 'bin', 'python3'), env: activatedEnv(dir, process.env), requirements: file };
  }
  const envPath = await resolveEnvPath(raw, modelDir);
  if (!fs.existsSync(path.join(envPath, 'bin', 'activate'))) {
    throw new ServerError('INVALID_ARG', `Path ${envPath}/bin/activate does not exist. The Python environment should contain an 'activate' script.`);
  }
  const python = path.join(envPath, 'bin', 'python3');
  if (!fs.existsSync(python)) throw new ServerError('INVALID_ARG', `Path ${python} does not exist: the Python environment has no bin/python3`);
  return { interpreter: python, env: activatedEnv(envPath, process.env) };
}

/**
 * Backend.prepare of the Python backend: the newest version's requirements
 * environment is built here, on the main thread with the model's state
 * reason, so its config completion and instances find it ready.
 */
export async function preparePythonEnvironment(
  config: ModelConfig,
  modelPath: string,
  interpreter: string,
  options: EnvBuildOptions,
  progress: EnvBuildHooks,
): Promise<void> {
  const versionDir = path.dirname(modelPath);
  const modelDir = path.dirname(versionDir);
  const version = Number(path.basename(versionDir));
  const file = requirementsFile(config, modelDir, version);
  if (file === undefined) return;
  const given = config.parameters?.['EXECUTION_ENV_PATH']?.string_value;
  if (given !== undefined && given !== '') {
    progress.info(`model '${config.name}': ${file} is not built: the model's EXECUTION_ENV_PATH '${given}' is its environment`);
    return;
  }
  await ensureEnvironment(config.name, file, interpreter, options, progress);
}

/** The variables `activate` would set, on a copy of `base`. */
export function activatedEnv(envPath: string, base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env = { ...base };
  env['VIRTUAL_ENV'] = envPath;
  env['VIRTUAL_ENV_PROMPT'] = `(${path.basename(envPath)}) `;
  env['PATH'] = [path.join(envPath, 'bin'), base['PATH']].filter((p) => p !== undefined && p !== '').join(':');
  env['LD_LIBRARY_PATH'] = [path.join(envPath, 'lib'), base['LD_LIBRARY_PATH']].filter((p) => p !== undefined && p !== '').join(':');
  delete env['PYTHONHOME'];
  return env;
}

async function resolveEnvPath(raw: string, modelDir: string): Promise<string> {
  let p = raw;
  if (raw.includes(MODEL_DIR_VAR)) {
    p = path.resolve(raw.split(MODEL_DIR_VAR).join(modelDir));
    const rel = path.relative(path.resolve(modelDir), p);
    if (rel.startsWith('..') || path.isAbsolute(rel)) {
      throw new ServerError('INVALID_ARG', `EXECUTION_ENV_PATH '${raw}' points outside the model directory '${modelDir}'`);
    }
  } else {
    p = path.resolve(modelDir, raw);
  }
  let stat: fs.Stats;
  try {
    stat = fs.statSync(p);
  } catch {
    throw new ServerError('INVALID_ARG', `EXECUTION_ENV_PATH '${p}' does not exist`);
  }
  if (stat.isDirectory()) return p;
  if (/\.(tar\.gz|tgz)$/.test(p)) return unpacked(p);
  throw new ServerError('INVALID_ARG', `EXECUTION_ENV_PATH '${p}' is neither a directory nor a .tar.gz archive`);
}

/** Extract `archive` once per content into the cache; returns the environment directory. */
async function unpacked(archive: string): Promise<string> {
  const hash = crypto.createHash('sha256').update(fs.readFileSync(archive)).digest('hex').slice(0, 32);
  const cache = path.join(os.tmpdir(), 'nodetron_python_env');
  const target = path.join(cache, hash);
  if (fs.existsSync(target)) return target;
  fs.mkdirSync(cache, { recursive: true });
  const listing = await tar(['-tzf', archive]);
  for (const entry of listing.split('\n')) {
    if (entry === '') continue;
    // "Zip slip": no member may land outside the extraction folder.
    if (path.isAbsolute(entry) || entry.split('/').includes('..')) {
      throw new ServerError('INVALID_ARG', `EXECUTION_ENV_PATH archive '${archive}' has an entry outside its folder: '${entry}'`);
    }
  }
  const work = fs.mkdtempSync(path.join(cache, `.${hash}-`));
  try {
    await tar(['-xzf', archive, '-C', work, '--no-same-owner']);
    try {
      fs.renameSync(work, target);
    } catch (err) {
      if (!fs.existsSync(target)) throw err; // someone else won the race: theirs is as good
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return target;
}

async function tar(args: string[]): Promise<string> {
  try {
    const { stdout } = await run('tar', args, { maxBuffer: 256 * 1024 * 1024 });
    return stdout;
  } catch (err) {
    throw new ServerError('INVALID_ARG', `failed to unpack the EXECUTION_ENV_PATH archive: ${(err as Error).message}`);
  }
}
