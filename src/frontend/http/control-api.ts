/**
 * Main-thread answers to the non-data-plane extensions: statistics
 * (protocol.md §1.9), logging (§1.13) and trace settings (§1.12). The typed
 * methods are what every frontend calls (gRPC converts their results to
 * protobuf); `http()` adapts them to the HTTP threads' control channel
 * (http-control.ts): JSON in, status + JSON out, errors as Triton's bodies.
 */
import { HTTP_STATUS, ServerError, toErrorInfo } from '../../core/errors';
import type { Logger } from '../../logging/logger';
import { logSettingsJson, updateLogSettings, type LogSettingsJson } from '../../logging/logging-extension';
import type { ModelStatisticsJson } from '../../metrics/model-statistics';
import type { Telemetry } from '../../metrics/telemetry';
import type { TraceSettingJson } from '../../tracing/trace-settings';
import { unknownTraceModel, type Tracer } from '../../tracing/tracer';
import type { ControlReply, ControlRequest } from './http-control';
import { parseControlJson } from './request-json';
import type { RepositoryApiContext } from '../../repository/repository-api';
import { isRepositoryRoute, repositoryHttp } from './repository-control';
import { checkModelName } from '../../request/model-name';
import type { ServerSnapshot } from '../../request/server-snapshot';
import type { ShmRegistry } from '../shm-registry';
import { shmHttp } from './shm-control';
import type { LogLine } from '../../logging/model-log-book';

export interface ControlContext {
  snapshot(): ServerSnapshot;
  telemetry: Telemetry;
  tracer: Tracer;
  log: Logger;
  /** The repository extension (repository-control.ts); absent = 501. */
  repository?: RepositoryApiContext;
  /** Client system shared memory (shm-registry.ts); absent = 501. */
  shm?: ShmRegistry;
  /** The metrics endpoint's text (`GET /v2/nodetron/metrics`); absent with --allow-metrics=false. */
  metricsText?: () => Promise<string>;
  /** `GET /v2/nodetron/status` (console-status.ts); absent = 501. */
  status?: () => unknown;
  /** `GET /v2/nodetron/models/<model>/log[?after=<seq>]`: the model's last log lines (logging/model-log-book.ts); absent = 501. */
  modelLog?: (model: string, after: number) => LogLine[];
}

export class ControlApi {
  constructor(private readonly ctx: ControlContext) {}

  /**
   * `model_stats` entries: every READY version of every model (no name), of
   * one model, or one version; models by name, versions ascending.
   */
  modelStatistics(model?: string, version?: number): ModelStatisticsJson[] {
    const snapshot = this.ctx.snapshot();
    const readyOf = (name: string): number[] => {
      const view = Object.prototype.hasOwnProperty.call(snapshot.models, name) ? snapshot.models[name] : undefined;
      return (view?.versions ?? [])
        .filter((v) => v.state === 'READY')
        .map((v) => v.version)
        .sort((a, b) => a - b);
    };
    let pairs: [string, number][];
    if (model === undefined) {
      pairs = Object.keys(snapshot.models)
        .sort()
        .flatMap((name) => readyOf(name).map((v): [string, number] => [name, v]));
    } else {
      const ready = readyOf(model);
      if (ready.length === 0) {
        checkModelName(model);
        throw new ServerError('INVALID_ARG', `requested model '${model}' is not available`);
      }
      if (version !== undefined && !ready.includes(version)) {
        throw new ServerError('INVALID_ARG', `requested model version is not available for model '${model}'`);
      }
      pairs = (version === undefined ? ready : [version]).map((v) => [model, v]);
    }
    const out: ModelStatisticsJson[] = [];
    for (const [name, v] of pairs) {
      const s = this.ctx.telemetry.statistics(name, v);
      if (s !== undefined) out.push(s);
    }
    return out;
  }

  logSettings(): LogSettingsJson {
    return logSettingsJson(this.ctx.log.settings());
  }

  updateLogSettings(body: unknown): LogSettingsJson {
    return updateLogSettings(this.ctx.log, body);
  }

  /** Global setting, or a model's (which must have a READY version). */
  traceSettings(model?: string): TraceSettingJson {
    if (model !== undefined) this.requireReady(model);
    return this.ctx.tracer.settings(model);
  }

  updateTraceSettings(model: string | undefined, body: unknown): TraceSettingJson {
    if (model !== undefined) this.requireReady(model);
    return this.ctx.tracer.update(model, body);
  }

  /** The HTTP threads' control channel. */
  http(req: ControlRequest): ControlReply | Promise<ControlReply> {
    if (isRepositoryRoute(req)) return repositoryHttp(this.ctx.repository, req);
    if (req.route.kind === 'shm' && this.ctx.shm !== undefined) return shmHttp(this.ctx.shm, req);
    if (req.route.kind === 'nodetron_metrics') return this.metricsHttp(req.id);
    if (req.route.kind === 'nodetron_model_log' && this.ctx.modelLog !== undefined) {
      const { model, after } = req.route;
      if (!Object.prototype.hasOwnProperty.call(this.ctx.snapshot().models, model)) {
        return {
          t: 'control_reply',
          id: req.id,
          status: 404,
          body: JSON.stringify({ error: `model '${model}' is not in the model repository: GET /v2/repository/index lists the models` }),
        };
      }
      return { t: 'control_reply', id: req.id, status: 200, body: JSON.stringify({ model, lines: this.ctx.modelLog(model, after) }) };
    }
    if (req.route.kind === 'nodetron_status' && this.ctx.status !== undefined) {
      return { t: 'control_reply', id: req.id, status: 200, body: JSON.stringify(this.ctx.status()) };
    }
    try {
      return { t: 'control_reply', id: req.id, status: 200, body: JSON.stringify(this.route(req)) };
    } catch (err) {
      const info = toErrorInfo(err);
      return { t: 'control_reply', id: req.id, status: HTTP_STATUS[info.code], body: JSON.stringify({ error: info.message }) };
    }
  }

  /** The metrics text on the HTTP port; Triton's 'Metrics not enabled' hint when there is none. */
  private async metricsHttp(id: number): Promise<ControlReply> {
    if (this.ctx.metricsText === undefined) {
      return {
        t: 'control_reply',
        id,
        status: 400,
        body: JSON.stringify({ error: 'metrics are off (--allow-metrics=false): start the server with --allow-metrics=true to see them here' }),
      };
    }
    try {
      return { t: 'control_reply', id, status: 200, body: await this.ctx.metricsText(), contentType: 'text/plain; version=0.0.4; charset=utf-8' };
    } catch (err) {
      return { t: 'control_reply', id, status: 500, body: JSON.stringify({ error: `failed to collect metrics: ${toErrorInfo(err).message}` }) };
    }
  }

  private route(req: ControlRequest): unknown {
    const r = req.route;
    const post = req.method === 'POST';
    switch (r.kind) {
      case 'model_stats':
        return { model_stats: this.modelStatistics(r.model, r.version === undefined ? undefined : Number(r.version)) };
      case 'logging':
        return post ? this.updateLogSettings(parseControlJson(req.body)) : this.logSettings();
      case 'trace':
        return post ? this.updateTraceSettings(undefined, parseControlJson(req.body)) : this.traceSettings();
      case 'model_trace':
        return post ? this.updateTraceSettings(r.model, parseControlJson(req.body)) : this.traceSettings(r.model);
      default:
        throw new ServerError('UNSUPPORTED', 'unknown control route');
    }
  }

  private requireReady(model: string): void {
    const models = this.ctx.snapshot().models;
    const view = Object.prototype.hasOwnProperty.call(models, model) ? models[model] : undefined;
    if (view === undefined) checkModelName(model);
    if (view === undefined || !view.versions.some((v) => v.state === 'READY')) throw unknownTraceModel(model);
  }
}
