/**
 * Load-time pipeline of one model, compiled once so per-request code only
 * runs the plan (STYLE.md item 9): read config.pbtxt → resolve backend →
 * backend auto-complete and checks against the model file → normalize →
 * validate → validation plan, config JSON and labels. Then, per version,
 * instances and a scheduler.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ServerError, toErrorInfo } from '../core/errors';
import type { Backend } from '../backends/backend';
import { findBackend } from '../backends/registry';
import { compileValidationPlan } from '../request/validation-plan';
import type { ValidationPlan } from '../request/validation-plan';
import { createInstances } from '../instances/instance-group';
import type { InstanceGroupContext } from '../instances/instance-group';
import type { ModelInstance } from '../instances/instance';
import { createScheduler, type SchedulerContext } from '../scheduler/create-scheduler';
import type { Scheduler } from '../scheduler/scheduler';
import type { SchedulerHooks } from '../scheduler/scheduler-hooks';
import { ENSEMBLE_PLATFORM, resolveBackend } from './config/backend-resolution';
import type { ModelConfig } from '../core/model-config';
import { ignoredSettings } from './config/ignored-settings';
import { normalizeConfig } from './config/normalize';
import { parseModelConfigText } from './config/pbtxt';
import { modelConfigToJson } from './config/to-json';
import { validateConfig } from './config/validate';
import type { ModelLocation } from './scan';
import { scanVersions, selectVersions } from './scan';
import { runWarmup } from './model-warmup';
import { misnamedConfigWarning, misplacedFileWarning, misplacedModelFiles, noVersionReason, withModelFileHint } from './folder-findings';
import { autoCompleteDetail, backendDetail, checkingDetail, configSourceDetail, defaultsDetail, SILENT, versionsDetail } from './load-details';
import type { LoadListener } from './load-details';
import type { LoadSlots } from './load-slots';

export interface LoaderOptions {
  modelConfigName: string;
  autoComplete: boolean;
  /** --backend-config, by backend name ('' = global settings). */
  backendConfig: Record<string, Record<string, string>>;
  gpuIds: readonly number[];
  /** --model-load-thread-count: config completions and version builds at once (default 4). */
  loadThreads?: number;
  /** --model-load-retry-count: extra tries of a failed version build (default 0). */
  loadRetries?: number;
}

export interface PreparedModel {
  config: ModelConfig;
  configJson: string;
  plan: ValidationPlan;
  labels: Record<string, string[]>;
  backend: Backend;
  backendConfig: Record<string, string>;
  /** Versions to load under the version policy, ascending. */
  versions: number[];
  /** When `versions` is empty: why, with the fix (folder-findings.ts). */
  noVersionReason?: string;
}

export function configPath(location: ModelLocation, modelConfigName: string): string {
  if (modelConfigName !== '') {
    const custom = path.join(location.dir, 'configs', `${modelConfigName}.pbtxt`);
    if (fs.existsSync(custom)) return custom;
  }
  return path.join(location.dir, 'config.pbtxt');
}

export function modelFilePath(config: ModelConfig, backend: Backend, modelDir: string, version: number): string {
  const file = config.default_model_filename !== '' ? config.default_model_filename : backend.defaultModelFilename;
  return path.join(modelDir, String(version), file);
}

/**
 * Everything about a model that does not depend on a version being loaded.
 * The listener hears each warning (skipped folders, misplaced files, ignored
 * settings) as soon as it is known, so a load that then fails still says
 * them, and each step (load-details.ts) for --log-verbose=1. With `slots`
 * (the server's), the backend's config completion (the Python backend's
 * auto-complete stub, ONNX reading the model file) runs in a load slot and
 * is retried as a version build is (Triton runs it inside the model's load,
 * in its load thread pool): 39 Python models at start complete 4 at a time,
 * not all at once.
 */
export async function prepareModel(
  location: ModelLocation,
  opts: LoaderOptions,
  configOverride?: ModelConfig,
  listener: LoadListener = SILENT,
  slots?: LoadSlots,
): Promise<PreparedModel> {
  const file = configPath(location, opts.modelConfigName);
  const m = location.name;
  let text = '';
  if (configOverride) {
    listener.detail(configSourceDetail(m, file, 'override')); // load API `config` parameter
  } else if (fs.existsSync(file)) {
    listener.detail(configSourceDetail(m, file, 'file'));
    text = fs.readFileSync(file, 'utf8');
  } else {
    const misnamed = misnamedConfigWarning(m, location.dir, file);
    if (!opts.autoComplete) {
      const fix = misnamed === undefined ? '' : `; ${misnamed}`;
      throw new ServerError(
        'INVALID_ARG',
        `failed to read text proto from ${file}: no such file, and auto-complete is disabled (--disable-auto-complete-config)${fix}`,
      );
    }
    if (misnamed !== undefined) listener.warn(misnamed);
    listener.detail(configSourceDetail(m, file, 'none'));
  }
  let config = configOverride ?? parseModelConfigText(text, file);
  if (config.name === '') config.name = location.name;
  if (config.name !== location.name) {
    throw new ServerError('INVALID_ARG', `unexpected directory name '${location.name}' for model '${config.name}', directory name must equal model name`);
  }
  const scanned = scanVersions(location.dir);
  const policy = config.version_policy && Object.keys(config.version_policy).length > 0 ? config.version_policy : { latest: { num_versions: 1 } };
  const { versions, missing } = selectVersions(scanned.versions, policy);
  listener.detail(versionsDetail(m, scanned, policy, versions));
  const misplaced = misplacedModelFiles(location.dir);
  const warnings = [
    ...scanned.warnings,
    ...missing.map((v) => `version ${v} is specified for model '${config.name}', but the version directory is not present`),
    ...misplaced.map((f) => misplacedFileWarning(location.name, f)),
    ...ignoredSettings(config),
  ];
  for (const w of warnings) listener.warn(w);
  const newest = versions.length > 0 ? versions[versions.length - 1] : undefined;
  const noVersion = newest === undefined ? noVersionReason(location.name, scanned.ignored, misplaced, { present: scanned.versions, missing }) : undefined;
  const firstDirEntries = newest === undefined ? [] : safeReaddir(path.join(location.dir, String(newest)));
  const written = config;
  try {
    config = resolveBackend(config, firstDirEntries, location.name);
    listener.detail(backendDetail(m, written, config, `${m}/${newest ?? ''}/`, firstDirEntries));
  } catch (err) {
    // Without a version folder there are no files to tell the backend from: say what is missing instead.
    if (noVersion !== undefined && config.platform !== ENSEMBLE_PLATFORM) throw new ServerError('INVALID_ARG', noVersion);
    throw err;
  }
  const backend = config.platform === ENSEMBLE_PLATFORM ? ENSEMBLE_BACKEND : findBackend(config.backend);
  const backendConfig = { ...(opts.backendConfig[''] ?? {}), ...(opts.backendConfig[backend.name] ?? {}) };
  for (const w of backend.configWarnings?.(config) ?? []) listener.warn(w);
  if (newest !== undefined && backend !== ENSEMBLE_BACKEND) {
    const modelPath = modelFilePath(config, backend, location.dir, newest);
    const before = config;
    listener.detail(checkingDetail(m, modelPath, opts.autoComplete));
    if (backend.prepare !== undefined) {
      await backend.prepare(config, modelPath, backendConfig, {
        info: (t) => (listener.info ?? listener.detail)(t),
        verbose: (t) => listener.detail(t),
        stage: (r) => listener.stage?.(r),
      });
    }
    const toComplete = config;
    const complete = (): Promise<ModelConfig> => backend.completeConfig(toComplete, modelPath, opts.autoComplete, backendConfig);
    try {
      config = await (slots === undefined
        ? complete()
        : slots.run(complete, (n, err) => listener.warn(`retrying load of '${m}' (${n}): ${toErrorInfo(err).message}`)));
    } catch (err) {
      const e = toErrorInfo(err);
      const message = withModelFileHint(e.message, modelPath, m);
      throw message === e.message ? err : new ServerError(e.code, message);
    }
    listener.detail(autoCompleteDetail(m, before, config, modelPath, opts.autoComplete));
  }
  const completed = config;
  config = normalizeConfig(config, {
    modelName: location.name,
    gpuCount: opts.gpuIds.length,
    defaultInstanceCount: backend.name === 'onnxruntime' || backend.name === 'fil' ? 2 : 1,
  });
  const defaults = backend === ENSEMBLE_BACKEND ? undefined : defaultsDetail(m, completed, config);
  if (defaults !== undefined) listener.detail(defaults);
  validateConfig(config);
  return {
    config,
    configJson: modelConfigToJson(config),
    plan: compileValidationPlan(config),
    labels: readLabels(config, location.dir),
    backend,
    backendConfig,
    versions,
    noVersionReason: noVersion,
  };
}

export interface LoadedVersion {
  instances: ModelInstance[];
  scheduler: Scheduler;
}

/** Instances and scheduler for one version of a prepared model. */
export async function loadVersion(
  prepared: PreparedModel,
  location: ModelLocation,
  version: number,
  ctx: Omit<InstanceGroupContext, 'backendConfig'>,
  hooks?: SchedulerHooks,
  schedulerCtx: SchedulerContext = {},
): Promise<LoadedVersion> {
  if (prepared.backend === ENSEMBLE_BACKEND) {
    // No instances: the steps run on the composing models' own schedulers.
    return { instances: [], scheduler: createScheduler(prepared.config, [], hooks, { arena: ctx.arena, ...schedulerCtx }) };
  }
  const modelPath = checkModelFile(prepared, location, version);
  let instances = await createInstances({ ...ctx, backendConfig: prepared.backendConfig }, prepared.backend, prepared.config, location.dir, version, modelPath);
  let scheduler: Scheduler | undefined;
  try {
    // Each instance is warmed before READY, outside the scheduler and the rate limiter (nothing counts it).
    await runWarmup(prepared.config, location.dir, version, instances, ctx.arena, prepared.plan);
    if (schedulerCtx.rateLimiter !== undefined) instances = schedulerCtx.rateLimiter.wrap(prepared.config, instances);
    scheduler = createScheduler(prepared.config, instances, hooks, { arena: ctx.arena, modelDir: location.dir, ...schedulerCtx });
    return { instances, scheduler };
  } catch (err) {
    await scheduler?.stop();
    await Promise.all(instances.map((i) => i.stop()));
    throw err;
  }
}

/** The version's model file (or folder); throws Triton's "failed to stat file" when it is not there. */
export function checkModelFile(prepared: PreparedModel, location: ModelLocation, version: number): string {
  const modelPath = modelFilePath(prepared.config, prepared.backend, location.dir, version);
  if (!fs.existsSync(modelPath)) throw new ServerError('INTERNAL', withModelFileHint(`failed to stat file ${modelPath}`, modelPath, location.name));
  return modelPath;
}

/** Ensembles have no backend: a stand-in so the load pipeline stays one path. */
const ENSEMBLE_BACKEND: Backend = {
  name: '',
  defaultModelFilename: '',
  platform: ENSEMBLE_PLATFORM,
  instanceModule: '',
  completeConfig: (config) => Promise.resolve(config),
};

function readLabels(config: ModelConfig, dir: string): Record<string, string[]> {
  const labels: Record<string, string[]> = {};
  for (const o of config.output) {
    if (o.label_filename === '') continue;
    try {
      labels[o.name] = fs.readFileSync(path.join(dir, o.label_filename), 'utf8').split(/\r?\n/);
    } catch {
      throw new ServerError('INVALID_ARG', `unable to read label file '${o.label_filename}' for output '${o.name}' of model '${config.name}'`);
    }
  }
  return labels;
}

function safeReaddir(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}
