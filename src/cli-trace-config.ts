/**
 * `--trace-config [<mode>,]<setting>=<value>` and its deprecated single-purpose
 * flags (protocol.md §6.6), resolved into one settings object with Triton's
 * defaults.
 */
import { CliError, parseGroupSetting, parseIntValue } from './cli-values';

export type TraceLevel = 'TIMESTAMPS' | 'TENSORS';
export type TraceMode = 'triton' | 'opentelemetry';

export interface TraceConfig {
  /** Enabled levels; empty means OFF. */
  level: TraceLevel[];
  rate: number;
  /** -1 = unlimited. */
  count: number;
  mode: TraceMode;
  /** Triton mode: trace file ('' = none). */
  file: string;
  /** Triton mode: traces per file before rolling (0 = never). */
  logFrequency: number;
  /** OpenTelemetry mode settings: `url`, `bsp_*` as given (url defaulted). */
  opentelemetry: Record<string, string>;
  /** OpenTelemetry `resource=<key>=<value>` pairs. */
  opentelemetryResource: Record<string, string>;
}

/** Values of the deprecated trace flags, in the order given. */
export interface DeprecatedTraceFlags {
  file?: string;
  level: string[];
  rate?: string;
  count?: string;
  logFrequency?: string;
}

const FORMAT_ERROR = "--trace-config option format is '<trace mode>,<setting>=<value>' or '<setting>=<value>'";
const DEFAULT_OTEL_URL = 'http://localhost:4318/v1/traces';

export function defaultTraceConfig(): TraceConfig {
  return {
    level: [],
    rate: 1000,
    count: -1,
    mode: 'triton',
    file: '',
    logFrequency: 0,
    opentelemetry: { url: DEFAULT_OTEL_URL },
    opentelemetryResource: {},
  };
}

/** Triton's trace-level words: off/false, timestamps/true, tensors (any case). */
function parseTraceLevel(value: string): TraceLevel | undefined {
  switch (value.toLowerCase()) {
    case 'off':
    case 'false':
      return undefined;
    case 'timestamps':
    case 'true':
      return 'TIMESTAMPS';
    case 'tensors':
      return 'TENSORS';
    default:
      throw new CliError(`invalid value for trace level option: ${value}`);
  }
}

function addLevel(cfg: TraceConfig, value: string): void {
  const level = parseTraceLevel(value);
  if (level !== undefined && !cfg.level.includes(level)) cfg.level.push(level);
}

function applyGlobal(cfg: TraceConfig, setting: string, value: string): void {
  switch (setting) {
    case 'level':
      addLevel(cfg, value);
      return;
    case 'rate':
      cfg.rate = parseIntValue('trace-config', value);
      return;
    case 'count':
      cfg.count = parseIntValue('trace-config', value);
      return;
    case 'mode': {
      const mode = value.toLowerCase();
      if (mode !== 'triton' && mode !== 'opentelemetry') {
        throw new CliError(`Unsupported trace mode: ${value}`);
      }
      cfg.mode = mode;
      return;
    }
    default:
      throw new CliError(`Unsupported trace setting: ${setting}`);
  }
}

function applyTriton(cfg: TraceConfig, setting: string, value: string): void {
  if (setting === 'file') cfg.file = value;
  else if (setting === 'log-frequency') cfg.logFrequency = parseIntValue('trace-config', value);
  else throw new CliError(`Unsupported trace setting for mode triton: ${setting}`);
}

function applyOpenTelemetry(cfg: TraceConfig, setting: string, value: string, arg: string): void {
  if (setting !== 'resource') {
    cfg.opentelemetry[setting] = value;
    return;
  }
  const eq = value.indexOf('=');
  if (eq <= 0) throw new CliError(`${FORMAT_ERROR}. Got ${arg}`);
  cfg.opentelemetryResource[value.slice(0, eq)] = value.slice(eq + 1);
}

/**
 * Resolves the trace settings. Deprecated flags are applied first so that an
 * explicit `--trace-config` wins, and each one adds a warning.
 */
export function resolveTraceConfig(args: string[], deprecated: DeprecatedTraceFlags, warnings: string[]): TraceConfig {
  const cfg = defaultTraceConfig();
  const warn = (flag: string, replacement: string): void => {
    warnings.push(`Warning: '--${flag}' has been deprecated and will be removed in future releases. ` + `Please use '--trace-config ${replacement}' instead.`);
  };
  if (deprecated.file !== undefined) {
    warn('trace-file', 'triton,file=<path>');
    cfg.file = deprecated.file;
  }
  if (deprecated.level.length > 0) {
    warn('trace-level', 'level=<level>');
    for (const l of deprecated.level) addLevel(cfg, l);
  }
  if (deprecated.rate !== undefined) {
    warn('trace-rate', 'rate=<rate value>');
    cfg.rate = parseIntValue('trace-rate', deprecated.rate);
  }
  if (deprecated.count !== undefined) {
    warn('trace-count', 'count=<count>');
    cfg.count = parseIntValue('trace-count', deprecated.count);
  }
  if (deprecated.logFrequency !== undefined) {
    warn('trace-log-frequency', 'triton,log-frequency=<value>');
    cfg.logFrequency = parseIntValue('trace-log-frequency', deprecated.logFrequency);
  }
  for (const arg of args) {
    const { group, setting, value } = parseGroupSetting(arg, FORMAT_ERROR);
    if (group === '') applyGlobal(cfg, setting, value);
    else if (group === 'triton') applyTriton(cfg, setting, value);
    else if (group === 'opentelemetry') applyOpenTelemetry(cfg, setting, value, arg);
    else throw new CliError(`Unsupported trace mode: ${group}`);
  }
  return cfg;
}
