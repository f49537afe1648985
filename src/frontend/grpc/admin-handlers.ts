/**
 * Repository, statistics, trace, log and shared-memory rpcs (protocol.md
 * §2.5–§2.7): what nodetron supports today, Triton's answers where the
 * feature is off, and a clear UNIMPLEMENTED text for what is not built yet.
 * They run on the main thread, for the calls the gRPC thread forwards
 * (control-answer.ts).
 */
import type * as grpc from '@grpc/grpc-js';
import { ServerError } from '../../core/errors';
import { lookupModel } from '../../request/model-lookup';
import type { ServerSnapshot } from '../../request/server-snapshot';
import { modelControlRefusal } from '../../repository/repository-api';
import type { ShmRegistry } from '../shm-registry';
import { unary } from './grpc-context';
import type { GrpcControlContext } from './grpc-context';

interface RepositoryRequestMsg {
  repository_name: string;
  model_name: string;
  parameters: Record<string, { parameter_choice?: string }>;
}

const SHM_DISABLED = "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.";

function unsupported(message: string): ServerError {
  return new ServerError('UNSUPPORTED', message);
}

function serverReady(ctx: GrpcControlContext): ServerSnapshot {
  const s = ctx.snapshot();
  if (!s.live || s.exiting) throw new ServerError('UNAVAILABLE', 'Server not ready');
  return s;
}

/** RepositoryIndex entries: models by name, versions ascending; never-loaded models by name only. */
export function repositoryIndex(snapshot: ServerSnapshot, readyOnly: boolean): { name: string; version: string; state: string; reason: string }[] {
  const out: { name: string; version: string; state: string; reason: string }[] = [];
  for (const name of Object.keys(snapshot.models).sort()) {
    const view = snapshot.models[name];
    const versions = [...view.versions].sort((a, b) => a.version - b.version);
    if (versions.length === 0 && !readyOnly) out.push({ name, version: '', state: '', reason: '' });
    for (const v of versions) {
      if (readyOnly && v.state !== 'READY') continue;
      out.push({ name, version: String(v.version), state: v.state, reason: v.reason });
    }
  }
  return out;
}

/** SystemSharedMemoryStatusResponse.regions: by name (one, or all for ''). */
function shmStatusMap(shm: ShmRegistry, name: string): Record<string, { name: string; key: string; offset: number; byte_size: number }> {
  const out: Record<string, { name: string; key: string; offset: number; byte_size: number }> = {};
  for (const r of shm.status(name)) out[r.name] = r;
  return out;
}

export function adminHandlers(ctx: GrpcControlContext): grpc.UntypedServiceImplementation {
  const o = ctx.options;
  const checkRepositoryName = (name: string): void => {
    if (name !== '') throw unsupported("'repository_name' specification is not supported");
  };
  const refuseModelControl = (): never => {
    if (o.modelControlMode !== 'explicit') {
      throw modelControlRefusal(o.modelControlMode);
    }
    throw unsupported('explicit model load / unload is not implemented by nodetron yet');
  };
  const requireClientShm = (): void => {
    if (!o.allowClientShm) throw unsupported(SHM_DISABLED);
  };

  return {
    ModelStatistics: unary(ctx, 'statistics', () => {
      serverReady(ctx);
      throw unsupported('model statistics are not implemented by nodetron yet');
    }),

    RepositoryIndex: unary(ctx, 'model-repository', (req: { repository_name: string; ready: boolean }) => {
      checkRepositoryName(req.repository_name);
      return { models: repositoryIndex(serverReady(ctx), req.ready) };
    }),
    RepositoryModelLoad: unary(ctx, 'model-repository', (req: RepositoryRequestMsg) => {
      checkRepositoryName(req.repository_name);
      for (const key of Object.keys(req.parameters)) {
        const choice = req.parameters[key].parameter_choice;
        if (key === 'config') {
          if (choice !== 'string_param') throw new ServerError('INVALID_ARG', "invalid value type for load parameter 'config', expected string_param.");
        } else if (key.startsWith('file:')) {
          if (choice !== 'bytes_param') throw new ServerError('INVALID_ARG', `invalid value type for load parameter '${key}', expected bytes_param.`);
        } else {
          throw new ServerError('INVALID_ARG', `unrecognized load parameter '${key}'.`);
        }
      }
      serverReady(ctx);
      return refuseModelControl();
    }),
    RepositoryModelUnload: unary(ctx, 'model-repository', (req: RepositoryRequestMsg) => {
      checkRepositoryName(req.repository_name);
      const dependents = req.parameters.unload_dependents;
      if (dependents !== undefined && dependents.parameter_choice !== 'bool_param') {
        throw new ServerError('INVALID_ARG', "invalid value type for 'unload_dependents' parameter, expected bool_param.");
      }
      serverReady(ctx);
      return refuseModelControl();
    }),

    // No region can be registered (client shm is off, or system shm is not
    // built yet), so status lists nothing and names nothing.
    SystemSharedMemoryStatus: unary(ctx, 'shared-memory', (req: { name: string }) => {
      if (ctx.shm !== undefined) return { regions: shmStatusMap(ctx.shm, req.name) };
      if (req.name !== '') throw new ServerError('NOT_FOUND', `Unable to find system shared memory region: '${req.name}'`);
      return { regions: {} };
    }),
    SystemSharedMemoryRegister: unary(ctx, 'shared-memory', (req: { name: string; key: string; offset: string; byte_size: string }) => {
      requireClientShm();
      if (ctx.shm === undefined) throw unsupported('system shared memory is not available');
      ctx.shm.register(req.name, req.key, Number(req.offset), Number(req.byte_size));
      return {};
    }),
    SystemSharedMemoryUnregister: unary(ctx, 'shared-memory', (req: { name: string }) => {
      requireClientShm();
      ctx.shm?.unregister(req.name); // unknown names succeed, as in Triton
      return {};
    }),
    CudaSharedMemoryStatus: unary(ctx, 'shared-memory', (req: { name: string }) => {
      if (req.name !== '') throw new ServerError('NOT_FOUND', `Unable to find cuda shared memory region: '${req.name}'`);
      return { regions: {} };
    }),
    CudaSharedMemoryRegister: unary(ctx, 'shared-memory', (req: { name: string }) => {
      requireClientShm();
      throw new ServerError('INVALID_ARG', `failed to register CUDA shared memory region: '${req.name}', GPUs not supported`);
    }),
    CudaSharedMemoryUnregister: unary(ctx, 'shared-memory', () => {
      requireClientShm();
      return {};
    }),

    TraceSetting: unary(ctx, 'trace', (req: { settings: Record<string, { value: string[] }>; model_name: string }) => {
      if (req.model_name !== '') {
        try {
          lookupModel(ctx.snapshot(), req.model_name, undefined, 'loaded');
        } catch {
          throw new ServerError('INVALID_ARG', `Request for unknown model : ${req.model_name}`);
        }
      }
      if (Object.keys(req.settings).length > 0) throw unsupported('updating trace settings is not implemented by nodetron yet');
      const t = o.traceConfig;
      const settings: Record<string, { value: string[] }> = {
        trace_level: { value: t.level.length === 0 ? ['OFF'] : [...t.level] },
        trace_rate: { value: [String(t.rate)] },
        trace_count: { value: [String(t.count)] },
      };
      if (t.mode === 'triton') {
        settings.log_frequency = { value: [String(t.logFrequency)] };
        settings.trace_file = { value: [t.file] };
      }
      settings.trace_mode = { value: [t.mode] };
      if (t.mode === 'opentelemetry') for (const [k, v] of Object.entries(t.opentelemetry)) settings[k] = { value: [v] };
      return { settings };
    }),

    LogSettings: unary(ctx, 'logging', (req: { settings: Record<string, unknown> }) => {
      const keys = Object.keys(req.settings);
      if (keys.includes('log_file')) throw unsupported('log file location can not be updated through network protocol');
      if (keys.length > 0) throw unsupported('updating log settings is not implemented by nodetron yet');
      return {
        settings: {
          log_file: { string_param: o.logFile ?? '' },
          log_info: { bool_param: o.logInfo },
          log_warning: { bool_param: o.logWarning },
          log_error: { bool_param: o.logError },
          log_verbose_level: { uint32_param: o.logVerbose },
          log_format: { string_param: o.logFormat },
        },
      };
    }),
  };
}
