/**
 * Between configs and candidates: what a model's config lets `nodetron tune`
 * change (or why it refuses the model), the shipped config as a candidate,
 * and a candidate written into a config, for the load API's override and for
 * config.tuned.pbtxt. Pure.
 */
import type { ModelConfig, ModelInstanceGroup } from '../core/model-config';
import type { Candidate, TunableModel } from './tune-space';

const INTRA = 'intra_op_thread_count';
const INTER = 'inter_op_thread_count';
const EXECUTION_MODE = 'execution_mode';

/** Why tune cannot measure this model, or undefined when it can. */
export function refusal(config: ModelConfig): string | undefined {
  const name = config.name;
  if (config.platform === 'ensemble' || config.ensemble_scheduling !== undefined) {
    const steps = [...new Set((config.ensemble_scheduling?.step ?? []).map((s) => s.model_name))];
    return (
      `model '${name}' is an ensemble: its speed is its steps'. Tune each composing model instead` +
      (steps.length > 0 ? ` (${steps.map((s) => `nodetron tune -m ${s}`).join(', ')})` : '')
    );
  }
  if (config.sequence_batching !== undefined) {
    return (
      `model '${name}' uses sequence batching: measuring it needs load that keeps sequences (a correlation id per stream, ` +
      'START and END flags on its first and last request), which the tune load does not send yet. Tune its instance count by hand: ' +
      'the sequence batcher runs as many sequences at once as it has instances (max_candidate_sequences for the oldest strategy)'
    );
  }
  if (config.model_transaction_policy?.decoupled === true) {
    return (
      `model '${name}' is decoupled: a request may have any number of responses, so requests per second and request latency do not ` +
      'measure it. Tuning it needs time to first response and time between responses as the objective, which tune does not have yet'
    );
  }
  return undefined;
}

function kindOf(config: ModelConfig): TunableModel['kind'] {
  const backend = config.backend || (config.platform === 'onnxruntime_onnx' ? 'onnxruntime' : '');
  if (backend === 'onnxruntime') return 'onnx';
  if (backend === 'fil') return 'fil';
  if (backend === 'python') return 'python';
  return 'other';
}

function intParam(config: ModelConfig, key: string): number | undefined {
  const text = config.parameters?.[key]?.string_value;
  if (text === undefined || text.trim() === '') return undefined;
  const n = Number(text);
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

/** The instances a config starts: the sum of its groups' counts (the server's config has the defaults filled in). */
export function instanceCount(config: ModelConfig): number {
  const n = config.instance_group.reduce((sum, g) => sum + (g.count > 0 ? g.count : 1), 0);
  return Math.max(1, n);
}

/** The shipped config as a candidate, and what may change, from the config the server runs it with. */
export function describeModel(served: ModelConfig, requestBatch: number): TunableModel {
  const kind = kindOf(served);
  const db = served.dynamic_batching;
  const shipped: Candidate = {
    instances: instanceCount(served),
    maxBatch: served.max_batch_size,
    batching: db === undefined ? undefined : { delayUs: Number(db.max_queue_delay_microseconds ?? 0), preferred: (db.preferred_batch_size ?? []).map(Number) },
    intraOp: kind === 'onnx' ? intParam(served, INTRA) : undefined,
    interOp: kind === 'onnx' ? intParam(served, INTER) : undefined,
  };
  return { name: served.name, kind, shipped, maxBatchLimit: served.max_batch_size, requestBatch };
}

function setParam(params: Record<string, { string_value: string }>, key: string, value: number | undefined): void {
  if (value === undefined) delete params[key];
  else params[key] = { string_value: String(value) };
}

/**
 * `base` (the model's own config.pbtxt when it has one, else the server's
 * config) with the candidate's numbers in it; everything else is kept. A
 * config with several instance groups gets one, of the first group's kind.
 * `kind` is the served model's (a config.pbtxt may leave the backend to
 * auto-complete).
 */
export function applyCandidate(base: ModelConfig, c: Candidate, kind: TunableModel['kind']): ModelConfig {
  const config = structuredClone(base);
  config.max_batch_size = c.maxBatch;
  const groups = config.instance_group;
  const first = groups[0];
  config.instance_group = [
    first === undefined
      ? ({ kind: 'KIND_CPU', count: c.instances } as ModelInstanceGroup)
      : { ...first, count: c.instances, name: groups.length > 1 ? '' : first.name },
  ];
  if (c.batching === undefined) {
    delete config.dynamic_batching;
  } else {
    const db = config.dynamic_batching ?? ({ priority_queue_policy: {} } as unknown as NonNullable<ModelConfig['dynamic_batching']>);
    config.dynamic_batching = { ...db, max_queue_delay_microseconds: c.batching.delayUs, preferred_batch_size: [...c.batching.preferred] };
  }
  const params = { ...(config.parameters ?? {}) };
  if (kind === 'onnx') {
    setParam(params, INTRA, c.intraOp);
    setParam(params, INTER, c.interOp);
    // Inter-op threads run independent nodes side by side, which only the parallel execution mode does.
    if (c.interOp !== undefined) params[EXECUTION_MODE] = { string_value: '1' };
    else if (base.parameters?.[INTER] !== undefined) delete params[EXECUTION_MODE];
  }
  config.parameters = params;
  return config;
}
