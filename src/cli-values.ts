/**
 * Value parsers for tritonserver flags (protocol.md §6). Each one is pure and
 * throws CliError with Triton's text, so cli-options.ts only wires flags to
 * parsers and checks the cross-flag rules.
 */

/** A command-line problem: printed after the usage text, exit status 1. */
export class CliError extends Error {
  /** false for errors Triton reports as `error: creating server: ...` (no usage). */
  readonly showUsage: boolean;
  constructor(message: string, showUsage = true) {
    super(message);
    this.name = 'CliError';
    this.showUsage = showUsage;
  }
}

/** `--help` / `--version`: print `text` on stdout and exit 0. */
export class CliExit extends CliError {
  constructor(readonly text: string) {
    super('', false);
    this.name = 'CliExit';
  }
}

/** `Bad option: "--<flag>".` + newline + detail, as Triton's parser words it. */
export function badOption(flag: string, detail: string): CliError {
  return new CliError(`Bad option: "--${flag}".\n${detail}`);
}

export function parseBoolValue(flag: string, value: string): boolean {
  const v = value.toLowerCase();
  if (v === 'true' || v === 'on' || v === '1') return true;
  if (v === 'false' || v === 'off' || v === '0') return false;
  throw badOption(flag, `invalid value for bool option: ${value}`);
}

const INT_RE = /^\s*[+-]?\d+$/;
const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

/**
 * Whole numbers only (Triton's stoi would take "12abc" as 12; we refuse it).
 * `wide` allows the int64 flags (byte sizes) up to 2^53.
 */
export function parseIntValue(flag: string, value: string, wide = false): number {
  const n = INT_RE.test(value) ? Number(value) : NaN;
  const ok = Number.isSafeInteger(n) && (wide || (n >= INT32_MIN && n <= INT32_MAX));
  if (!ok) throw badOption(flag, `Invalid option value. Got ${value}`);
  return n;
}

/** `--log-verbose` takes an integer level, or true (=1) / false (=0). */
export function parseIntOrBool(flag: string, value: string): number {
  const v = value.toLowerCase();
  if (v === 'true' || v === 'on') return 1;
  if (v === 'false' || v === 'off') return 0;
  return parseIntValue(flag, value);
}

export function parseFloatValue(flag: string, value: string): number {
  const n = value.trim() === '' ? NaN : Number(value);
  if (!Number.isFinite(n)) throw badOption(flag, `Invalid option value. Got ${value}`);
  return n;
}

/** One of `choices`, compared case-insensitively; returns the canonical spelling. */
export function parseChoice<T extends string>(flag: string, value: string, choices: readonly T[]): T {
  const found = choices.find((c) => c.toLowerCase() === value.toLowerCase());
  if (found === undefined) throw new CliError(`invalid argument for --${flag}`);
  return found;
}

/** `[<group>,]<setting>=<value>`: the group ('' when absent), setting and value. */
export interface GroupSetting {
  group: string;
  setting: string;
  value: string;
}

/**
 * Splits `<group>,<setting>=<value>` or `<setting>=<value>`. A comma counts as
 * the group separator only when it comes before the first '=', so a global
 * setting may carry commas in its value.
 */
export function parseGroupSetting(arg: string, formatError: string, groupRequired = false): GroupSetting {
  const eq = arg.indexOf('=');
  if (eq < 0) throw new CliError(`${formatError}. Got ${arg}`);
  const comma = arg.indexOf(',');
  const hasGroup = comma >= 0 && comma < eq;
  const group = hasGroup ? arg.slice(0, comma) : '';
  const setting = arg.slice(hasGroup ? comma + 1 : 0, eq);
  const value = arg.slice(eq + 1);
  if ((hasGroup && group === '') || (groupRequired && !hasGroup) || setting === '' || value === '') {
    throw new CliError(`${formatError}. Got ${arg}`);
  }
  return { group, setting, value };
}

/** Collects `[<group>,]<setting>=<value>` flags into group → setting → value (last wins). */
export function parseGroupSettings(args: string[], formatError: string, groupRequired = false): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const arg of args) {
    const { group, setting, value } = parseGroupSetting(arg, formatError, groupRequired);
    (out[group] ??= {})[setting] = value;
  }
  return out;
}

/** The categories of `--http-restricted-api` / `--grpc-restricted-protocol`. */
export const RESTRICTED_CATEGORIES = [
  'health',
  'metadata',
  'inference',
  'shared-memory',
  'model-config',
  'model-repository',
  'statistics',
  'trace',
  'logging',
] as const;

export interface RestrictedGroup {
  apis: string[];
  key: string;
  value: string;
}

/** `<api>[,<api>...]:<key>=<value>`; a category may belong to one group only. */
export function parseRestricted(flag: string, args: string[]): RestrictedGroup[] {
  const groups: RestrictedGroup[] = [];
  const seen = new Set<string>();
  for (const arg of args) {
    const colon = arg.indexOf(':');
    const eq = arg.indexOf('=', colon + 1);
    if (colon <= 0 || eq < 0 || eq === colon + 1) {
      throw new CliError(`--${flag} option format is '<API 1>,<API 2>:<restricted-key>=<restricted-value>'. Got ${arg}`);
    }
    const apis = arg
      .slice(0, colon)
      .split(',')
      .map((a) => a.trim());
    for (const api of apis) {
      if (!(RESTRICTED_CATEGORIES as readonly string[]).includes(api)) {
        throw new CliError(`unknown restricted ${flag === 'http-restricted-api' ? 'api' : 'protocol'} '${api}'`);
      }
      if (seen.has(api)) {
        throw new CliError(`restricted api '${api}' can not be specified in multiple config groups`);
      }
      seen.add(api);
    }
    groups.push({ apis, key: arg.slice(colon + 1, eq), value: arg.slice(eq + 1) });
  }
  return groups;
}

/** The categories of `--openai-restricted-api` (Triton's OpenAI frontend's). */
export const OPENAI_RESTRICTED_CATEGORIES = ['inference', 'embedding', 'model-repository', 'metrics', 'health'] as const;

/** `<api>[,<api>...] <key> <value>` (three tokens, or one with spaces), as Triton's OpenAI frontend takes it. */
export function parseOpenAIRestricted(args: string[]): RestrictedGroup[] {
  const groups: RestrictedGroup[] = [];
  const seen = new Set<string>();
  for (const arg of args) {
    const parts = arg.trim().split(/\s+/);
    if (parts.length !== 3 || parts[0] === '') {
      throw new CliError(`--openai-restricted-api option format is '<API_1>,<API_2>,... <restricted-key> <restricted-value>'. Got ${arg}`);
    }
    const apis = parts[0]!.split(',').map((a) => a.trim());
    for (const api of apis) {
      if (!(OPENAI_RESTRICTED_CATEGORIES as readonly string[]).includes(api)) {
        throw new CliError(`unknown restricted api '${api}' for --openai-restricted-api; apis: ${OPENAI_RESTRICTED_CATEGORIES.join(', ')}`);
      }
      if (seen.has(api)) throw new CliError(`restricted api '${api}' can not be specified in multiple config groups`);
      seen.add(api);
    }
    groups.push({ apis, key: parts[1]!, value: parts[2]! });
  }
  return groups;
}

export interface RateLimitResource {
  name: string;
  count: number;
  /** Device id; absent = a global resource shared by all devices. */
  device?: number;
}

/** `<name>:<count>[:<device>]`. */
export function parseRateLimitResource(arg: string): RateLimitResource {
  const parts = arg.split(':');
  const formatError = new CliError(`--rate-limit-resource option format is '<resource_name>:<count>:<device>' or '<resource_name>:<count>'. Got ${arg}`);
  if ((parts.length !== 2 && parts.length !== 3) || parts[0] === '') throw formatError;
  const count = parseIntValue('rate-limit-resource', parts[1]!);
  if (parts.length === 2) return { name: parts[0]!, count };
  return { name: parts[0]!, count, device: parseIntValue('rate-limit-resource', parts[2]!) };
}

/** `<gpu>:<number>` flags (pool sizes, address sizes, load limits), keyed by GPU id. */
export function parseGpuValues(flag: string, args: string[], what: string, parseValue: (v: string) => number): Record<number, number> {
  const out: Record<number, number> = {};
  for (const arg of args) {
    const colon = arg.indexOf(':');
    if (colon <= 0 || colon === arg.length - 1) {
      throw new CliError(`--${flag} option format is '<GPU device>:<${what}>'. Got ${arg}`);
    }
    out[parseIntValue(flag, arg.slice(0, colon))] = parseValue(arg.slice(colon + 1));
  }
  return out;
}
