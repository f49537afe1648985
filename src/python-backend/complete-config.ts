/**
 * Backend.completeConfig of the Python backend: like Triton, run the model's
 * `auto_complete_config(pb_utils.ModelConfig)` in a short-lived stub (before
 * any instance starts) and take back what the ModelConfig helpers may change:
 * max_batch_size, inputs, outputs, dynamic_batching, the transaction policy.
 */
import path from 'node:path';
import { ServerError } from '../core/errors';
import type { Logger } from '../logging/logger';
import { createLogger } from '../logging/logger';
import { fillDefaults } from '../repository/config/defaults';
import type { ModelConfig, ModelDynamicBatching, ModelInput, ModelOutput } from '../core/model-config';
import { schemaType } from '../repository/config/schema';
import { modelConfigToJson } from '../repository/config/to-json';
import { parsePythonBackendOptions } from './backend-options';
import { StubProcess } from './stub-process';
import { stubRuntime } from './execution-env';
import { logHooks } from './requirements-env';

let fallbackLog: Logger | undefined;

/** Where the stub's Logger records during auto-complete go instead (`nodetron lint` silences them: its report says the same). */
export function setAutoCompleteLog(log: Logger): void {
  fallbackLog = log;
}

/** The stub's Logger records during auto-complete go to a console logger (the server's is not reachable here). */
function autoCompleteLog(): Logger {
  fallbackLog ??= createLogger({ verbose: 0, info: true, warning: true, error: true, format: 'default' });
  return fallbackLog;
}

export async function completePythonConfig(
  config: ModelConfig,
  modelPath: string,
  autoComplete: boolean,
  backendConfig: Record<string, string>,
): Promise<ModelConfig> {
  const opts = parsePythonBackendOptions(backendConfig);
  if (!autoComplete) return structuredClone(config);
  const log = autoCompleteLog();
  const runtime = await stubRuntime(config, path.dirname(path.dirname(modelPath)), opts.interpreter, {
    version: Number(path.basename(path.dirname(modelPath))),
    options: opts.env,
    hooks: logHooks(log),
  });
  const stub = await StubProcess.spawn({
    interpreter: runtime.interpreter,
    env: runtime.env,
    mode: 'auto_complete',
    modelPath,
    name: config.name,
    model: config.name,
    shmDefaultBytes: opts.shmDefaultBytes,
    shmGrowthBytes: opts.shmGrowthBytes,
    startTimeoutMs: opts.stubTimeoutMs,
    log,
  });
  let done;
  try {
    stub.send({ t: 'auto_complete', config: modelConfigToJson(config) });
    done = await stub.waitFor('auto_complete_done');
    stub.send({ t: 'finalize' });
    await stub.whenExited();
  } finally {
    stub.kill();
  }
  if (done.error !== undefined) throw new ServerError('INTERNAL', withImportHint(done.error, runtime.interpreter, runtime.requirements));
  return mergeCompleted(config, JSON.parse(done.config ?? '{}') as Record<string, unknown>);
}

export function mergeCompleted(config: ModelConfig, completed: Record<string, unknown>): ModelConfig {
  const out = structuredClone(config);
  if (typeof completed['max_batch_size'] === 'number') out.max_batch_size = completed['max_batch_size'];
  if (Array.isArray(completed['input'])) {
    out.input = completed['input'].map((i) => fillDefaults<ModelInput>(tensorEntry(i, 'input'), schemaType('ModelInput')));
  }
  if (Array.isArray(completed['output'])) {
    out.output = completed['output'].map((o) => fillDefaults<ModelOutput>(tensorEntry(o, 'output'), schemaType('ModelOutput')));
  }
  const db = completed['dynamic_batching'];
  if (out.dynamic_batching === undefined && db !== null && typeof db === 'object') {
    out.dynamic_batching = fillDefaults<ModelDynamicBatching>(db, schemaType('ModelDynamicBatching'));
  }
  const policy = completed['model_transaction_policy'] as { decoupled?: unknown } | undefined;
  if (policy !== null && typeof policy === 'object') out.model_transaction_policy = { decoupled: policy.decoupled === true };
  return out;
}

function tensorEntry(entry: unknown, kind: string): Record<string, unknown> {
  if (entry === null || typeof entry !== 'object') {
    throw new ServerError('INVALID_ARG', `auto_complete_config returned a model ${kind} that is not an object`);
  }
  const e = { ...(entry as Record<string, unknown>) };
  if (Array.isArray(e['dims'])) e['dims'] = e['dims'].map(Number);
  return e;
}

/**
 * A model.py whose import fails says which interpreter ran it and how to
 * give it the module: Python's own text first, the fix before the traceback.
 */
export function withImportHint(error: string, interpreter: string, requirements?: string): string {
  const missing = /^ModuleNotFoundError: No module named '([^']+)'/.exec(error)?.[1];
  if (missing === undefined) return error;
  const top = missing.split('.')[0];
  const hint =
    requirements !== undefined
      ? `. The stub runs in the environment built from ${requirements} (${interpreter}): add the package that provides '${top}' to that file`
      : `. The stub runs ${interpreter}: install the module there (${interpreter} -m pip install ${top}), ` +
        "list it in a requirements.txt beside model.py, or point the model's EXECUTION_ENV_PATH parameter at a packed environment that has it";
  const at = error.indexOf('\n\nAt:');
  return at < 0 ? error + hint : error.slice(0, at) + hint + error.slice(at);
}
