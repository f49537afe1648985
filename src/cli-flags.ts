/**
 * The tritonserver flag table (protocol.md §6), the usage text, and the yargs
 * tokeniser. Before yargs, long flags are resolved as getopt_long does
 * (an unambiguous prefix names its flag) and an unknown one is refused with a
 * suggestion; yargs then only splits the command line. Values are checked by
 * cli-options.ts so the error texts are Triton's. What each flag means is
 * cli-help.ts.
 */
import yargs from 'yargs/yargs';
import { matchFlag } from './cli-flag-match';
import { helpText } from './cli-help';
import { CliError, CliExit, parseBoolValue, parseIntValue } from './cli-values';
import { SERVER_VERSION } from './server-info';

export type FlagKind = 'bool' | 'int' | 'int64' | 'float' | 'string' | 'switch';
export interface FlagSpec {
  name: string;
  kind: FlagKind;
  repeatable?: boolean;
  /** Placeholder shown in the usage text. */
  arg?: string;
  /** Values it takes as separate tokens (argparse's nargs), joined with spaces; absent = 1. */
  nargs?: number;
}

const f = (name: string, kind: FlagKind, arg?: string, repeatable = false): FlagSpec => ({ name, kind, arg, repeatable });

/** Every flag of §6, in the usage order, then nodetron's own (not tritonserver's). */
export const FLAGS: readonly FlagSpec[] = [
  f('help', 'switch'),
  f('version', 'switch'),
  f('id', 'string'),
  f('model-repository', 'string', '<path>', true),
  f('model-store', 'string', '<path>', true),
  f('model-control-mode', 'string', '<none|poll|explicit>'),
  f('repository-poll-secs', 'int'),
  f('load-model', 'string', '<name>', true),
  f('model-config-name', 'string'),
  f('exit-on-error', 'bool'),
  f('strict-readiness', 'bool'),
  f('disable-auto-complete-config', 'switch'),
  f('strict-model-config', 'bool'),
  f('model-load-thread-count', 'int'),
  f('model-load-retry-count', 'int'),
  f('model-namespacing', 'bool'),
  f('exit-timeout-secs', 'int'),
  f('enable-peer-access', 'bool'),
  f('backend-directory', 'string', '<path>'),
  f('backend-config', 'string', '<backend>,<setting>=<value>', true),
  f('repoagent-directory', 'string', '<path>'),
  f('allow-http', 'bool'),
  f('http-port', 'int'),
  f('http-address', 'string'),
  f('reuse-http-port', 'bool'),
  f('http-thread-count', 'int'),
  f('http-header-forward-pattern', 'string', '<regex>'),
  f('http-max-input-size', 'int64'),
  f('http-restricted-api', 'string', '<apis>:<key>=<value>', true),
  f('openai-port', 'int'),
  { ...f('openai-restricted-api', 'string', '<apis> <key> <value>', true), nargs: 3 },
  f('allow-grpc', 'bool'),
  f('grpc-port', 'int'),
  f('grpc-address', 'string'),
  f('reuse-grpc-port', 'bool'),
  f('grpc-header-forward-pattern', 'string', '<regex>'),
  f('grpc-infer-thread-count', 'int'),
  f('grpc-infer-allocation-pool-size', 'int'),
  f('grpc-max-response-pool-size', 'int'),
  f('grpc-use-ssl', 'bool'),
  f('grpc-use-ssl-mutual', 'bool'),
  f('grpc-server-cert', 'string', '<file>'),
  f('grpc-server-key', 'string', '<file>'),
  f('grpc-root-cert', 'string', '<file>'),
  f('grpc-infer-response-compression-level', 'string', '<none|low|medium|high>'),
  f('grpc-keepalive-time', 'int'),
  f('grpc-keepalive-timeout', 'int'),
  f('grpc-keepalive-permit-without-calls', 'bool'),
  f('grpc-http2-max-pings-without-data', 'int'),
  f('grpc-http2-min-recv-ping-interval-without-data', 'int'),
  f('grpc-http2-max-ping-strikes', 'int'),
  f('grpc-max-connection-age', 'int'),
  f('grpc-max-connection-age-grace', 'int'),
  f('grpc-restricted-protocol', 'string', '<protocols>:<key>=<value>', true),
  f('allow-metrics', 'bool'),
  f('allow-gpu-metrics', 'bool'),
  f('allow-cpu-metrics', 'bool'),
  f('metrics-address', 'string'),
  f('metrics-port', 'int'),
  f('metrics-interval-ms', 'int'),
  f('metrics-config', 'string', '<setting>=<value>', true),
  f('log-verbose', 'string', '<integer>'),
  f('log-info', 'bool'),
  f('log-warning', 'bool'),
  f('log-error', 'bool'),
  f('log-format', 'string', '<default|ISO8601|json>'),
  f('log-file', 'string', '<path>'),
  f('trace-config', 'string', '[<mode>,]<setting>=<value>', true),
  f('trace-file', 'string', '<path>'),
  f('trace-level', 'string', '<level>', true),
  f('trace-rate', 'int'),
  f('trace-count', 'int'),
  f('trace-log-frequency', 'int'),
  f('cache-config', 'string', '<cache>,<setting>=<value>', true),
  f('cache-directory', 'string', '<path>'),
  f('response-cache-byte-size', 'int64'),
  f('rate-limit', 'string', '<off|execution_count>'),
  f('rate-limit-resource', 'string', '<name>:<count>[:<device>]', true),
  f('pinned-memory-pool-byte-size', 'int64'),
  f('cuda-memory-pool-byte-size', 'string', '<gpu>:<bytes>', true),
  f('cuda-virtual-address-size', 'string', '<gpu>:<bytes>', true),
  f('min-supported-compute-capability', 'float'),
  f('buffer-manager-thread-count', 'int'),
  f('host-policy', 'string', '<name>,<setting>=<value>', true),
  f('model-load-gpu-limit', 'string', '<gpu>:<fraction>', true),
  f('allow-client-shm', 'bool'),
  f('allow-sagemaker', 'bool'),
  f('sagemaker-port', 'int'),
  f('sagemaker-safe-port-range', 'string', '<from>-<to>'),
  f('sagemaker-thread-count', 'int'),
  f('allow-vertex-ai', 'bool'),
  f('vertex-ai-port', 'int'),
  f('vertex-ai-thread-count', 'int'),
  f('vertex-ai-default-model', 'string', '<name>'),
  // nodetron's own
  f('http-codec-offload-bytes', 'int64'),
  f('log-access', 'bool'),
  f('max-queued-requests', 'int'),
  f('http-cors-origin', 'string', '<origin|*>', true),
  f('http-console', 'string', '<path|false>'),
  f('http-max-json-response-size', 'int64'),
  f('exit-quiet-ms', 'int'),
  f('model-cache-dir', 'string', '<path>'),
  f('inline-execution-max-us', 'int'),
  f('http-header-timeout-ms', 'int'),
  f('http-body-min-rate', 'int'),
  f('http-keepalive-timeout-ms', 'int'),
  f('http-max-connections', 'int'),
  f('http-max-connections-per-thread', 'int'),
  f('http-auth-token-file', 'string', '<path>'),
  f('grpc-auth-token-file', 'string', '<path>'),
  f('openai-auth-token-file', 'string', '<path>'),
  f('auth-exempt-health', 'bool'),
  f('grpc-max-concurrent-streams', 'int'),
  f('grpc-max-connection-idle', 'int'),
  f('grpc-max-connections', 'int'),
  f('grpc-reflection', 'bool'),
  f('python-env-cache-dir', 'string', '<path>'),
  f('python-env-pip-args', 'string', '<args>'),
  f('python-env-build-timeout-secs', 'int'),
];

const PLACEHOLDER: Record<FlagKind, string> = {
  bool: '<boolean>',
  int: '<integer>',
  int64: '<integer>',
  float: '<float>',
  string: '<string>',
  switch: '',
};

/** The --help text (cli-help.ts lays it out for 80 columns). */
export function usageText(): string {
  return helpText(
    FLAGS.map((spec) => ({
      name: spec.name,
      arg: spec.arg ?? PLACEHOLDER[spec.kind],
      repeatable: spec.repeatable === true,
    })),
  );
}

/** What --version prints. */
export function versionText(): string {
  return `tritonserver ${SERVER_VERSION} (nodetron ${NODETRON_VERSION})\n`;
}
/** package.json's version; kept equal by a unit test. */
export const NODETRON_VERSION = '0.1.0';

/**
 * What cli.ts prints on stderr for a CliError: the message and where to look,
 * not the whole usage text; `--help`/`--version` print their text.
 */
export function formatCliError(err: CliError): string {
  if (err instanceof CliExit) return err.text;
  if (!err.showUsage) return `error: creating server: Invalid argument - ${err.message}\n`;
  return `${err.message} (see --help)\n`;
}

/** Raw values per flag, in command-line order. */
export type RawValues = Map<string, string[]>;

/** Tokenises with yargs; refuses unknown flags and turns `--help` into a usage error. */
export function tokenize(argv: string[]): { raw: RawValues; positionals: string[] } {
  argv = resolveLongFlags(argv);
  let parser = yargs(argv)
    .help(false)
    .version(false)
    .exitProcess(false)
    .locale('en')
    .strictOptions(true)
    .parserConfiguration({
      'camel-case-expansion': false,
      'dot-notation': false,
      'short-option-groups': false,
      'boolean-negation': false,
      'parse-numbers': false,
      'parse-positional-numbers': false,
      'duplicate-arguments-array': true,
      'flatten-duplicate-arrays': true,
      'greedy-arrays': false,
      'populate--': false,
    })
    .fail((msg: string | undefined, err: Error | undefined) => {
      throw unknownFlagError(argv, msg ?? err?.message ?? 'invalid command line');
    });
  for (const spec of FLAGS) {
    parser = parser.option(spec.name, { type: spec.kind === 'switch' ? 'boolean' : 'string' });
  }
  const parsed = parser.parseSync() as Record<string, unknown>;
  const raw: RawValues = new Map();
  for (const spec of FLAGS) {
    const v = parsed[spec.name];
    if (v === undefined) continue;
    raw.set(spec.name, (Array.isArray(v) ? v : [v]).map(String));
  }
  if (raw.has('help')) throw new CliExit(usageText());
  if (raw.has('version')) throw new CliExit(versionText());
  const positionals = ((parsed['_'] ?? []) as unknown[]).map(String);
  return { raw, positionals };
}

/**
 * Long flags as getopt_long reads them: `--name`, `--name=value`, and an
 * unambiguous prefix of a name (`--model-repos=/m`), rewritten to the full
 * name. An ambiguous prefix names its candidates; an unknown name names the
 * flag it probably meant. Nothing after a bare `--` is a flag.
 */
export function resolveLongFlags(argv: string[]): string[] {
  const names = FLAGS.map((s) => s.name);
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === '--') {
      out.push(...argv.slice(i));
      break;
    }
    if (!token.startsWith('--')) {
      out.push(token);
      continue;
    }
    const eq = token.indexOf('=');
    const typed = token.slice(2, eq < 0 ? undefined : eq);
    const m = matchFlag(typed, names);
    if (m.kind === 'ambiguous') {
      throw new CliError(`option '--${typed}' is ambiguous; possibilities: ${m.candidates.map((c) => `'--${c}'`).join(' ')}`);
    }
    if (m.kind === 'unknown') throw unknownFlag(`--${typed}`, m.suggestion);
    // The value of a flag that takes one, when it is the next token, is not a
    // flag name even when it starts with `--`: joined with `=` for yargs.
    const spec = FLAGS.find((f) => f.name === m.name)!;
    // A flag of several values (Triton's OpenAI frontend's `--openai-restricted-api APIS KEY VALUE`)
    // takes as many tokens, unless the next one holds them all (quoted).
    const n = spec.nargs ?? 1;
    if (eq < 0 && n > 1 && i + 1 < argv.length && !/\s/.test(argv[i + 1]!)) {
      out.push(`--${m.name}=${argv.slice(i + 1, i + 1 + n).join(' ')}`);
      i += Math.min(n, argv.length - 1 - i);
    } else if (eq < 0 && spec.kind !== 'switch' && i + 1 < argv.length) out.push(`--${m.name}=${argv[++i]!}`);
    else out.push(`--${m.name}${eq < 0 ? '' : token.slice(eq)}`);
  }
  return out;
}

function unknownFlag(flag: string, suggestion: string | undefined): CliError {
  return new CliError(`Unrecognized option: ${flag}${suggestion === undefined ? '' : `; did you mean --${suggestion}?`}`);
}

/** yargs says `Unknown argument(s): a, b` (single-dash forms); name the first one as it was typed. */
function unknownFlagError(argv: string[], msg: string): CliError {
  const m = /^Unknown arguments?: (.*)$/.exec(msg);
  if (m === null) return new CliError(msg);
  const name = m[1]!.split(', ')[0]!;
  const token = argv.find((t) => t.startsWith('-') && t.replace(/^-+/, '').split('=')[0] === name);
  const flag = token !== undefined ? token.split('=')[0]! : name.length === 1 ? `-${name}` : `--${name}`;
  return unknownFlag(flag, undefined);
}

/** Typed access to the raw values; scalar flags take the last occurrence, like getopt. */
export class Reader {
  constructor(private readonly raw: RawValues) {}
  has(name: string): boolean {
    return this.raw.has(name);
  }
  all(name: string): string[] {
    return this.raw.get(name) ?? [];
  }
  str(name: string): string | undefined {
    const v = this.raw.get(name);
    return v?.[v.length - 1];
  }
  string(name: string, def: string): string {
    return this.str(name) ?? def;
  }
  bool(name: string, def: boolean): boolean {
    const v = this.str(name);
    return v === undefined ? def : parseBoolValue(name, v);
  }
  int(name: string, def: number, wide = false): number {
    const v = this.str(name);
    return v === undefined ? def : parseIntValue(name, v, wide);
  }
}
