/**
 * The tritonserver flag table (protocol.md §6), the usage text, and the yargs
 * tokeniser. yargs only splits the command line and refuses unknown flags;
 * values are checked by cli-options.ts so the error texts are Triton's.
 */
import yargs from 'yargs/yargs';
import { CliError, parseBoolValue, parseIntValue } from './cli-values';

export type FlagKind = 'bool' | 'int' | 'int64' | 'float' | 'string' | 'switch';
export interface FlagSpec {
  name: string;
  kind: FlagKind;
  repeatable?: boolean;
  /** Placeholder shown in the usage text. */
  arg?: string;
}

const f = (name: string, kind: FlagKind, arg?: string, repeatable = false): FlagSpec => ({ name, kind, arg, repeatable });

/** Every flag of §6, in the usage order, then nodetron's own (not tritonserver's). */
export const FLAGS: readonly FlagSpec[] = [
  f('help', 'switch'),
  f('id', 'string'), f('model-repository', 'string', '<path>', true), f('model-store', 'string', '<path>', true),
  f('model-control-mode', 'string', '<none|poll|explicit>'), f('repository-poll-secs', 'int'),
  f('load-model', 'string', '<name>', true), f('model-config-name', 'string'),
  f('exit-on-error', 'bool'), f('strict-readiness', 'bool'), f('disable-auto-complete-config', 'switch'),
  f('strict-model-config', 'bool'), f('model-load-thread-count', 'int'), f('model-load-retry-count', 'int'),
  f('model-namespacing', 'bool'), f('exit-timeout-secs', 'int'), f('enable-peer-access', 'bool'),
  f('backend-directory', 'string', '<path>'), f('backend-config', 'string', '<backend>,<setting>=<value>', true),
  f('repoagent-directory', 'string', '<path>'),
  f('allow-http', 'bool'), f('http-port', 'int'), f('http-address', 'string'), f('reuse-http-port', 'bool'),
  f('http-thread-count', 'int'), f('http-header-forward-pattern', 'string', '<regex>'),
  f('http-max-input-size', 'int64'), f('http-restricted-api', 'string', '<apis>:<key>=<value>', true),
  f('allow-grpc', 'bool'), f('grpc-port', 'int'), f('grpc-address', 'string'), f('reuse-grpc-port', 'bool'),
  f('grpc-header-forward-pattern', 'string', '<regex>'), f('grpc-infer-thread-count', 'int'),
  f('grpc-infer-allocation-pool-size', 'int'), f('grpc-max-response-pool-size', 'int'),
  f('grpc-use-ssl', 'bool'), f('grpc-use-ssl-mutual', 'bool'), f('grpc-server-cert', 'string', '<file>'),
  f('grpc-server-key', 'string', '<file>'), f('grpc-root-cert', 'string', '<file>'),
  f('grpc-infer-response-compression-level', 'string', '<none|low|medium|high>'),
  f('grpc-keepalive-time', 'int'), f('grpc-keepalive-timeout', 'int'),
  f('grpc-keepalive-permit-without-calls', 'bool'), f('grpc-http2-max-pings-without-data', 'int'),
  f('grpc-http2-min-recv-ping-interval-without-data', 'int'), f('grpc-http2-max-ping-strikes', 'int'),
  f('grpc-max-connection-age', 'int'), f('grpc-max-connection-age-grace', 'int'),
  f('grpc-restricted-protocol', 'string', '<protocols>:<key>=<value>', true),
  f('allow-metrics', 'bool'), f('allow-gpu-metrics', 'bool'), f('allow-cpu-metrics', 'bool'),
  f('metrics-address', 'string'), f('metrics-port', 'int'), f('metrics-interval-ms', 'int'),
  f('metrics-config', 'string', '<setting>=<value>', true),
  f('log-verbose', 'string', '<integer>'), f('log-info', 'bool'), f('log-warning', 'bool'), f('log-error', 'bool'),
  f('log-format', 'string', '<default|ISO8601>'), f('log-file', 'string', '<path>'),
  f('trace-config', 'string', '[<mode>,]<setting>=<value>', true), f('trace-file', 'string', '<path>'),
  f('trace-level', 'string', '<level>', true), f('trace-rate', 'int'), f('trace-count', 'int'),
  f('trace-log-frequency', 'int'),
  f('cache-config', 'string', '<cache>,<setting>=<value>', true), f('cache-directory', 'string', '<path>'),
  f('response-cache-byte-size', 'int64'), f('rate-limit', 'string', '<off|execution_count>'),
  f('rate-limit-resource', 'string', '<name>:<count>[:<device>]', true),
  f('pinned-memory-pool-byte-size', 'int64'), f('cuda-memory-pool-byte-size', 'string', '<gpu>:<bytes>', true),
  f('cuda-virtual-address-size', 'string', '<gpu>:<bytes>', true), f('min-supported-compute-capability', 'float'),
  f('buffer-manager-thread-count', 'int'), f('host-policy', 'string', '<name>,<setting>=<value>', true),
  f('model-load-gpu-limit', 'string', '<gpu>:<fraction>', true), f('allow-client-shm', 'bool'),
  f('allow-sagemaker', 'bool'), f('sagemaker-port', 'int'), f('sagemaker-safe-port-range', 'string', '<from>-<to>'),
  f('sagemaker-thread-count', 'int'), f('allow-vertex-ai', 'bool'), f('vertex-ai-port', 'int'),
  f('vertex-ai-thread-count', 'int'), f('vertex-ai-default-model', 'string', '<name>'),
  // nodetron's own
  f('http-codec-offload-bytes', 'int64'),
];

const PLACEHOLDER: Record<FlagKind, string> = {
  bool: '<boolean>', int: '<integer>', int64: '<integer>', float: '<float>', string: '<string>', switch: '',
};

export function usageText(): string {
  const lines = FLAGS.map((spec) => {
    const arg = spec.arg ?? PLACEHOLDER[spec.kind];
    return `  --${spec.name}${arg === '' ? '' : ` ${arg}`}${spec.repeatable === true ? '  (repeatable)' : ''}`;
  });
  return `Usage: tritonserver [options]\n${lines.join('\n')}\n`;
}

/** What cli.ts prints on stderr for a CliError. */
export function formatCliError(err: CliError): string {
  if (!err.showUsage) return `error: creating server: Invalid argument - ${err.message}\n`;
  return usageText() + (err.message === '' ? '' : `${err.message}\n`);
}

/** Raw values per flag, in command-line order. */
export type RawValues = Map<string, string[]>;

/** Tokenises with yargs; refuses unknown flags and turns `--help` into a usage error. */
export function tokenize(argv: string[]): { raw: RawValues; positionals: string[] } {
  let parser = yargs(argv)
    .help(false).version(false).exitProcess(false).locale('en').strictOptions(true)
    .parserConfiguration({
      'camel-case-expansion': false, 'dot-notation': false, 'short-option-groups': false,
      'boolean-negation': false, 'parse-numbers': false, 'parse-positional-numbers': false,
      'duplicate-arguments-array': true, 'flatten-duplicate-arrays': true, 'greedy-arrays': false,
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
  if (raw.has('help')) throw new CliError('');
  const positionals = ((parsed['_'] ?? []) as unknown[]).map(String);
  return { raw, positionals };
}

/** yargs says `Unknown argument(s): a, b`; name the first one as it was typed. */
function unknownFlagError(argv: string[], msg: string): CliError {
  const m = /^Unknown arguments?: (.*)$/.exec(msg);
  if (m === null) return new CliError(msg);
  const name = m[1]!.split(', ')[0]!;
  const token = argv.find((t) => t.startsWith('-') && t.replace(/^-+/, '').split('=')[0] === name);
  const flag = token !== undefined ? token.split('=')[0]! : (name.length === 1 ? `-${name}` : `--${name}`);
  return new CliError(`Unrecognized option: ${flag}`);
}

/** Typed access to the raw values; scalar flags take the last occurrence, like getopt. */
export class Reader {
  constructor(private readonly raw: RawValues) {}
  has(name: string): boolean { return this.raw.has(name); }
  all(name: string): string[] { return this.raw.get(name) ?? []; }
  str(name: string): string | undefined { const v = this.raw.get(name); return v?.[v.length - 1]; }
  string(name: string, def: string): string { return this.str(name) ?? def; }
  bool(name: string, def: boolean): boolean { const v = this.str(name); return v === undefined ? def : parseBoolValue(name, v); }
  int(name: string, def: number, wide = false): number {
    const v = this.str(name);
    return v === undefined ? def : parseIntValue(name, v, wide);
  }
}
