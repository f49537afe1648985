/**
 * Create the instances of one model version from its (normalized)
 * instance_group entries: `count` instances per entry, per GPU for KIND_GPU.
 * In-process backends run each instance in a worker thread.
 */
import fs from 'node:fs';
import { ServerError } from '../core/errors';
import type { Backend, BackendInstanceArgs, ProcessHostServices } from '../backends/backend';
import type { ModelConfig } from '../core/model-config';
import type { Arena } from '../dataplane/arena';
import type { ModelInstance } from './instance';
import type { MainPort } from '../dataplane/main-port';
import { ProcessInstance } from './process-instance';
import { WorkerInstance } from './worker-instance';
import { HostedInstance } from './hosted-instance';
import { inlineRefusal } from './inline-placement';

export interface InstanceGroupContext {
  port: MainPort;
  arena: Arena;
  gpuIds: readonly number[];
  backendConfig: Record<string, string>;
  /** What child-process instances (Backend.instanceKind 'process') get from the server. */
  processServices?: Omit<ProcessHostServices, 'arena' | 'port'>;
  /** --inline-execution-max-us: instances may be hosted on the frontend threads (MainPort.hosts); absent or 0 = never. */
  inlineMaxUs?: number;
}

interface InstancePlan {
  name: string;
  kind: 'KIND_CPU' | 'KIND_GPU' | 'KIND_MODEL';
  deviceId: number;
}

/** Names and devices of every instance, or a load error for GPUs that are not there. */
export function planInstances(config: ModelConfig, gpuIds: readonly number[]): InstancePlan[] {
  const plans: InstancePlan[] = [];
  for (const group of config.instance_group) {
    const kind = group.kind === 'KIND_AUTO' ? (gpuIds.length > 0 ? 'KIND_GPU' : 'KIND_CPU') : group.kind;
    if (kind === 'KIND_GPU') {
      const gpus = group.gpus.length > 0 ? group.gpus : [...gpuIds];
      if (gpus.length === 0) {
        throw new ServerError(
          'INVALID_ARG',
          `instance group ${group.name} of model ${config.name} has kind KIND_GPU but no GPUs are available on this machine`,
        );
      }
      for (const gpu of gpus) {
        if (!gpuIds.includes(gpu)) {
          throw new ServerError(
            'INVALID_ARG',
            `instance group ${group.name} of model ${config.name} specifies invalid or unsupported gpu id ${gpu}. GPUs available: ${gpuIds.length > 0 ? gpuIds.join(' ') : 'none'}`,
          );
        }
        for (let i = 0; i < group.count; i++) plans.push({ name: `${group.name}_${plans.length}`, kind, deviceId: gpu });
      }
    } else {
      for (let i = 0; i < group.count; i++) plans.push({ name: `${group.name}_${i}`, kind, deviceId: 0 });
    }
  }
  return plans;
}

export async function createInstances(
  ctx: InstanceGroupContext,
  backend: Backend,
  config: ModelConfig,
  modelDir: string,
  version: number,
  modelPath: string,
): Promise<ModelInstance[]> {
  const plans = planInstances(config, ctx.gpuIds);
  const maxUs = ctx.inlineMaxUs ?? 0;
  const hostable =
    backend.instanceKind !== 'process' && inlineRefusal({ config, backend: backend.name, maxUs, modelBytes: fileBytes(modelPath) }) === undefined;
  const started = await Promise.allSettled(
    plans.map((p, k): Promise<ModelInstance> => {
      const args: BackendInstanceArgs = {
        config,
        modelDir,
        version,
        modelPath,
        instanceName: p.name,
        kind: p.kind,
        deviceId: p.deviceId,
        backendConfig: ctx.backendConfig,
        instanceCountHint: plans.length,
      };
      if (backend.instanceKind === 'process') return startProcessInstance(ctx, backend, args);
      // Instance k on HTTP thread k, while there is one: it runs the requests that thread admits without a hop.
      const host = hostable && p.kind === 'KIND_CPU' ? ctx.port.hosts.get(k) : undefined;
      if (host !== undefined) {
        const oneATurn = plans.length > ctx.port.hosts.count;
        return HostedInstance.start(ctx.port, ctx.arena, backend.instanceModule, args, host, maxUs, oneATurn, ctx.processServices?.log);
      }
      return WorkerInstance.start(ctx.port, ctx.arena, backend.instanceModule, args, ctx.processServices?.log);
    }),
  );
  const ok = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await Promise.all(ok.map((i) => i.stop()));
    throw failed.reason;
  }
  return ok;
}

function fileBytes(p: string): number | undefined {
  try {
    const st = fs.statSync(p);
    return st.isFile() ? st.size : undefined;
  } catch {
    return undefined;
  }
}

function startProcessInstance(ctx: InstanceGroupContext, backend: Backend, args: BackendInstanceArgs): Promise<ModelInstance> {
  if (backend.startProcess === undefined || ctx.processServices === undefined) {
    return Promise.reject(new ServerError('INTERNAL', `backend '${backend.name}' runs instances in child processes, but the server gave no process services`));
  }
  return ProcessInstance.create(backend.startProcess, args, { ...ctx.processServices, arena: ctx.arena, port: ctx.port });
}
