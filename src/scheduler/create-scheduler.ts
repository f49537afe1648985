/**
 * The one place that maps a config's scheduling choice (the
 * `scheduling_choice` oneof of ModelConfig) to a Scheduler implementation.
 */
import { ServerError } from '../core/errors';
import type { Arena } from '../dataplane/arena';
import type { ModelInstance } from '../instances/instance';
import type { ModelConfig } from '../core/model-config';
import { DefaultScheduler } from './default-scheduler';
import { DynamicBatchScheduler } from './dynamic-batch-scheduler';
import { EnsembleScheduler, type EnsembleServices } from './ensemble-scheduler';
import type { RateLimiter } from './rate-limiter';
import { CachingScheduler, type ResponseCache } from './response-cache';
import type { Scheduler } from './scheduler';
import { SequenceBatchScheduler } from './sequence-batch-scheduler';
import type { SchedulerHooks } from './scheduler-hooks';

/** What some schedulers need from the server beyond their instances. */
export interface SchedulerContext {
  /** Required for ensembles. */
  ensemble?: EnsembleServices;
  /** The tensor arena: sequence control tensors and response-cache hits are written there. */
  arena?: Arena;
  /** The server's response cache (--cache-config); absent when it has none. */
  responseCache?: ResponseCache;
  /** --rate-limit=execution_count: model-loader.ts wraps the instances with it; absent when off. */
  rateLimiter?: RateLimiter;
  /** The model's directory: sequence_batching.state initial_state data_file is read from it. */
  modelDir?: string;
}

export function createScheduler(config: ModelConfig, instances: ModelInstance[], hooks?: SchedulerHooks, ctx: SchedulerContext = {}): Scheduler {
  const scheduler = createUncached(config, instances, hooks, ctx);
  // Without a server cache Triton ignores the model's response_cache setting.
  if (config.response_cache?.enable === true && ctx.responseCache !== undefined && ctx.arena !== undefined) {
    return new CachingScheduler(scheduler, ctx.responseCache, ctx.arena, hooks);
  }
  return scheduler;
}

function createUncached(config: ModelConfig, instances: ModelInstance[], hooks: SchedulerHooks | undefined, ctx: SchedulerContext): Scheduler {
  if (config.ensemble_scheduling !== undefined && config.ensemble_scheduling !== null) {
    if (ctx.ensemble === undefined) throw unsupported('ensemble_scheduling', config);
    return new EnsembleScheduler(config, ctx.ensemble, hooks);
  }
  if (config.sequence_batching !== undefined && config.sequence_batching !== null) {
    if (ctx.arena === undefined) throw unsupported('sequence_batching without a tensor arena', config);
    return new SequenceBatchScheduler(config, instances, ctx.arena, hooks, ctx.modelDir);
  }
  if (config.dynamic_batching !== undefined) return new DynamicBatchScheduler(config, instances, hooks);
  return new DefaultScheduler(config.name, instances, hooks, config.model_transaction_policy?.decoupled === true);
}

function unsupported(block: string, config: ModelConfig): ServerError {
  return new ServerError('UNSUPPORTED', `${block} is not supported yet for model '${config.name}'`);
}
