/**
 * Triton-mode tracing (protocol.md §1.12, §6.6): which requests are traced
 * (one in every `rate` per setting owner, at most `count`), and the trace
 * file. Each traced request becomes Triton's pair of JSON objects, a model
 * record and its timestamps, both carrying the trace id:
 *   {"id":1,"model_name":"m","model_version":1,"request_id":"r"}
 *   {"id":1,"timestamps":[{"name":"REQUEST_START","ns":...}, ...]}
 * The file is a JSON array. With log_frequency N the traces are written to
 * `<file>.<index>` every N traces; otherwise to `<file>` at shutdown.
 * Only TIMESTAMPS are recorded (a TENSORS level records timestamps too).
 */
import fs from 'node:fs';
import type { TraceConfig } from '../cli-trace-config';
import { ServerError } from '../core/errors';
import type { InferRequest } from '../core/request';
import type { RequestDoneStats } from '../scheduler/scheduler-hooks';
import {
  applyTraceUpdate,
  effectiveSetting,
  settingFromConfig,
  traceSettingJson,
  type TraceOverride,
  type TraceSetting,
  type TraceSettingJson,
} from './trace-settings';

const GLOBAL = '';

export class Tracer {
  private global: TraceSetting;
  private readonly overrides = new Map<string, TraceOverride>();
  /** Requests seen per setting owner (a model with an override, or GLOBAL). */
  private readonly seen = new Map<string, number>();
  private pending: object[] = [];
  private pendingTraces = 0;
  private nextId = 1;
  private fileIndex = 0;
  /** False when no setting has a level: the hot path checks only this. */
  active = false;

  constructor(
    config: TraceConfig,
    private readonly onError: (msg: string) => void,
  ) {
    this.global = settingFromConfig(config);
    this.refresh();
  }

  settings(model?: string): TraceSettingJson {
    return traceSettingJson(model === undefined ? this.global : effectiveSetting(this.global, this.overrides.get(model)));
  }

  /** Apply a parsed POST body; returns the resulting setting. */
  update(model: string | undefined, body: unknown): TraceSettingJson {
    if (model === undefined) {
      this.global = applyTraceUpdate(this.global, body, false);
    } else {
      const o = applyTraceUpdate(this.overrides.get(model) ?? {}, body, true);
      if (Object.keys(o).length === 0) this.overrides.delete(model);
      else this.overrides.set(model, o);
    }
    this.refresh();
    return this.settings(model);
  }

  /** Hot path, only while `active`: sample and record one finished request. */
  requestDone(req: InferRequest, s: RequestDoneStats): void {
    const override = this.overrides.get(req.model);
    const owner = override?.level !== undefined || override?.rate !== undefined || override?.count !== undefined ? req.model : GLOBAL;
    const setting = effectiveSetting(this.global, override);
    if (setting.level.length === 0 || setting.count === 0 || setting.rate === 0) return;
    const n = (this.seen.get(owner) ?? 0) + 1;
    this.seen.set(owner, n);
    if (n % setting.rate !== 0) return;
    if (setting.count > 0) {
      if (owner === GLOBAL || override?.count === undefined) this.global.count--;
      else override.count = setting.count - 1;
    }
    this.record(req, s, setting);
  }

  /** Write what is buffered (at shutdown). */
  flush(): void {
    if (this.pendingTraces === 0) return;
    const file = this.global.logFrequency > 0 ? `${this.global.file}.${this.fileIndex++}` : this.global.file;
    this.write(file);
  }

  private record(req: InferRequest, s: RequestDoneStats, setting: TraceSetting): void {
    if (setting.file === '') return;
    const id = this.nextId++;
    const ts = (name: string, ns: number): { name: string; ns: number } => ({ name, ns });
    const timestamps = [ts('REQUEST_START', s.queueStartNs), ts('QUEUE_START', s.queueStartNs)];
    if (s.computeStartNs !== 0) {
      timestamps.push(
        ts('COMPUTE_START', s.computeStartNs),
        ts('COMPUTE_INPUT_END', s.computeInputEndNs),
        ts('COMPUTE_OUTPUT_START', s.computeInferEndNs),
        ts('COMPUTE_END', s.computeEndNs),
      );
    }
    timestamps.push(ts('REQUEST_END', s.endNs));
    const head: Record<string, unknown> = { id, model_name: req.model, model_version: req.version };
    if (req.id !== '') head['request_id'] = req.id;
    this.pending.push(head, { id, timestamps });
    this.pendingTraces++;
    if (setting.logFrequency > 0 && this.pendingTraces >= setting.logFrequency) {
      this.write(`${setting.file}.${this.fileIndex++}`);
    }
  }

  private write(file: string): void {
    const body = `[${this.pending.map((o) => JSON.stringify(o)).join(',')}]\n`;
    this.pending = [];
    this.pendingTraces = 0;
    try {
      fs.writeFileSync(file, body);
    } catch (err) {
      this.onError(`failed to write trace file '${file}': ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private refresh(): void {
    this.active = this.global.level.length > 0 || [...this.overrides.values()].some((o) => o.level !== undefined && o.level.length > 0);
  }
}

/** Per-model trace routes need a READY model (protocol.md §1.12). */
export function unknownTraceModel(model: string): ServerError {
  return new ServerError('INVALID_ARG', `Request for unknown model : ${model}`);
}
