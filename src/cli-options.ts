/**
 * tritonserver's command line (protocol.md §6) turned into typed
 * ServerOptions: Triton's defaults, value checks and cross-flag rules, with
 * Triton's error texts. The flag table and tokeniser live in cli-flags.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import { forwardPatternRegExp } from './core/forward-pattern';
import { defaultModelCacheDir, pythonEnvCacheDir } from './core/model-cache-dir';
import { parseTokenFile } from './core/bearer-tokens';
import { FLAGS, Reader, tokenize } from './cli-flags';
import {
  CliError,
  parseBoolValue,
  parseChoice,
  parseFloatValue,
  parseGpuValues,
  parseGroupSetting,
  parseGroupSettings,
  parseIntOrBool,
  parseIntValue,
  parseOpenAIRestricted,
  parseRateLimitResource,
  parseRestricted,
} from './cli-values';
import { resolveTraceConfig } from './cli-trace-config';
import { ignoredFlagWarnings } from './cli-ignored';
import { DEFAULT_HTTP_EDGE, type HttpEdgeLimits, type ServerOptions } from './server-options';

export { CliError, CliExit } from './cli-values';
export { FLAGS, formatCliError, usageText } from './cli-flags';
export { defaultModelCacheDir } from './core/model-cache-dir';
export type { RateLimitResource, RestrictedGroup } from './cli-values';
export type { TraceConfig, TraceLevel, TraceMode } from './cli-trace-config';
export type { GrpcCompressionLevel, LogFormat, ModelControlMode, RateLimitMode, ServerOptions } from './server-options';

const DEFAULT_HTTP_PORT = 8000;
/**
 * --http-max-json-response-size default: 256 MiB of JSON is already seconds
 * of a thread to build and as much memory again to send; larger outputs
 * belong in binary. --exit-quiet-ms default: a balancer that probes readiness
 * every few hundred ms has seen the 503 and stopped sending well within it.
 */
export const MAX_JSON_RESPONSE_BYTES = 256 * 1024 * 1024;
export const DEFAULT_EXIT_QUIET_MS = 1000;

/** --http-codec-offload-bytes default: a JSON body this size takes ~1 ms to decode inline, ~10x the pool hand-off (bench/codec-cost.ts). */
export const DEFAULT_CODEC_OFFLOAD_BYTES = 64 * 1024;
/**
 * --inline-execution-max-us default: a probe run at full batch longer than
 * this keeps its instance on a thread of its own. `simple` at batch 8 probed
 * at 100-300 µs on a loaded 2-core VM while the other models loaded, the
 * FIL examples at 0.9-1.1 ms and image_classifier at 7 ms; 500 µs of a
 * frontend's event loop stays well under a health check's 2 ms budget
 * (bench/README.md, "No hop for tiny models").
 */
export const DEFAULT_INLINE_MAX_US = 500;
const INT32_MAX = 2147483647;
/** --max-queued-requests default: deep enough for any client concurrency a replica serves, shallow enough that a burst cannot exhaust memory. */
export const DEFAULT_MAX_QUEUED_REQUESTS = 4096;

export function parseServerOptions(argv: string[]): ServerOptions {
  const { raw, positionals } = tokenize(argv);
  const r = new Reader(raw);
  const warnings: string[] = [];

  // Validate every scalar value up front, in flag-table order, so a bad
  // value is reported before cross-flag rules (as getopt's loop does).
  for (const spec of FLAGS) {
    for (const v of r.all(spec.name)) {
      if (spec.kind === 'bool') parseBoolValue(spec.name, v);
      else if (spec.kind === 'int' || spec.kind === 'int64') parseIntValue(spec.name, v, spec.kind === 'int64');
      else if (spec.kind === 'float') parseFloatValue(spec.name, v);
    }
  }
  if (positionals.length > 0) throw new CliError(`Unexpected argument: ${positionals[0]}`);

  const modelControlMode = parseChoice('model-control-mode', r.string('model-control-mode', 'none'), ['none', 'poll', 'explicit'] as const);
  const loadModels = r.all('load-model');
  if (loadModels.length > 0 && modelControlMode !== 'explicit') {
    throw new CliError("Error: Use of '--load-model' requires setting '--model-control-mode=explicit' as well.");
  }
  if (loadModels.includes('*') && loadModels.length > 1) {
    throw new CliError("Wildcard model name '*' must be the ONLY startup model if specified at all.");
  }
  const modelConfigName = r.string('model-config-name', '');
  if (r.has('model-config-name') && modelConfigName === '') {
    throw new CliError('Error: empty argument for --model-config-name');
  }

  let disableAutoCompleteConfig = r.has('disable-auto-complete-config') && r.str('disable-auto-complete-config') !== 'false';
  if (r.has('strict-model-config')) {
    warnings.push("Warning: '--strict-model-config' has been deprecated! Please use '--disable-auto-complete-config' instead.");
    if (r.bool('strict-model-config', false)) disableAutoCompleteConfig = true;
  }

  const httpMaxInputSize = r.int('http-max-input-size', 64 * 1024 * 1024, true);
  if (httpMaxInputSize <= 0) throw new CliError('Error: --http-max-input-size must be greater than 0.');

  const httpMaxJsonResponseSize = r.int('http-max-json-response-size', MAX_JSON_RESPONSE_BYTES, true);
  if (httpMaxJsonResponseSize <= 0) throw new CliError('Error: --http-max-json-response-size must be greater than 0.');
  const exitQuietMs = r.int('exit-quiet-ms', DEFAULT_EXIT_QUIET_MS);
  if (exitQuietMs < 0) throw new CliError('Error: --exit-quiet-ms must be 0 or greater.');

  const httpCodecOffloadBytes = r.int('http-codec-offload-bytes', DEFAULT_CODEC_OFFLOAD_BYTES, true);
  if (httpCodecOffloadBytes < 0) throw new CliError('Error: --http-codec-offload-bytes must be 0 (never) or greater.');
  const inlineExecutionMaxUs = r.int('inline-execution-max-us', DEFAULT_INLINE_MAX_US);
  const cores = os.availableParallelism();
  if (inlineExecutionMaxUs < 0) throw new CliError('Error: --inline-execution-max-us must be 0 (never) or greater.');
  const httpEdge: HttpEdgeLimits = {
    requestMs: DEFAULT_HTTP_EDGE.requestMs,
    headMs: r.int('http-header-timeout-ms', DEFAULT_HTTP_EDGE.headMs),
    bodyMinRate: r.int('http-body-min-rate', DEFAULT_HTTP_EDGE.bodyMinRate),
    idleMs: r.int('http-keepalive-timeout-ms', DEFAULT_HTTP_EDGE.idleMs),
    maxConnections: r.int('http-max-connections', DEFAULT_HTTP_EDGE.maxConnections),
    maxConnectionsPerThread: r.int('http-max-connections-per-thread', DEFAULT_HTTP_EDGE.maxConnectionsPerThread),
  };
  if (httpEdge.headMs <= 0) throw new CliError('Error: --http-header-timeout-ms must be greater than 0.');
  if (httpEdge.bodyMinRate < 0) throw new CliError('Error: --http-body-min-rate must be 0 (no rate) or greater.');
  if (httpEdge.idleMs <= 0) throw new CliError('Error: --http-keepalive-timeout-ms must be greater than 0.');
  if (httpEdge.maxConnections < 0) throw new CliError('Error: --http-max-connections must be 0 (no bound) or greater.');
  if (httpEdge.maxConnectionsPerThread < 0) throw new CliError('Error: --http-max-connections-per-thread must be 0 (no bound) or greater.');
  const httpAuthTokens = readTokenFile('http-auth-token-file', r.str('http-auth-token-file'));
  const grpcAuthTokens = readTokenFile('grpc-auth-token-file', r.str('grpc-auth-token-file'));
  const openaiAuthTokens = readTokenFile('openai-auth-token-file', r.str('openai-auth-token-file')) ?? httpAuthTokens;
  const maxQueuedRequests = r.int('max-queued-requests', DEFAULT_MAX_QUEUED_REQUESTS);
  if (maxQueuedRequests < 0) throw new CliError('Error: --max-queued-requests must be 0 (no bound) or greater.');

  const grpcInferThreadCount = r.int('grpc-infer-thread-count', 2);
  if (grpcInferThreadCount < 2 || grpcInferThreadCount > 128) {
    throw new CliError('invalid argument for --grpc_infer_thread_count. Must be in the range 2 to 128.');
  }
  const grpcMaxResponsePoolSize = r.int('grpc-max-response-pool-size', INT32_MAX);
  if (grpcMaxResponsePoolSize <= 0) throw new CliError('Error: --grpc-max-response-pool-size must be greater than 0.');

  const logFormat = r.string('log-format', 'default');
  if (logFormat !== 'default' && logFormat !== 'ISO8601' && logFormat !== 'json') {
    throw new CliError('invalid argument for --log-format');
  }

  let cacheConfig = parseGroupSettings(r.all('cache-config'), "--cache-config option format is '<cache name>,<setting>=<value>'", true);
  if (r.has('response-cache-byte-size')) {
    if (r.has('cache-config')) {
      throw new CliError('Error: Incompatible flags --response-cache-byte-size and --cache-config both provided. ' + 'Please provide one or the other.');
    }
    const size = r.str('response-cache-byte-size')!;
    warnings.push(
      "Warning: '--response-cache-byte-size' has been deprecated! This will default to the 'local' " +
        "cache implementation with the provided byte size for its config. Please use '--cache-config' instead. " +
        `The equivalent --cache-config CLI args would be: '--cache-config=local,size=${size}'`,
    );
    cacheConfig = { local: { size } };
  }
  if (Object.keys(cacheConfig).length > 1) {
    throw new CliError(`only one cache implementation can be configured at a time, got: ${Object.keys(cacheConfig).join(', ')}`);
  }

  const metricsConfig: Record<string, string> = {};
  for (const arg of r.all('metrics-config')) {
    const formatError = '--metrics-config option format is <setting>=<value>';
    const { group, setting, value } = parseGroupSetting(arg, formatError);
    if (group !== '') throw new CliError(`${formatError}. Got ${arg}`);
    metricsConfig[setting] = value;
  }

  const httpAddress = r.string('http-address', '0.0.0.0');
  const allowMetrics = r.bool('allow-metrics', true);
  const grpcUseSslMutual = r.bool('grpc-use-ssl-mutual', false);

  const options: ServerOptions = {
    id: r.string('id', 'triton'),
    modelRepositories: [...r.all('model-repository'), ...r.all('model-store')],
    modelCacheDir: r.string('model-cache-dir', defaultModelCacheDir()),
    modelControlMode,
    repositoryPollSecs: modelControlMode === 'poll' ? r.int('repository-poll-secs', 15) : 0,
    loadModels,
    modelConfigName,
    exitOnError: r.bool('exit-on-error', true),
    strictReadiness: r.bool('strict-readiness', true),
    disableAutoCompleteConfig,
    modelLoadThreadCount: r.int('model-load-thread-count', 4),
    modelLoadRetryCount: r.int('model-load-retry-count', 0),
    modelNamespacing: r.bool('model-namespacing', false),
    exitTimeoutSecs: r.int('exit-timeout-secs', 30),
    exitQuietMs,
    enablePeerAccess: r.bool('enable-peer-access', true),
    backendDirectory: r.string('backend-directory', '/opt/tritonserver/backends'),
    backendConfig: parseGroupSettings(r.all('backend-config'), "--backend-config option format is '<backend name>,<setting>=<value>'"),
    pythonEnvCacheDir: r.string('python-env-cache-dir', pythonEnvCacheDir(r.string('model-cache-dir', defaultModelCacheDir()))),
    ...(r.str('python-env-pip-args') !== undefined ? { pythonEnvPipArgs: r.str('python-env-pip-args') } : {}),
    pythonEnvBuildTimeoutSecs: nonNegative('python-env-build-timeout-secs', r.int('python-env-build-timeout-secs', 1800)),
    repoagentDirectory: r.string('repoagent-directory', '/opt/tritonserver/repoagents'),

    allowHttp: r.bool('allow-http', true),
    httpPort: r.int('http-port', DEFAULT_HTTP_PORT),
    openaiPort: r.str('openai-port') === undefined ? undefined : r.int('openai-port', 0),
    openaiRestrictedApi: parseOpenAIRestricted(r.all('openai-restricted-api')),
    httpAddress,
    reuseHttpPort: r.bool('reuse-http-port', false),
    httpThreadCount: r.int('http-thread-count', defaultHttpThreadCount(cores)),
    httpSpareThreads: r.has('http-thread-count') || inlineExecutionMaxUs === 0 ? 0 : Math.max(0, Math.min(8, cores) - defaultHttpThreadCount(cores)),
    httpHeaderForwardPattern: forwardPattern('http-header-forward-pattern', r.str('http-header-forward-pattern')),
    httpMaxInputSize,
    httpEdge,
    ...(httpAuthTokens !== undefined ? { httpAuthTokens } : {}),
    ...(grpcAuthTokens !== undefined ? { grpcAuthTokens } : {}),
    ...(openaiAuthTokens !== undefined ? { openaiAuthTokens } : {}),
    authExemptHealth: r.bool('auth-exempt-health', false),
    grpcReflection: r.bool('grpc-reflection', true),
    httpMaxJsonResponseSize,
    httpCodecOffloadBytes,
    inlineExecutionMaxUs,
    maxQueuedRequests,
    httpRestrictedApi: parseRestricted('http-restricted-api', r.all('http-restricted-api')),
    httpCorsOrigins: r.all('http-cors-origin').map(parseCorsOrigin),
    httpConsolePath: parseConsolePath(r.string('http-console', '/console')),

    allowGrpc: r.bool('allow-grpc', true),
    grpcPort: r.int('grpc-port', 8001),
    grpcAddress: r.string('grpc-address', '0.0.0.0'),
    reuseGrpcPort: r.bool('reuse-grpc-port', false),
    grpcHeaderForwardPattern: forwardPattern('grpc-header-forward-pattern', r.str('grpc-header-forward-pattern')),
    grpcInferThreadCount,
    grpcInferAllocationPoolSize: r.int('grpc-infer-allocation-pool-size', 8),
    grpcMaxResponsePoolSize,
    grpcUseSsl: grpcUseSslMutual || r.bool('grpc-use-ssl', false),
    grpcUseSslMutual,
    grpcServerCert: r.str('grpc-server-cert'),
    grpcServerKey: r.str('grpc-server-key'),
    grpcRootCert: r.str('grpc-root-cert'),
    grpcInferResponseCompressionLevel: parseChoice('grpc-infer-response-compression-level', r.string('grpc-infer-response-compression-level', 'none'), [
      'none',
      'low',
      'medium',
      'high',
    ] as const),
    grpcKeepaliveTimeMs: r.int('grpc-keepalive-time', 7200000),
    grpcKeepaliveTimeoutMs: r.int('grpc-keepalive-timeout', 20000),
    grpcKeepalivePermitWithoutCalls: r.bool('grpc-keepalive-permit-without-calls', false),
    grpcHttp2MaxPingsWithoutData: r.int('grpc-http2-max-pings-without-data', 2),
    grpcHttp2MinRecvPingIntervalWithoutDataMs: r.int('grpc-http2-min-recv-ping-interval-without-data', 300000),
    grpcHttp2MaxPingStrikes: r.int('grpc-http2-max-ping-strikes', 2),
    grpcMaxConnectionAgeMs: r.int('grpc-max-connection-age', 0),
    grpcMaxConnectionAgeGraceMs: r.int('grpc-max-connection-age-grace', 0),
    grpcMaxConcurrentStreams: nonNegative('grpc-max-concurrent-streams', r.int('grpc-max-concurrent-streams', DEFAULT_GRPC_MAX_CONCURRENT_STREAMS)),
    grpcMaxConnectionIdleMs: nonNegative('grpc-max-connection-idle', r.int('grpc-max-connection-idle', 0)),
    grpcMaxConnections: nonNegative('grpc-max-connections', r.int('grpc-max-connections', DEFAULT_GRPC_MAX_CONNECTIONS)),
    grpcRestrictedProtocol: parseRestricted('grpc-restricted-protocol', r.all('grpc-restricted-protocol')),

    allowMetrics,
    allowGpuMetrics: allowMetrics && r.bool('allow-gpu-metrics', true),
    allowCpuMetrics: allowMetrics && r.bool('allow-cpu-metrics', true),
    metricsAddress: r.string('metrics-address', httpAddress),
    metricsPort: r.int('metrics-port', 8002),
    metricsIntervalMs: r.int('metrics-interval-ms', 2000),
    metricsConfig,

    logVerbose: r.has('log-verbose') ? parseIntOrBool('log-verbose', r.str('log-verbose')!) : 0,
    logInfo: r.bool('log-info', true),
    logWarning: r.bool('log-warning', true),
    logError: r.bool('log-error', true),
    logFormat,
    logFile: r.str('log-file'),
    logAccess: r.bool('log-access', false),

    traceConfig: resolveTraceConfig(
      r.all('trace-config'),
      {
        file: r.str('trace-file'),
        level: r.all('trace-level'),
        rate: r.str('trace-rate'),
        count: r.str('trace-count'),
        logFrequency: r.str('trace-log-frequency'),
      },
      warnings,
    ),

    cacheConfig,
    cacheDirectory: r.string('cache-directory', '/opt/tritonserver/caches'),
    rateLimit: parseChoice('rate-limit', r.string('rate-limit', 'off'), ['off', 'execution_count'] as const),
    rateLimitResources: r.all('rate-limit-resource').map(parseRateLimitResource),
    pinnedMemoryPoolByteSize: r.int('pinned-memory-pool-byte-size', 268435456, true),
    cudaMemoryPoolByteSize: parseGpuValues('cuda-memory-pool-byte-size', r.all('cuda-memory-pool-byte-size'), 'pool byte size', (v) =>
      parseIntValue('cuda-memory-pool-byte-size', v, true),
    ),
    cudaVirtualAddressSize: parseGpuValues('cuda-virtual-address-size', r.all('cuda-virtual-address-size'), 'virtual address size', (v) =>
      parseIntValue('cuda-virtual-address-size', v, true),
    ),
    minSupportedComputeCapability: r.has('min-supported-compute-capability')
      ? parseFloatValue('min-supported-compute-capability', r.str('min-supported-compute-capability')!)
      : 7.5,
    bufferManagerThreadCount: r.int('buffer-manager-thread-count', 0),
    hostPolicy: parseGroupSettings(r.all('host-policy'), "--host-policy option format is '<policy name>,<setting>=<value>'", true),
    modelLoadGpuLimit: parseGpuValues('model-load-gpu-limit', r.all('model-load-gpu-limit'), 'fraction', (v) => parseFloatValue('model-load-gpu-limit', v)),
    allowClientShm: r.bool('allow-client-shm', false),
    allowSagemaker: r.bool('allow-sagemaker', false),
    sagemakerPort: r.int('sagemaker-port', 8080),
    sagemakerSafePortRange: r.str('sagemaker-safe-port-range'),
    sagemakerThreadCount: r.int('sagemaker-thread-count', 8),
    allowVertexAi: r.bool('allow-vertex-ai', false),
    vertexAiPort: r.int('vertex-ai-port', 8080),
    vertexAiThreadCount: r.int('vertex-ai-thread-count', 8),
    vertexAiDefaultModel: r.str('vertex-ai-default-model'),
    warnings,
  };

  warnings.push(...ignoredFlagWarnings(raw));
  checkPortCollisions(options);
  // Triton reports this when creating the server, not as a usage error.
  if (options.modelRepositories.length === 0) throw new CliError('--model-repository must be specified', false);
  return options;
}

/**
 * Enabled endpoints may not share address and port. Port 0 (pick a free
 * port) never collides: tests start every endpoint on port 0.
 */
function checkPortCollisions(o: ServerOptions): void {
  const endpoints: [string, string, number][] = [];
  if (o.allowHttp) endpoints.push(['HTTP', o.httpAddress, o.httpPort]);
  if (o.allowHttp && o.openaiPort !== undefined) endpoints.push(['OpenAI', o.httpAddress, o.openaiPort]);
  if (o.allowGrpc) endpoints.push(['GRPC', o.grpcAddress, o.grpcPort]);
  if (o.allowMetrics) endpoints.push(['metrics', o.metricsAddress, o.metricsPort]);
  for (let i = 0; i < endpoints.length; i++) {
    for (let j = i + 1; j < endpoints.length; j++) {
      const [a, addrA, portA] = endpoints[i]!;
      const [b, addrB, portB] = endpoints[j]!;
      if (portA !== 0 && portA === portB && addrA === addrB) {
        throw new CliError(`The server cannot listen to ${a} requests and ${b} requests at the same address and port ${addrA}:${portA}`);
      }
    }
  }
}

/** A header forward pattern as given, once it is known to compile (core/forward-pattern.ts). */
function forwardPattern(flag: string, pattern: string | undefined): string | undefined {
  if (pattern === undefined || pattern === '') return undefined;
  try {
    forwardPatternRegExp(flag, pattern);
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  return pattern;
}

/**
 * Triton's default is 8 HTTP threads. Here each HTTP thread hands requests to
 * the main thread, which hands them to instance threads, so the HTTP threads
 * get the cores the others leave: one core less than the machine has, at
 * most 8, at least 1. On 2 cores one HTTP thread used about 9% less CPU per
 * request than two and served as much or more (bench/thread-cpu.ts).
 */
export function defaultHttpThreadCount(cores: number): number {
  return Math.max(1, Math.min(8, cores - 1));
}

/** --http-cors-origin: `*`, or an origin as a browser sends it (scheme://host[:port], no path). */
function parseCorsOrigin(value: string): string {
  const v = value.trim();
  if (v === '*') return v;
  if (!/^https?:\/\/[^/?#\s]+$/.test(v)) {
    throw new CliError(
      `invalid argument for --http-cors-origin: '${value}' is not an origin; give scheme://host[:port] (no path), e.g. http://localhost:3000, or * for any`,
    );
  }
  return v;
}

/** --http-console: a path (no trailing slash) outside the API's /v2, or false for none. */
function parseConsolePath(value: string): string | undefined {
  const v = value.trim();
  if (['false', 'off', 'none', '0'].includes(v.toLowerCase())) return undefined;
  const path = v.replace(/\/+$/, '');
  if (!/^\/[A-Za-z0-9._~\-/]+$/.test(path) || path === '/v2' || path.startsWith('/v2/') || path === '/metrics') {
    throw new CliError(`invalid argument for --http-console: '${value}'; give a path such as /console (not under /v2), or false for no console`);
  }
  return path;
}

/**
 * The settings the backends get: --backend-config, with --python-env-cache-dir
 * and --python-env-pip-args as the Python backend's env-cache-dir and
 * env-pip-args (a --backend-config=python,... setting of the same key wins).
 */
export function backendSettings(
  o: Pick<ServerOptions, 'backendConfig' | 'pythonEnvCacheDir' | 'pythonEnvPipArgs' | 'pythonEnvBuildTimeoutSecs'>,
): Record<string, Record<string, string>> {
  const python = {
    'env-cache-dir': o.pythonEnvCacheDir,
    'env-build-timeout-secs': String(o.pythonEnvBuildTimeoutSecs),
    ...(o.pythonEnvPipArgs === undefined ? {} : { 'env-pip-args': o.pythonEnvPipArgs }),
    ...(o.backendConfig['python'] ?? {}),
  };
  return { ...o.backendConfig, python };
}

/** A token file's tokens (core/bearer-tokens.ts), read at start; undefined when the flag is not given. */
function readTokenFile(flag: string, file: string | undefined): string[] | undefined {
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`Error: --${flag}: cannot read '${file}': ${(err as Error).message}`);
  }
  const tokens = parseTokenFile(text);
  if (tokens.length === 0) {
    throw new CliError(`Error: --${flag}: '${file}' has no token; write one token per line (blank lines and lines starting with # are skipped).`);
  }
  return tokens;
}

/**
 * --grpc-max-concurrent-streams default: nginx's http2_max_concurrent_streams
 * (128); gRPC core leaves it unbounded, which lets one connection open
 * streams without end.
 */
const DEFAULT_GRPC_MAX_CONCURRENT_STREAMS = 128;
/** --grpc-max-connections: HTTP's --http-max-connections default; gRPC clients multiplex their calls, so they need fewer. */
const DEFAULT_GRPC_MAX_CONNECTIONS = 10_000;

function nonNegative(flag: string, n: number): number {
  if (n < 0) throw new CliError(`Error: --${flag} must be 0 (no bound) or greater.`);
  return n;
}
