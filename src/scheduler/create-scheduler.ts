/**
 * The one place that maps a config's scheduling choice (the
 * `scheduling_choice` oneof of ModelConfig) to a Scheduler implementation.
 */
import { ServerError } from '../errors';
import type { ModelInstance } from '../instances/instance';
import type { ModelConfig } from '../repository/config/model-config';
import { DefaultScheduler } from './default-scheduler';
import { DynamicBatchScheduler } from './dynamic-batch-scheduler';
import { EnsembleScheduler, type EnsembleServices } from './ensemble-scheduler';
import type { Scheduler } from './scheduler';
import type { SchedulerHooks } from './scheduler-hooks';

/** What some schedulers need from the server beyond their instances. */
export interface SchedulerContext {
  /** Required for ensembles. */
  ensemble?: EnsembleServices;
}

export function createScheduler(config: ModelConfig, instances: ModelInstance[], hooks?: SchedulerHooks, ctx: SchedulerContext = {}): Scheduler {
  if (config.ensemble_scheduling !== undefined && config.ensemble_scheduling !== null) {
    if (ctx.ensemble === undefined) throw unsupported('ensemble_scheduling', config);
    return new EnsembleScheduler(config, ctx.ensemble, hooks);
  }
  if (config.sequence_batching !== undefined) throw unsupported('sequence_batching', config);
  if (config.dynamic_batching !== undefined) return new DynamicBatchScheduler(config, instances, hooks);
  return new DefaultScheduler(config.name, instances, hooks);
}

function unsupported(block: string, config: ModelConfig): ServerError {
  return new ServerError('UNSUPPORTED', `${block} is not supported yet for model '${config.name}'`);
}
