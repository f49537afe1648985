/**
 * Load-time validation of a normalised config with Triton's texts
 * (protocol.md §3.11): the model-level checks, then inputs/outputs and batch
 * inputs/outputs, then instance groups (GPU ids when the GPU count is known).
 * Every failure is INVALID_ARG except an unresolved KIND_AUTO (INTERNAL).
 */
import { ServerError } from '../../core/errors';
import type { ModelConfig, ModelInput, ModelOutput } from '../../core/model-config';
import { validateEnsembleScheduling } from './validate-ensemble';
import { validateSequenceBatching } from './validate-sequence';

/** Triton's default `--min-supported-compute-capability`. */
export const MIN_COMPUTE_CAPABILITY = 7.5;

const WILDCARD_DIM = -1;
const invalid = (msg: string): ServerError => new ServerError('INVALID_ARG', msg);

type BackendType = 'tensorflow' | 'tensorrt' | 'onnxruntime' | 'pytorch' | 'unknown';

function backendTypeOfBackend(backend: string): BackendType {
  switch (backend) {
    case 'tensorflow':
    case 'tensorrt':
    case 'onnxruntime':
    case 'pytorch':
      return backend;
    default:
      return 'unknown';
  }
}

function backendTypeOfPlatform(platform: string): BackendType {
  switch (platform) {
    case 'tensorflow_graphdef':
    case 'tensorflow_savedmodel':
      return 'tensorflow';
    case 'tensorrt_plan':
      return 'tensorrt';
    case 'onnxruntime_onnx':
      return 'onnxruntime';
    case 'pytorch_libtorch':
    case 'libtorch':
    case 'torch_aoti':
      return 'pytorch';
    default:
      return 'unknown';
  }
}

/**
 * Validates a normalised config. With `gpuCount`, KIND_GPU groups are also
 * checked against the GPUs present (ids 0..gpuCount-1); see
 * `validateConfigForGpus`.
 */
export function validateConfig(config: ModelConfig, gpuCount?: number): void {
  validateModelLevel(config);
  validateModelIO(config);
  validateInstanceGroups(config);
  if (gpuCount !== undefined) validateConfigForGpus(config, gpuCount);
}

function validateModelLevel(config: ModelConfig): void {
  const m = config.name;
  if (!m) throw invalid("model configuration must specify 'name'");
  const platform = config.platform ?? '';
  const backend = config.backend ?? '';
  if (backend === '') {
    if (platform !== 'ensemble') throw invalid(`unexpected platform type '${platform}' for ${m}`);
  } else if (platform === 'ensemble') {
    throw invalid(`Ensemble model '${m}' must have platform type '${platform}' and empty backend type`);
  }
  const bt = backendTypeOfBackend(backend);
  if (bt !== 'unknown' && bt !== backendTypeOfPlatform(platform)) {
    throw invalid(`unexpected 'platform' and 'backend' pair, got:${platform}, ${backend}`);
  }
  if (config.max_batch_size < 0) throw invalid(`'max_batch_size' must be non-negative value for ${m}`);
  if (config.version_policy === undefined || config.version_policy === null) {
    throw invalid(`must specify 'version policy' for ${m}`);
  }
  if (config.dynamic_batching) validateDynamicBatching(config);
  if (config.sequence_batching) validateSequenceBatching(config);
  if (config.ensemble_scheduling) {
    validateEnsembleScheduling(config);
  } else if (platform === 'ensemble') {
    throw invalid(`ensemble scheduling must be set for ensemble ${m} whose platform is ensemble`);
  }
  if (config.model_transaction_policy?.decoupled && config.response_cache?.enable) {
    throw invalid(`Response Cache does not currently support model ${m} with 'decoupled' transaction policy. ` + 'Please disable the response cache.');
  }
  if (config.model_metrics) validateModelMetrics(config.model_metrics as { metric_control?: unknown[] });
}

function validateDynamicBatching(config: ModelConfig): void {
  const m = config.name;
  const db = config.dynamic_batching!;
  for (const size of db.preferred_batch_size ?? []) {
    if (size <= 0) throw invalid(`dynamic batching preferred size must be positive for ${m}`);
    if (size > config.max_batch_size) throw invalid(`dynamic batching preferred size must be <= max batch size for ${m}`);
  }
  const levels = db.priority_levels ?? 0;
  const policies = Object.entries(db.priority_queue_policy ?? {});
  if (levels !== 0) {
    const def = db.default_priority_level ?? 0;
    if (def === 0 || def > levels) throw invalid(`default priority level must be in range [1, ${levels}] for ${m}`);
    for (const [key] of policies) {
      const level = Number(key);
      if (level === 0 || level > levels) {
        throw invalid(`priority queue policy must have priority level in range [1, ${levels}] for ${m}`);
      }
    }
  }
  if (db.preserve_ordering) {
    if (levels > 1) throw invalid(`Only one priority level is allowed when 'preserve_ordering' is true for ${m}`);
    const delays = [db.default_queue_policy, ...policies.map(([, p]) => p)].some(
      (p) => p !== undefined && p !== null && (p.default_timeout_microseconds ?? 0) !== 0 && p.timeout_action === 'DELAY',
    );
    if (delays) {
      throw invalid(`Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for ${m}`);
    }
  }
}

function validateModelMetrics(metrics: { metric_control?: unknown[] }): void {
  for (const raw of metrics.metric_control ?? []) {
    const mc = raw as { metric_identifier?: { family?: string }; histogram_options?: { buckets?: number[] } };
    if (!mc.metric_identifier) throw invalid("metric control must specify 'metric_identifier'");
    if (!mc.metric_identifier.family) throw invalid("metric identifier must specify non-empty 'family'");
    if (!mc.histogram_options) throw invalid("metric control must specify 'histogram_options'");
    if ((mc.histogram_options.buckets ?? []).length === 0) {
      throw invalid("histogram options must specify non-empty 'buckets'");
    }
  }
}

/** Inputs, outputs, batch inputs/outputs; every message ends with ` for <m>`. */
function validateModelIO(config: ModelConfig): void {
  const suffix = ` for ${config.name}`;
  const withModel = (fn: () => void): void => {
    try {
      fn();
    } catch (err) {
      if (err instanceof ServerError) throw new ServerError(err.code, err.message + suffix);
      throw err;
    }
  };
  const platform = config.platform ?? '';
  for (const io of config.input ?? []) {
    withModel(() => {
      validateIOShape(io, config.max_batch_size, 'model input ');
      if ((io.format === 'FORMAT_NHWC' || io.format === 'FORMAT_NCHW') && io.dims.length !== 3) {
        throw invalid('model input NHWC/NCHW require 3 dims');
      }
      validateTensorRtOnly(io, platform, 'input');
    });
  }
  for (const io of config.output ?? []) {
    withModel(() => {
      validateIOShape(io, config.max_batch_size, 'model output ');
      validateTensorRtOnly(io, platform, 'output');
    });
  }
  withModel(() => validateBatchIO(config));
  // Not a Triton check: two tensors with one name make requests ambiguous.
  for (const [list, what] of [
    [config.input ?? [], 'input'],
    [config.output ?? [], 'output'],
  ] as const) {
    const seen = new Set<string>();
    for (const io of list) {
      if (seen.has(io.name)) throw invalid(`model ${what} '${io.name}' is specified more than once${suffix}`);
      seen.add(io.name);
    }
  }
}

function validateTensorRtOnly(io: ModelInput | ModelOutput, platform: string, what: string): void {
  if (platform !== 'tensorrt_plan' && io.is_shape_tensor) {
    throw invalid('shape tensors are only supported for TensorRT platform');
  }
  if (io.is_non_linear_format_io) {
    if (platform !== 'tensorrt_plan') throw invalid('Non-linear IO format is only supported for the TensorRT platform');
    if (io.dims.length !== 3) throw invalid(`Non-linear IO format ${what} requires 3 dims`);
  }
}

/** Element count; -1 when any dimension is variable, 0 for no dimensions. */
function elementCount(dims: number[]): number {
  if (dims.length === 0) return 0;
  if (dims.includes(WILDCARD_DIM)) return -1;
  return dims.reduce((a, b) => a * b, 1);
}

/** Products of the runs of fixed dimensions between variable ones. */
function fixedRuns(dims: number[]): number[] {
  const runs: number[] = [];
  let cnt = 1;
  for (const d of dims) {
    if (d === WILDCARD_DIM) {
      runs.push(cnt);
      cnt = 1;
    } else {
      cnt *= d;
    }
  }
  runs.push(cnt);
  return runs;
}

function validateIOShape(io: ModelInput | ModelOutput, maxBatchSize: number, prefix: string): void {
  if (!io.name) throw invalid(`${prefix}must specify 'name'`);
  const p = `${prefix}'${io.name}' `;
  if (!io.data_type || io.data_type === 'TYPE_INVALID') throw invalid(`${p}must specify 'data_type'`);
  const dims = io.dims ?? [];
  if (dims.length === 0) throw invalid(`${p}must specify 'dims'`);
  const reshape = io.reshape?.shape;
  if (reshape !== undefined && reshape.length === 0 && maxBatchSize === 0) {
    throw invalid(`${p}cannot have empty reshape for non-batching model as scalar tensors are not supported`);
  }
  const variable = `, or ${WILDCARD_DIM} to indicate a variable-size dimension`;
  if (dims.some((d) => d < 1 && d !== WILDCARD_DIM)) throw invalid(`${p}dimension must be integer >= 1${variable}`);
  if (reshape === undefined) return;
  if (reshape.some((d) => d < 1 && d !== WILDCARD_DIM)) {
    throw invalid(`${p}reshape dimensions must be integer >= 1${variable}`);
  }
  const dimsSize = elementCount(dims);
  const reshapeSize = elementCount(reshape);
  if (dimsSize !== reshapeSize && (reshapeSize !== 0 || dimsSize !== 1)) {
    throw invalid(`${p}has different size for dims and reshape`);
  }
  if (dimsSize === -1) {
    const a = fixedRuns(dims);
    const b = fixedRuns(reshape);
    if (a.length !== b.length) {
      throw invalid(`${p}has different number of variable-size dimensions for dims and reshape`);
    }
    if (a.some((n, i) => n !== b[i])) throw invalid(`${p}has different size for dims and reshape`);
  }
}

interface BatchIO {
  kind: string;
  target_name: string[];
  data_type?: string;
  source_input: string[];
}

function validateBatchIO(config: ModelConfig): void {
  const inputs = new Set((config.input ?? []).map((i) => i.name));
  const outputs = new Set((config.output ?? []).map((o) => o.name));
  for (const bi of (config.batch_input ?? []) as BatchIO[]) {
    const sources = bi.source_input ?? [];
    if (sources.length !== 1) throw invalid(`batch input kind '${bi.kind}' expects 1 source input, got ${sources.length}`);
    if (bi.data_type !== 'TYPE_INT32' && bi.data_type !== 'TYPE_FP32') {
      throw invalid('batch input data type must be TYPE_INT32 or TYPE_FP32');
    }
    for (const s of sources) if (!inputs.has(s)) throw invalid(`unknown source input name '${s}'`);
  }
  for (const bo of (config.batch_output ?? []) as BatchIO[]) {
    const sources = bo.source_input ?? [];
    if (sources.length !== 1) {
      throw invalid(`batch output kind '${bo.kind}' expects 1 source input, got ${sources.length}`);
    }
    for (const s of sources) if (!inputs.has(s)) throw invalid(`unknown source input name '${s}'`);
    const targets = new Set<string>();
    for (const t of bo.target_name ?? []) {
      if (!outputs.has(t)) throw invalid(`unknown target output name '${t}'`);
      if (targets.has(t)) throw invalid(`target output name '${t}' can only be specified once`);
      targets.add(t);
    }
  }
}

/** Instance-group checks that do not depend on the machine's GPUs. */
function validateInstanceGroups(config: ModelConfig): void {
  if (config.ensemble_scheduling) return;
  const m = config.name;
  const groups = config.instance_group ?? [];
  if (groups.length === 0) throw invalid(`must specify one or more 'instance group's for ${m}`);
  for (const g of groups) {
    const at = `instance group ${g.name} of model ${m}`;
    const gpus = g.gpus ?? [];
    if (g.kind === 'KIND_MODEL' && gpus.length > 0) throw invalid(`${at} has kind KIND_MODEL but specifies one or more GPUs`);
    if (g.kind === 'KIND_CPU' && gpus.length > 0) throw invalid(`${at} has kind KIND_CPU but specifies one or more GPUs`);
    if (g.kind !== 'KIND_MODEL' && g.kind !== 'KIND_CPU' && g.kind !== 'KIND_GPU') {
      throw new ServerError('INTERNAL', `${at} has unexpected kind KIND_AUTO`);
    }
    const profiles = g.profile ?? [];
    if (profiles.length === 0) continue;
    if (config.platform !== 'tensorrt_plan') {
      // Triton's text lacks the space before "specifies"; kept verbatim.
      throw invalid(`${at} and platform ${config.platform}specifies profile field which is only supported for TensorRT models`);
    }
    for (const profile of profiles) {
      if (profile === '') throw invalid('profile name must not be empty');
      const lead = /^\s*[+-]?\d+/.exec(profile);
      if (lead === null) throw invalid(`unable to parse '${profile}': stoi`);
      if (Number(lead[0]) < 0) {
        throw invalid(
          `${at} and platform ${config.platform} specifies invalid profile ${profile}. ` +
            'The field should contain the string representation of a non-negative integer.',
        );
      }
    }
  }
}

/**
 * KIND_GPU groups must list GPUs, all of them present: the GPUs a machine
 * has are ids 0..gpuCount-1 (nodetron treats every GPU it sees as meeting
 * the minimum compute capability).
 */
export function validateConfigForGpus(config: ModelConfig, gpuCount: number, minComputeCapability: number = MIN_COMPUTE_CAPABILITY): void {
  if (config.ensemble_scheduling) return;
  const supported = Array.from({ length: Math.max(0, gpuCount) }, (_, i) => i);
  for (const g of config.instance_group ?? []) {
    if (g.kind !== 'KIND_GPU') continue;
    const at = `instance group ${g.name} of model ${config.name}`;
    const gpus = g.gpus ?? [];
    if (gpus.length === 0) {
      throw invalid(supported.length === 0 ? `${at} has kind KIND_GPU but no GPUs are available` : `${at} has kind KIND_GPU but specifies no GPUs`);
    }
    for (const id of gpus) {
      if (!supported.includes(id)) {
        throw invalid(
          `${at} specifies invalid or unsupported gpu id ${id}. GPUs with at least the minimum required CUDA ` +
            `compute compatibility of ${minComputeCapability.toFixed(6)} are: ${supported.join(', ')}`,
        );
      }
    }
  }
}
