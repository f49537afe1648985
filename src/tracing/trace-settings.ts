/**
 * Trace settings of the trace extension (protocol.md §1.12): the global
 * setting from --trace-config and per-model overrides, their JSON form, and
 * POST bodies validated with Triton's texts. Pure, so it is table-tested.
 */
import { ServerError } from '../core/errors';
import type { TraceConfig, TraceLevel, TraceMode } from '../cli-trace-config';

export interface TraceSetting {
  /** Empty = OFF. */
  level: TraceLevel[];
  rate: number;
  /** Traces still to take; -1 = unlimited. */
  count: number;
  logFrequency: number;
  file: string;
  mode: TraceMode;
  /** OpenTelemetry-mode settings (url, bsp_*), shown as extra members. */
  extra: Record<string, string>;
}

/** A model-level override: each member present overrides the global one. */
export type TraceOverride = Partial<Pick<TraceSetting, 'level' | 'rate' | 'count' | 'logFrequency'>>;

export function settingFromConfig(c: TraceConfig): TraceSetting {
  return {
    level: [...c.level],
    rate: c.rate,
    count: c.count,
    logFrequency: c.logFrequency,
    file: c.file,
    mode: c.mode,
    extra: c.mode === 'opentelemetry' ? { ...c.opentelemetry } : {},
  };
}

export function effectiveSetting(global: TraceSetting, o: TraceOverride | undefined): TraceSetting {
  return o === undefined ? global : { ...global, ...o };
}

export type TraceSettingJson = Record<string, string | string[]>;

export function traceSettingJson(s: TraceSetting): TraceSettingJson {
  const json: TraceSettingJson = {
    trace_level: s.level.length === 0 ? ['OFF'] : [...s.level],
    trace_rate: String(s.rate),
    trace_count: String(s.count),
  };
  if (s.mode === 'triton') {
    json['log_frequency'] = String(s.logFrequency);
    json['trace_file'] = s.file;
  }
  json['trace_mode'] = s.mode;
  if (s.mode === 'opentelemetry') for (const [k, v] of Object.entries(s.extra)) json[k] = v;
  return json;
}

const UINT32_MAX = 4294967295;

function text(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** Triton's values are strings ("1"); numbers are accepted too. */
function parseUnsigned(key: string, v: unknown): number {
  const s = text(v);
  if (!/^\s*-?[0-9]+\s*$/.test(s)) throw new ServerError('INVALID_ARG', `Unable to parse '${key}', got: ${s}`);
  const n = Number(s);
  if (n < 0 || n > UINT32_MAX) {
    throw new ServerError('INVALID_ARG', `Unable to parse '${key}', value is out of range [ 0, ${UINT32_MAX} ], got: ${s}`);
  }
  return n;
}

function parseCount(v: unknown): number {
  const s = text(v);
  if (!/^\s*-?[0-9]+\s*$/.test(s)) throw new ServerError('INVALID_ARG', `Unable to parse 'trace_count', got: ${s}`);
  const n = Number(s);
  if (n < -1) throw new ServerError('INVALID_ARG', `Unable to parse 'trace_count'. Expecting value >= -1, got:${s}`);
  return n;
}

function parseLevels(v: unknown): TraceLevel[] {
  if (!Array.isArray(v)) throw new ServerError('INVALID_ARG', `Unable to parse 'trace_level', expecting an array of strings, got: ${text(v)}`);
  const words = v.map((x) => String(x).toUpperCase());
  if (words.includes('OFF')) {
    if (words.length > 1) throw new ServerError('INVALID_ARG', "Expect only one trace level 'OFF' is specified");
    return [];
  }
  const levels: TraceLevel[] = [];
  // Unknown level strings are ignored, as Triton does.
  for (const w of words) if ((w === 'TIMESTAMPS' || w === 'TENSORS') && !levels.includes(w)) levels.push(w);
  return levels;
}

/**
 * Apply a parsed POST body to `base` (the global setting, or a model
 * override when `model` is true, where JSON null clears a member).
 */
export function applyTraceUpdate<T extends TraceOverride>(base: T, body: unknown, model: boolean): T {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ServerError('INVALID_ARG', 'trace settings request must be a JSON object');
  }
  const b = body as Record<string, unknown>;
  if (b['trace_file'] !== undefined) {
    throw new ServerError('UNSUPPORTED', 'trace file location can not be updated through network protocol');
  }
  const out: T = { ...base };
  const field = <K extends keyof TraceOverride>(key: string, prop: K, parse: (v: unknown) => TraceOverride[K]): void => {
    const v = b[key];
    if (v === undefined) return;
    if (v === null) {
      if (model) delete out[prop];
      return;
    }
    out[prop] = parse(v) as T[K];
  };
  field('trace_level', 'level', parseLevels);
  field('trace_rate', 'rate', (v) => parseUnsigned('trace_rate', v));
  field('trace_count', 'count', parseCount);
  field('log_frequency', 'logFrequency', (v) => parseUnsigned('log_frequency', v));
  return out;
}
