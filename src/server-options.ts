/**
 * ServerOptions: what tritonserver's command line (protocol.md §6) says, as
 * the server reads it. Types only; cli-options.ts fills them from argv with
 * Triton's defaults, checks and texts.
 */
import type { RateLimitResource, RestrictedGroup } from './cli-values';
import type { TraceConfig } from './cli-trace-config';

export type ModelControlMode = 'none' | 'poll' | 'explicit';
/** 'json' is nodetron's own: one JSON object per line. */
export type LogFormat = 'default' | 'ISO8601' | 'json';
export type RateLimitMode = 'off' | 'execution_count';
export type GrpcCompressionLevel = 'none' | 'low' | 'medium' | 'high';

export interface ServerOptions {
  // §6.1 server / model repository
  id: string;
  modelRepositories: string[];
  /** nodetron's own --model-cache-dir: where cloud repository roots are mirrored (repository-roots.ts). */
  modelCacheDir: string;
  modelControlMode: ModelControlMode;
  /** Forced to 0 unless modelControlMode is 'poll'. */
  repositoryPollSecs: number;
  loadModels: string[];
  /** '' = config.pbtxt. */
  modelConfigName: string;
  exitOnError: boolean;
  strictReadiness: boolean;
  /** --disable-auto-complete-config, or the deprecated --strict-model-config=true. */
  disableAutoCompleteConfig: boolean;
  modelLoadThreadCount: number;
  modelLoadRetryCount: number;
  modelNamespacing: boolean;
  exitTimeoutSecs: number;
  /** nodetron's own --exit-quiet-ms: the stop's serve phase ends once nothing is in flight and nothing arrived for this long (stop-plan.ts). */
  exitQuietMs: number;
  enablePeerAccess: boolean;
  backendDirectory: string;
  /** backend name ('' = global, applies to every backend) → setting → value. */
  backendConfig: Record<string, Record<string, string>>;
  /** --python-env-cache-dir: where requirements.txt environments are built (python-backend/requirements-env.ts). */
  pythonEnvCacheDir: string;
  /** --python-env-pip-args, as given (split by the Python backend). */
  pythonEnvPipArgs?: string;
  /** --python-env-build-timeout-secs (0 = none). */
  pythonEnvBuildTimeoutSecs: number;
  repoagentDirectory: string;
  // §6.2 HTTP
  allowHttp: boolean;
  httpPort: number;
  /** --openai-port: the OpenAI-compatible routes on a port of their own too (on --http-address); undefined = only on the HTTP port. */
  openaiPort: number | undefined;
  /** --openai-restricted-api: header groups checked on --openai-port. */
  openaiRestrictedApi: RestrictedGroup[];
  httpAddress: string;
  reuseHttpPort: boolean;
  httpThreadCount: number;
  /**
   * HTTP threads started beyond httpThreadCount before the models load, kept
   * only when the models loaded at start put instances on them (inline
   * execution): one when --http-thread-count is not given and
   * --inline-execution-max-us is not 0, so a 2-core machine serves small
   * models on 2 HTTP threads and everything else on 1 (bench/README.md).
   */
  httpSpareThreads: number;
  /** As given; Triton matches it case-insensitively (prefixes `(?i)`). */
  httpHeaderForwardPattern?: string;
  httpMaxInputSize: number;
  /** --http-auth-token-file's tokens: every HTTP request must carry one (core/bearer-tokens.ts); absent = none asked. Never logged. */
  httpAuthTokens?: string[];
  /** --grpc-auth-token-file's tokens, for every gRPC call. */
  grpcAuthTokens?: string[];
  /** --openai-auth-token-file's tokens (default: httpAuthTokens), for --openai-port. */
  openaiAuthTokens?: string[];
  /** --auth-exempt-health: the health checks need no token. */
  authExemptHealth: boolean;
  /** nodetron's own --grpc-reflection: the gRPC server reflection service (grpc.reflection.v1 and v1alpha), so grpcurl needs no proto files. */
  grpcReflection: boolean;
  /** nodetron's own deadlines and caps of the HTTP edge (--http-header-timeout-ms and the rest). */
  httpEdge: HttpEdgeLimits;
  /** nodetron's own --http-max-json-response-size: the most JSON text of one HTTP inference response (infer-response-encode.ts). */
  httpMaxJsonResponseSize: number;
  /** nodetron's own: request bodies (JSON part) and response work from this many bytes are coded in the HTTP thread's codec pool; 0 = never. */
  httpCodecOffloadBytes: number;
  /**
   * nodetron's own --inline-execution-max-us: instances of small in-process
   * models live on the HTTP threads and run the requests those threads admit
   * without a hop, when a probe run at full batch takes at most this long;
   * 0 = every instance on a thread of its own (instances/inline-placement.ts).
   */
  inlineExecutionMaxUs: number;
  /** nodetron's own --max-queued-requests: client inference requests the server holds at once; 0 = no bound (scheduler/queue-bound.ts). */
  maxQueuedRequests: number;
  httpRestrictedApi: RestrictedGroup[];
  /** nodetron's own --http-cors-origin: origins allowed from a browser (frontend/http/cors.ts); empty = CORS off. */
  httpCorsOrigins: string[];
  /** nodetron's own --http-console: the console's path (no trailing slash); undefined = no console. */
  httpConsolePath?: string;
  // §6.3 gRPC
  allowGrpc: boolean;
  grpcPort: number;
  grpcAddress: string;
  reuseGrpcPort: boolean;
  grpcHeaderForwardPattern?: string;
  grpcInferThreadCount: number;
  grpcInferAllocationPoolSize: number;
  grpcMaxResponsePoolSize: number;
  /** True also when --grpc-use-ssl-mutual is set. */
  grpcUseSsl: boolean;
  grpcUseSslMutual: boolean;
  grpcServerCert?: string;
  grpcServerKey?: string;
  grpcRootCert?: string;
  grpcInferResponseCompressionLevel: GrpcCompressionLevel;
  grpcKeepaliveTimeMs: number;
  grpcKeepaliveTimeoutMs: number;
  grpcKeepalivePermitWithoutCalls: boolean;
  grpcHttp2MaxPingsWithoutData: number;
  grpcHttp2MinRecvPingIntervalWithoutDataMs: number;
  grpcHttp2MaxPingStrikes: number;
  /** 0 = unset. */
  grpcMaxConnectionAgeMs: number;
  /** nodetron's own --grpc-max-concurrent-streams: HTTP/2 streams at once per connection; 0 = no bound. */
  grpcMaxConcurrentStreams: number;
  /** nodetron's own --grpc-max-connection-idle (ms): an idle connection gets GOAWAY; 0 = never. */
  grpcMaxConnectionIdleMs: number;
  /** nodetron's own --grpc-max-connections: open client connections; past it calls end UNAVAILABLE and the connection closes; 0 = no bound. */
  grpcMaxConnections: number;
  grpcMaxConnectionAgeGraceMs: number;
  /** Like httpRestrictedApi; the metadata key checked is `triton-grpc-protocol-<key>`. */
  grpcRestrictedProtocol: RestrictedGroup[];
  // §6.4 metrics
  allowMetrics: boolean;
  allowGpuMetrics: boolean;
  allowCpuMetrics: boolean;
  metricsAddress: string;
  metricsPort: number;
  metricsIntervalMs: number;
  /** §5.4 settings as given (`counter_latencies` → 'true', ...). */
  metricsConfig: Record<string, string>;
  // §6.5 logging
  logVerbose: number;
  logInfo: boolean;
  logWarning: boolean;
  logError: boolean;
  logFormat: LogFormat;
  logFile?: string;
  /** nodetron's own --log-access: one line per HTTP request. */
  logAccess: boolean;
  // §6.6 tracing
  traceConfig: TraceConfig;
  // §6.7 cache, rate limiting, memory, devices, misc.
  /** cache name → setting → value (e.g. { local: { size: '1048576' } }); empty = cache off. */
  cacheConfig: Record<string, Record<string, string>>;
  cacheDirectory: string;
  rateLimit: RateLimitMode;
  rateLimitResources: RateLimitResource[];
  pinnedMemoryPoolByteSize: number;
  /** GPU id → bytes, only for GPUs named on the command line (default 64 MiB each). */
  cudaMemoryPoolByteSize: Record<number, number>;
  cudaVirtualAddressSize: Record<number, number>;
  minSupportedComputeCapability: number;
  bufferManagerThreadCount: number;
  /** policy name → setting (numa-node, cpu-cores) → value. */
  hostPolicy: Record<string, Record<string, string>>;
  /** GPU id → fraction of memory. */
  modelLoadGpuLimit: Record<number, number>;
  allowClientShm: boolean;
  allowSagemaker: boolean;
  sagemakerPort: number;
  sagemakerSafePortRange?: string;
  sagemakerThreadCount: number;
  allowVertexAi: boolean;
  vertexAiPort: number;
  vertexAiThreadCount: number;
  vertexAiDefaultModel?: string;
  /** Deprecated and ignored flags, to log as warnings before starting. */
  warnings: string[];
}

/**
 * The HTTP edge's deadlines and caps (frontend/http/http-server.ts applies
 * them): what keeps a slow or idle client from holding the server's
 * connections and memory.
 */
export interface HttpEdgeLimits {
  /** A request (head or body) that stops arriving for this long gets 408. */
  requestMs: number;
  /** --http-header-timeout-ms: a head must arrive whole within this from its first byte (slowloris), else 408. */
  headMs: number;
  /** --http-body-min-rate: after requestMs of it, a body must have come at this many bytes a second, else 408; 0 = no rate. */
  bodyMinRate: number;
  /** --http-keepalive-timeout-ms: a kept-alive connection with nothing to do for this long is closed. */
  idleMs: number;
  /** --http-max-connections: open connections over every HTTP thread and port; past it 503 and close; 0 = no bound. */
  maxConnections: number;
  /** --http-max-connections-per-thread: the same bound for each HTTP thread's own connections; 0 = none. */
  maxConnectionsPerThread: number;
}

export const DEFAULT_HTTP_EDGE: HttpEdgeLimits = {
  requestMs: 10_000,
  headMs: 30_000,
  bodyMinRate: 4096,
  idleMs: 65_000,
  maxConnections: 10_000,
  maxConnectionsPerThread: 0,
};
