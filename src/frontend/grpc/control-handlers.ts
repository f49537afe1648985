/**
 * Statistics, trace, log and repository rpcs over the main thread's shared
 * control APIs (src/frontend/http/control-api.ts, src/repository/repository-api.ts),
 * when server.ts hands them in: gRPC only converts its wire form into their
 * calls and their JSON-shaped results back into messages (protocol.md
 * §2.5, §2.7). Without them, admin-handlers.ts answers. They run on the main
 * thread, for the calls the gRPC thread forwards (control-answer.ts).
 */
import type * as grpc from '@grpc/grpc-js';
import { ServerError } from '../../core/errors';
import { checkRepositoryName, repositoryIndex, repositoryLoad, repositoryUnload } from '../../repository/repository-api';
import type { OverrideFile } from '../../repository/repository-api';
import { unary } from './grpc-context';
import type { GrpcControlContext } from './grpc-context';
import { parseGrpcVersion } from './health-handlers';

interface RepoParam {
  parameter_choice?: 'bool_param' | 'int64_param' | 'string_param' | 'bytes_param';
  bool_param?: boolean;
  string_param?: string;
  bytes_param?: Uint8Array;
}

interface RepositoryRequestMsg {
  repository_name: string;
  model_name: string;
  parameters: Record<string, RepoParam>;
}

type LogValue = { bool_param?: boolean; uint32_param?: number; string_param?: string; parameter_choice?: string };

function invalid(message: string): ServerError {
  return new ServerError('INVALID_ARG', message);
}

/** LogSettings request values → the JSON body the logging extension takes, with gRPC's type texts. */
export function logBodyFromGrpc(settings: Record<string, LogValue>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(settings)) {
    switch (key) {
      case 'log_info':
      case 'log_warning':
      case 'log_error':
        if (v.parameter_choice !== 'bool_param') throw invalid(`expect boolean for '${key}'`);
        body[key] = v.bool_param;
        break;
      case 'log_verbose_level':
        if (v.parameter_choice !== 'uint32_param') throw invalid("expect int32 for 'log_verbose_level'");
        body[key] = v.uint32_param;
        break;
      case 'log_format':
        if (v.parameter_choice !== 'string_param' || (v.string_param !== 'default' && v.string_param !== 'ISO8601')) {
          throw invalid(`invalid argument for log_format, got: ${v.string_param ?? ''}`);
        }
        body[key] = v.string_param;
        break;
      case 'log_file':
        throw new ServerError('UNSUPPORTED', 'log file location can not be updated through network protocol');
      default:
        break; // Triton ignores keys it does not know
    }
  }
  return body;
}

function logSettingsToGrpc(json: object): { settings: Record<string, LogValue> } {
  const settings: Record<string, LogValue> = {};
  for (const [k, v] of Object.entries(json as Record<string, unknown>)) {
    if (typeof v === 'boolean') settings[k] = { bool_param: v };
    else if (typeof v === 'number') settings[k] = { uint32_param: v };
    else settings[k] = { string_param: String(v) };
  }
  return { settings };
}

const TRACE_SCALARS = new Set(['trace_rate', 'trace_count', 'log_frequency', 'trace_file']);

/** TraceSetting values → the JSON body the trace extension takes; an empty list clears (null). */
export function traceBodyFromGrpc(settings: Record<string, { value: string[] }>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [key, { value }] of Object.entries(settings)) {
    if (value.length === 0) body[key] = null;
    else if (key === 'trace_level') body[key] = value;
    else if (TRACE_SCALARS.has(key) && value.length > 1) throw invalid(`expect only 1 value for '${key}'`);
    else body[key] = value[0];
  }
  return body;
}

function traceSettingsToGrpc(json: object): { settings: Record<string, { value: string[] }> } {
  const settings: Record<string, { value: string[] }> = {};
  for (const [k, v] of Object.entries(json as Record<string, unknown>)) settings[k] = { value: Array.isArray(v) ? v.map(String) : [String(v)] };
  return { settings };
}

export function controlHandlers(ctx: GrpcControlContext): grpc.UntypedServiceImplementation {
  const out: grpc.UntypedServiceImplementation = {};
  const control = ctx.control;
  if (control !== undefined) {
    out.ModelStatistics = unary(ctx, 'statistics', (req: { name: string; version: string }) => {
      const s = ctx.snapshot();
      if (!s.live || s.exiting) throw new ServerError('UNAVAILABLE', 'Server not ready');
      const version = req.name === '' ? undefined : parseGrpcVersion(req.version);
      return { model_stats: control.modelStatistics(req.name === '' ? undefined : req.name, version === undefined ? undefined : Number(version)) };
    });
    out.LogSettings = unary(ctx, 'logging', (req: { settings: Record<string, LogValue> }) =>
      logSettingsToGrpc(Object.keys(req.settings).length === 0 ? control.logSettings() : control.updateLogSettings(logBodyFromGrpc(req.settings))),
    );
    out.TraceSetting = unary(ctx, 'trace', (req: { settings: Record<string, { value: string[] }>; model_name: string }) => {
      const model = req.model_name === '' ? undefined : req.model_name;
      return traceSettingsToGrpc(
        Object.keys(req.settings).length === 0 ? control.traceSettings(model) : control.updateTraceSettings(model, traceBodyFromGrpc(req.settings)),
      );
    });
  }
  const repo = ctx.repository;
  if (repo !== undefined) {
    out.RepositoryIndex = unary(ctx, 'model-repository', async (req: { repository_name: string; ready: boolean }) => {
      checkRepositoryName(req.repository_name);
      const models = (await repositoryIndex(repo, req.ready)).map((e) => ({
        name: e.name,
        version: e.version ?? '',
        state: e.state ?? '',
        reason: e.reason ?? '',
      }));
      return { models };
    });
    out.RepositoryModelLoad = unary(ctx, 'model-repository', async (req: RepositoryRequestMsg) => {
      checkRepositoryName(req.repository_name);
      let config: string | undefined;
      const files: OverrideFile[] = [];
      for (const [key, p] of Object.entries(req.parameters)) {
        if (key === 'config') {
          if (p.parameter_choice !== 'string_param') throw invalid("invalid value type for load parameter 'config', expected string_param.");
          config = p.string_param;
        } else if (key.startsWith('file:')) {
          if (p.parameter_choice !== 'bytes_param') throw invalid(`invalid value type for load parameter '${key}', expected bytes_param.`);
          files.push({ path: key.slice('file:'.length), data: p.bytes_param ?? new Uint8Array(0) });
        } else {
          throw invalid(`unrecognized load parameter '${key}'.`);
        }
      }
      await repositoryLoad(repo, req.model_name, { config, files });
      return {};
    });
    out.RepositoryModelUnload = unary(ctx, 'model-repository', async (req: RepositoryRequestMsg) => {
      checkRepositoryName(req.repository_name);
      const d = req.parameters.unload_dependents;
      if (d !== undefined && d.parameter_choice !== 'bool_param') {
        throw invalid("invalid value type for 'unload_dependents' parameter, expected bool_param.");
      }
      await repositoryUnload(repo, req.model_name, { unloadDependents: d?.bool_param === true });
      return {};
    });
  }
  return out;
}
