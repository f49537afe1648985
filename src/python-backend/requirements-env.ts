/**
 * A Python model's `requirements.txt` (in its version folder or its model
 * folder, or the file its PIP_REQUIREMENTS parameter names) built into a
 * virtual environment on the model's interpreter: `python -m venv
 * --system-site-packages` (what the interpreter has stays visible, numpy
 * among it) and `pip install -r`, with whatever index and options pip is
 * configured for on the machine plus --python-env-pip-args. Built once per
 * content: the folder is `<cache>/<hash of the file's text and the
 * interpreter's version, platform and path>`, so two models with the same
 * file share it and an edited file is a new folder beside the old one.
 * A build holds `<folder>.lock` (env-lock.ts) and is trusted only once it
 * wrote its ready marker last; a folder without one (a build that died) is
 * removed and built again. The stub then runs in it as in an
 * EXECUTION_ENV_PATH environment (execution-env.ts).
 */
import { execFile, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { promisify } from 'node:util';
import { ServerError } from '../core/errors';
import type { ModelConfig } from '../core/model-config';
import { acquireLock } from './env-lock';
import { PipOutput } from './pip-output';

const run = promisify(execFile);
/** In EXECUTION_ENV_PATH and PIP_REQUIREMENTS: replaced by the model's folder. */
export const MODEL_DIR_VAR = '$$TRITON_MODEL_DIRECTORY';
const READY_MARKER = 'nodetron-env-ready.json';
export const BUILDING_REASON = 'building environment';

export interface EnvBuildOptions {
  /** --python-env-cache-dir */
  cacheDir: string;
  /** --python-env-pip-args, split on spaces */
  pipArgs: string[];
  /** --python-env-build-timeout-secs in ms: the whole build (venv and pip); 0 = no limit. */
  timeoutMs: number;
}

/** Where a build reports: log lines, and the model's state reason while it builds. */
export interface EnvBuildHooks {
  info(text: string): void;
  verbose(text: string): void;
  /** BUILDING_REASON when a build starts, undefined when it ends. */
  stage?(reason: string | undefined): void;
}

/** Build hooks that log to `log` (info at info, the rest at verbose 1). */
export function logHooks(log: { info(text: string): void; verbose(level: number, text: string): void }): EnvBuildHooks {
  return { info: (t) => log.info(t), verbose: (t) => log.verbose(1, t) };
}

/** The requirements file of a model version, if it has one. */
export function requirementsFile(config: ModelConfig, modelDir: string, version: number): string | undefined {
  const named = config.parameters?.['PIP_REQUIREMENTS']?.string_value;
  if (named !== undefined && named !== '') {
    const p = path.resolve(modelDir, named.split(MODEL_DIR_VAR).join(modelDir));
    if (!fs.existsSync(p)) {
      throw new ServerError(
        'INVALID_ARG',
        `PIP_REQUIREMENTS '${named}' of model '${config.name}' does not exist (looked for ${p}): name a requirements file relative to the model folder`,
      );
    }
    return p;
  }
  for (const p of [path.join(modelDir, String(version), 'requirements.txt'), path.join(modelDir, 'requirements.txt')]) {
    if (fs.existsSync(p)) return path.resolve(p);
  }
  return undefined;
}

const identities = new Map<string, Promise<string>>();

/** The interpreter's version, platform and real path, as one string (asked once per interpreter). */
export function interpreterIdentity(interpreter: string): Promise<string> {
  let known = identities.get(interpreter);
  if (known === undefined) {
    const script = 'import sys, sysconfig, os; print(sys.version.split()[0]); print(sysconfig.get_platform()); print(os.path.realpath(sys.executable))';
    known = run(interpreter, ['-c', script]).then(
      ({ stdout }) => stdout.trim(),
      (err: Error) => {
        identities.delete(interpreter);
        throw new ServerError(
          'INTERNAL',
          `cannot run the Python interpreter '${interpreter}' to build a model environment: ${err.message}. Install python3 or name one with --backend-config=python,interpreter=<path>`,
        );
      },
    );
    identities.set(interpreter, known);
  }
  return known;
}

/** The environment folder for `requirements` on `interpreter` (not yet built, maybe). */
export async function environmentDir(requirements: string, interpreter: string, cacheDir: string): Promise<string> {
  const text = fs.readFileSync(requirements, 'utf8');
  const id = await interpreterIdentity(interpreter);
  const key = crypto.createHash('sha256').update(text).update('\0').update(id).digest('hex').slice(0, 24);
  return path.join(cacheDir, key);
}

const building = new Map<string, Promise<string>>();

/** The built environment folder for `requirements`: from the cache, or built now. */
export async function ensureEnvironment(
  model: string,
  requirements: string,
  interpreter: string,
  opts: EnvBuildOptions,
  hooks: EnvBuildHooks,
): Promise<string> {
  const dir = await environmentDir(requirements, interpreter, opts.cacheDir);
  if (isReady(dir)) {
    hooks.verbose(`model '${model}': Python environment for ${requirements} is ${dir} (built before)`);
    return dir;
  }
  let pending = building.get(dir);
  if (pending === undefined) {
    pending = buildLocked(model, requirements, interpreter, dir, opts, hooks).finally(() => building.delete(dir));
    building.set(dir, pending);
  } else {
    hooks.stage?.(BUILDING_REASON);
    await pending.catch(() => undefined);
    hooks.stage?.(undefined);
  }
  return pending;
}

function isReady(dir: string): boolean {
  return fs.existsSync(path.join(dir, READY_MARKER));
}

async function buildLocked(
  model: string,
  requirements: string,
  interpreter: string,
  dir: string,
  opts: EnvBuildOptions,
  hooks: EnvBuildHooks,
): Promise<string> {
  try {
    fs.mkdirSync(opts.cacheDir, { recursive: true });
  } catch (err) {
    throw new ServerError(
      'INTERNAL',
      `cannot create the Python environment cache folder ${opts.cacheDir} (${(err as NodeJS.ErrnoException).code}): point --python-env-cache-dir at a folder the server can write`,
    );
  }
  hooks.stage?.(BUILDING_REASON);
  try {
    const lock = await acquireLock(
      `${dir}.lock`,
      () => isReady(dir),
      (owner) => hooks.info(`model '${model}': waiting for ${owner} to finish building the Python environment ${dir}`),
    );
    if (lock === undefined) return dir;
    try {
      if (isReady(dir)) return dir;
      await build(model, requirements, interpreter, dir, opts, hooks);
      return dir;
    } finally {
      lock.release();
    }
  } finally {
    hooks.stage?.(undefined);
  }
}

async function build(model: string, requirements: string, interpreter: string, dir: string, opts: EnvBuildOptions, hooks: EnvBuildHooks): Promise<void> {
  const started = performance.now();
  if (fs.existsSync(dir)) hooks.info(`model '${model}': ${dir} is a build that did not finish: building it again`);
  fs.rmSync(dir, { recursive: true, force: true });
  hooks.info(`model '${model}': building the Python environment for ${requirements} in ${dir}`);
  const deadline = opts.timeoutMs > 0 ? started + opts.timeoutMs : Infinity;
  try {
    await steps(model, requirements, interpreter, dir, opts, hooks, deadline);
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const seconds = (performance.now() - started) / 1000;
  const marker = path.join(dir, READY_MARKER);
  fs.writeFileSync(`${marker}.tmp`, JSON.stringify({ requirements, interpreter, builtAt: new Date().toISOString(), seconds }));
  fs.renameSync(`${marker}.tmp`, marker);
  hooks.info(`model '${model}': built the Python environment in ${seconds.toFixed(1)} s`);
}

async function steps(
  model: string,
  requirements: string,
  interpreter: string,
  dir: string,
  opts: EnvBuildOptions,
  hooks: EnvBuildHooks,
  deadline: number,
): Promise<void> {
  const cwd = path.dirname(requirements);
  const stream = (cmd: string, args: string[], out: PipOutput): Promise<number> => streamUntil(cmd, args, cwd, out, hooks, model, deadline, opts.timeoutMs);
  const venv = new PipOutput();
  // Without pip of its own (ensurepip takes seconds): the interpreter's pip installs into it (pip --python).
  const venvCode = await stream(interpreter, ['-m', 'venv', '--system-site-packages', '--without-pip', dir], venv);
  if (venvCode !== 0) {
    throw new ServerError(
      'INTERNAL',
      `failed to build the Python environment for model '${model}': '${interpreter} -m venv' exited with code ${venvCode}: ` +
        `${venv.errorLines().join('\n')}\nInstall the interpreter's venv module (Debian: apt-get install python3-venv), or give the model an EXECUTION_ENV_PATH environment`,
    );
  }
  const envPython = path.join(dir, 'bin', 'python3');
  const install = ['install', '--disable-pip-version-check', '--no-input', '--progress-bar', 'off', '-r', requirements, ...opts.pipArgs];
  let pip = new PipOutput();
  let code = await stream(interpreter, ['-m', 'pip', '--python', envPython, ...install], pip);
  if (code !== 0 && pip.lacksPipPython()) {
    hooks.info(`model '${model}': ${interpreter} has no pip that installs into another environment (pip >= 22.3): the environment gets its own`);
    const ensure = new PipOutput();
    const ensured = await stream(envPython, ['-m', 'ensurepip', '--default-pip'], ensure);
    if (ensured !== 0) {
      throw new ServerError(
        'INTERNAL',
        `failed to build the Python environment for model '${model}': neither ${interpreter} nor the new environment has pip (ensurepip exited with code ${ensured}): ` +
          `${ensure.errorLines().join('\n')}\nInstall pip for the interpreter (Debian: apt-get install python3-pip python3-venv)`,
      );
    }
    pip = new PipOutput();
    code = await stream(envPython, ['-m', 'pip', ...install], pip);
  }
  if (code !== 0) {
    const on = pip.current === undefined ? '' : ` while installing '${pip.current}'`;
    throw new ServerError(
      'INTERNAL',
      `failed to build the Python environment for model '${model}' from ${requirements}: pip exited with code ${code}${on}:\n` +
        `${pip.errorLines().join('\n')}\nFix the requirement, or build without a package index: give pip a wheelhouse folder ` +
        `(--python-env-pip-args='--no-index --find-links <dir>'), or pack an environment and name it in the model's EXECUTION_ENV_PATH parameter`,
    );
  }
}

/** Process groups of the builds running now: ended if the server stops or exits first (they are groups of their own). */
const runningGroups = new Set<number>();
let exitHooked = false;
let stopping = false;

/** The server is stopping: end every build now (each fails its model's load, saying so), and start none. */
export function abortEnvironmentBuilds(): void {
  stopping = true;
  killRunningGroups();
}

function killRunningGroups(): void {
  for (const pid of runningGroups) killGroup(pid);
}

/** SIGKILL process group `pid`; false when there is none (it ended). */
function killGroup(pid: number): boolean {
  try {
    process.kill(-pid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}

function endRunningGroupsAtExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  process.once('exit', killRunningGroups);
}

/**
 * Run `cmd`, each output line to `out` and the log; resolves with the exit
 * code. Past `deadline` (performance.now() ms) the command is killed and the
 * build fails, naming the limit.
 */
function streamUntil(
  cmd: string,
  args: string[],
  cwd: string,
  out: PipOutput,
  hooks: EnvBuildHooks,
  model: string,
  deadline: number,
  timeoutMs: number,
): Promise<number> {
  return new Promise((resolve, reject) => {
    if (stopping) {
      reject(new ServerError('UNAVAILABLE', `the server is stopping: the Python environment for model '${model}' is not built`));
      return;
    }
    // A process group of its own: a timeout ends pip and whatever it started (pip --python runs a second pip).
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PIP_NO_INPUT: '1' }, detached: true });
    if (child.pid !== undefined) {
      runningGroups.add(child.pid);
      endRunningGroupsAtExit();
    }
    const take = (line: string): void => {
      const text = `model '${model}' environment: ${line.trimEnd()}`;
      if (out.line(line) === 'info') hooks.info(text);
      else hooks.verbose(text);
    };
    readline.createInterface({ input: child.stdout }).on('line', take);
    readline.createInterface({ input: child.stderr }).on('line', take);
    let timedOut = false;
    const left = deadline - performance.now();
    const timer = Number.isFinite(left)
      ? setTimeout(
          () => {
            timedOut = true;
            if (!killGroup(child.pid!)) child.kill('SIGKILL'); // the group is gone: the child at least
          },
          Math.max(0, left),
        )
      : undefined;
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new ServerError('INTERNAL', `cannot run ${cmd} to build the Python environment for model '${model}': ${err.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (child.pid !== undefined) runningGroups.delete(child.pid);
      if (stopping) {
        reject(new ServerError('UNAVAILABLE', `the server is stopping: the build of the Python environment for model '${model}' was ended`));
        return;
      }
      if (timedOut) {
        const on = out.current === undefined ? '' : ` (it was on '${out.current}')`;
        reject(
          new ServerError(
            'INTERNAL',
            `failed to build the Python environment for model '${model}': the build did not finish within ` +
              `${timeoutMs / 1000} s (--python-env-build-timeout-secs)${on}; its last lines:\n${out.errorLines().join('\n')}\n` +
              'Give it longer, point pip at a closer index or a wheelhouse (--python-env-pip-args), or pack an environment for EXECUTION_ENV_PATH',
          ),
        );
        return;
      }
      resolve(code ?? (signal === null ? 1 : 128));
    });
  });
}

/** --python-env-pip-args as pip's argv: split on whitespace, quotes group. */
export function splitPipArgs(text: string): string[] {
  const out: string[] = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) out.push(m[1] ?? m[2] ?? m[3] ?? '');
  return out;
}
