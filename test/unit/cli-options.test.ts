import { test } from 'node:test';
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import {
  CliError,
  CliExit,
  defaultHttpThreadCount,
  defaultModelCacheDir,
  formatCliError,
  parseServerOptions,
  usageText,
  type ServerOptions,
} from '../../src/cli-options';

const REPO = ['--model-repository', '/models'];

function errorOf(argv: string[]): CliError {
  try {
    parseServerOptions(argv);
  } catch (err) {
    assert.ok(err instanceof CliError, `expected CliError, got ${String(err)}`);
    return err;
  }
  assert.fail(`no error for ${argv.join(' ')}`);
}

test('defaults equal tritonserver defaults (§6)', () => {
  const o = parseServerOptions(REPO);
  const expected: ServerOptions = {
    id: 'triton',
    modelRepositories: ['/models'],
    modelCacheDir: defaultModelCacheDir(),
    pythonEnvCacheDir: path.join(defaultModelCacheDir(), 'python-envs'),
    pythonEnvBuildTimeoutSecs: 1800,
    modelControlMode: 'none',
    repositoryPollSecs: 0,
    loadModels: [],
    modelConfigName: '',
    exitOnError: true,
    strictReadiness: true,
    disableAutoCompleteConfig: false,
    modelLoadThreadCount: 4,
    modelLoadRetryCount: 0,
    modelNamespacing: false,
    exitTimeoutSecs: 30,
    exitQuietMs: 1000,
    enablePeerAccess: true,
    backendDirectory: '/opt/tritonserver/backends',
    backendConfig: {},
    repoagentDirectory: '/opt/tritonserver/repoagents',
    allowHttp: true,
    httpPort: 8000,
    openaiPort: undefined,
    openaiRestrictedApi: [],
    httpAddress: '0.0.0.0',
    reuseHttpPort: false,
    httpThreadCount: Math.max(1, Math.min(8, os.availableParallelism() - 1)),
    httpSpareThreads: Math.max(0, Math.min(8, os.availableParallelism()) - Math.max(1, Math.min(8, os.availableParallelism() - 1))),
    httpHeaderForwardPattern: undefined,
    httpMaxInputSize: 67108864,
    httpEdge: { requestMs: 10000, headMs: 30000, bodyMinRate: 4096, idleMs: 65000, maxConnections: 10000, maxConnectionsPerThread: 0 },
    authExemptHealth: false,
    grpcReflection: true,
    httpMaxJsonResponseSize: 268435456,
    httpCodecOffloadBytes: 65536,
    inlineExecutionMaxUs: 500,
    maxQueuedRequests: 4096,
    httpRestrictedApi: [],
    httpCorsOrigins: [],
    httpConsolePath: '/console',
    allowGrpc: true,
    grpcPort: 8001,
    grpcAddress: '0.0.0.0',
    reuseGrpcPort: false,
    grpcHeaderForwardPattern: undefined,
    grpcInferThreadCount: 2,
    grpcInferAllocationPoolSize: 8,
    grpcMaxResponsePoolSize: 2147483647,
    grpcUseSsl: false,
    grpcUseSslMutual: false,
    grpcServerCert: undefined,
    grpcServerKey: undefined,
    grpcRootCert: undefined,
    grpcInferResponseCompressionLevel: 'none',
    grpcKeepaliveTimeMs: 7200000,
    grpcKeepaliveTimeoutMs: 20000,
    grpcKeepalivePermitWithoutCalls: false,
    grpcHttp2MaxPingsWithoutData: 2,
    grpcHttp2MinRecvPingIntervalWithoutDataMs: 300000,
    grpcHttp2MaxPingStrikes: 2,
    grpcMaxConnectionAgeMs: 0,
    grpcMaxConnectionAgeGraceMs: 0,
    grpcMaxConcurrentStreams: 128,
    grpcMaxConnectionIdleMs: 0,
    grpcMaxConnections: 10000,
    grpcRestrictedProtocol: [],
    allowMetrics: true,
    allowGpuMetrics: true,
    allowCpuMetrics: true,
    metricsAddress: '0.0.0.0',
    metricsPort: 8002,
    metricsIntervalMs: 2000,
    metricsConfig: {},
    logVerbose: 0,
    logInfo: true,
    logWarning: true,
    logError: true,
    logFormat: 'default',
    logFile: undefined,
    logAccess: false,
    traceConfig: {
      level: [],
      rate: 1000,
      count: -1,
      mode: 'triton',
      file: '',
      logFrequency: 0,
      opentelemetry: { url: 'http://localhost:4318/v1/traces' },
      opentelemetryResource: {},
    },
    cacheConfig: {},
    cacheDirectory: '/opt/tritonserver/caches',
    rateLimit: 'off',
    rateLimitResources: [],
    pinnedMemoryPoolByteSize: 268435456,
    cudaMemoryPoolByteSize: {},
    cudaVirtualAddressSize: {},
    minSupportedComputeCapability: 7.5,
    bufferManagerThreadCount: 0,
    hostPolicy: {},
    modelLoadGpuLimit: {},
    allowClientShm: false,
    allowSagemaker: false,
    sagemakerPort: 8080,
    sagemakerSafePortRange: undefined,
    sagemakerThreadCount: 8,
    allowVertexAi: false,
    vertexAiPort: 8080,
    vertexAiThreadCount: 8,
    vertexAiDefaultModel: undefined,
    warnings: [],
  };
  assert.deepEqual(o, expected);
});

const ERRORS: [string[], string][] = [
  [[...REPO, '--foo'], 'Unrecognized option: --foo'],
  [[...REPO, '--http-prot=9000'], 'Unrecognized option: --http-prot; did you mean --http-port?'],
  [[...REPO, '--grpc_infer_thread_count=4'], 'Unrecognized option: --grpc_infer_thread_count; did you mean --grpc-infer-thread-count?'],
  [[...REPO, '--model_repository', '/m'], 'Unrecognized option: --model_repository; did you mean --model-repository?'],
  [[...REPO, '--strict-readyness=false'], 'Unrecognized option: --strict-readyness; did you mean --strict-readiness?'],
  [[...REPO, '--log-verbsoe=1'], 'Unrecognized option: --log-verbsoe; did you mean --log-verbose?'],
  [
    [...REPO, '--model'],
    "option '--model' is ambiguous; possibilities: '--model-repository' '--model-store' " +
      "'--model-control-mode' '--model-config-name' '--model-load-thread-count' '--model-load-retry-count' " +
      "'--model-namespacing' '--model-load-gpu-limit' '--model-cache-dir'",
  ],
  [[...REPO, '--grpc-use=1'], "option '--grpc-use' is ambiguous; possibilities: '--grpc-use-ssl' '--grpc-use-ssl-mutual'"],
  [[...REPO, '--foo-bar=3'], 'Unrecognized option: --foo-bar'],
  [[...REPO, '-x'], 'Unrecognized option: -x'],
  [[...REPO, '--exit-on-error=maybe'], 'Bad option: "--exit-on-error".\ninvalid value for bool option: maybe'],
  [[...REPO, '--strict-readiness', ''], 'Bad option: "--strict-readiness".\ninvalid value for bool option: '],
  [[...REPO, '--http-port', 'abc'], 'Bad option: "--http-port".\nInvalid option value. Got abc'],
  [[...REPO, '--http-port=80x'], 'Bad option: "--http-port".\nInvalid option value. Got 80x'],
  [[...REPO, '--grpc-port', '99999999999'], 'Bad option: "--grpc-port".\nInvalid option value. Got 99999999999'],
  [[...REPO, '--log-verbose', 'loud'], 'Bad option: "--log-verbose".\nInvalid option value. Got loud'],
  [[...REPO, '--min-supported-compute-capability', 'x'], 'Bad option: "--min-supported-compute-capability".\nInvalid option value. Got x'],
  [[...REPO, 'extra'], 'Unexpected argument: extra'],
  [['extra', ...REPO], 'Unexpected argument: extra'],
  [[...REPO, '--', '--http-port'], 'Unexpected argument: --http-port'],
  [['--http-port', '8000'], '--model-repository must be specified'],
  [[...REPO, '--load-model', 'simple'], "Error: Use of '--load-model' requires setting '--model-control-mode=explicit' as well."],
  [[...REPO, '--model-control-mode=poll', '--load-model', 'simple'], "Error: Use of '--load-model' requires setting '--model-control-mode=explicit' as well."],
  [
    [...REPO, '--model-control-mode=explicit', '--load-model', '*', '--load-model', 'simple'],
    "Wildcard model name '*' must be the ONLY startup model if specified at all.",
  ],
  [[...REPO, '--http-max-input-size', '0'], 'Error: --http-max-input-size must be greater than 0.'],
  [[...REPO, '--http-max-input-size=-5'], 'Error: --http-max-input-size must be greater than 0.'],
  [[...REPO, '--http-max-json-response-size=0'], 'Error: --http-max-json-response-size must be greater than 0.'],
  [[...REPO, '--exit-quiet-ms=-1'], 'Error: --exit-quiet-ms must be 0 or greater.'],
  [[...REPO, '--http-header-timeout-ms=0'], 'Error: --http-header-timeout-ms must be greater than 0.'],
  [[...REPO, '--http-body-min-rate=-1'], 'Error: --http-body-min-rate must be 0 (no rate) or greater.'],
  [[...REPO, '--http-keepalive-timeout-ms=0'], 'Error: --http-keepalive-timeout-ms must be greater than 0.'],
  [[...REPO, '--http-max-connections=-5'], 'Error: --http-max-connections must be 0 (no bound) or greater.'],
  [[...REPO, '--grpc-max-concurrent-streams=-1'], 'Error: --grpc-max-concurrent-streams must be 0 (no bound) or greater.'],
  [
    [...REPO, '--http-auth-token-file=/nonexistent/tokens'],
    "Error: --http-auth-token-file: cannot read '/nonexistent/tokens': ENOENT: no such file or directory, open '/nonexistent/tokens'",
  ],
  [
    [...REPO, '--grpc-auth-token-file=/dev/null'],
    "Error: --grpc-auth-token-file: '/dev/null' has no token; write one token per line (blank lines and lines starting with # are skipped).",
  ],
  [[...REPO, '--http-codec-offload-bytes=-1'], 'Error: --http-codec-offload-bytes must be 0 (never) or greater.'],
  [[...REPO, '--http-codec-offload-bytes=64k'], 'Bad option: "--http-codec-offload-bytes".\nInvalid option value. Got 64k'],
  [[...REPO, '--model-config-name='], 'Error: empty argument for --model-config-name'],
  [[...REPO, '--model-control-mode', 'sometimes'], 'invalid argument for --model-control-mode'],
  [[...REPO, '--log-format', 'JSON'], 'invalid argument for --log-format'],
  [[...REPO, '--rate-limit', 'fast'], 'invalid argument for --rate-limit'],
  [[...REPO, '--grpc-infer-thread-count', '1'], 'invalid argument for --grpc_infer_thread_count. Must be in the range 2 to 128.'],
  [[...REPO, '--grpc-port', '8000'], 'The server cannot listen to HTTP requests and GRPC requests at the same address and port 0.0.0.0:8000'],
  [
    [...REPO, '--openai-restricted-api=inference k'],
    "--openai-restricted-api option format is '<API_1>,<API_2>,... <restricted-key> <restricted-value>'. Got inference k",
  ],
  [
    [...REPO, '--openai-restricted-api', 'shared-memory', 'k', 'v'],
    "unknown restricted api 'shared-memory' for --openai-restricted-api; apis: inference, embedding, model-repository, metrics, health",
  ],
  [
    [...REPO, '--openai-restricted-api', 'inference', 'k', 'v', '--openai-restricted-api', 'inference', 'j', 'w'],
    "restricted api 'inference' can not be specified in multiple config groups",
  ],
  [[...REPO, '--openai-port', '8001'], 'The server cannot listen to OpenAI requests and GRPC requests at the same address and port 0.0.0.0:8001'],
  [[...REPO, '--metrics-port', '8001'], 'The server cannot listen to GRPC requests and metrics requests at the same address and port 0.0.0.0:8001'],
  [
    [...REPO, '--response-cache-byte-size', '1024', '--cache-config', 'local,size=1'],
    'Error: Incompatible flags --response-cache-byte-size and --cache-config both provided. ' + 'Please provide one or the other.',
  ],
  [[...REPO, '--backend-config', 'onnxruntime,novalue'], "--backend-config option format is '<backend name>,<setting>=<value>'. Got onnxruntime,novalue"],
  [[...REPO, '--backend-config', ',x=1'], "--backend-config option format is '<backend name>,<setting>=<value>'. Got ,x=1"],
  [[...REPO, '--metrics-config', 'group,summary_latencies=true'], '--metrics-config option format is <setting>=<value>. Got group,summary_latencies=true'],
  [[...REPO, '--cache-config', 'size=5'], "--cache-config option format is '<cache name>,<setting>=<value>'. Got size=5"],
  [
    [...REPO, '--http-restricted-api', 'model-repository'],
    "--http-restricted-api option format is '<API 1>,<API 2>:<restricted-key>=<restricted-value>'. Got model-repository",
  ],
  [[...REPO, '--http-restricted-api', 'bogus:k=v'], "unknown restricted api 'bogus'"],
  [[...REPO, '--trace-config', 'level=LOUD'], 'invalid value for trace level option: LOUD'],
];

for (const [argv, message] of ERRORS) {
  test(`error: ${argv.join(' ')}`, () => {
    assert.equal(errorOf(argv).message, message);
  });
}

test('--help and --version print their text and exit 0; a usage error prints one line, not the usage', () => {
  const help = errorOf(['--help']);
  assert.ok(help instanceof CliExit);
  assert.equal(formatCliError(help), usageText());
  assert.equal(formatCliError(errorOf(['--he'])), usageText());
  assert.equal(formatCliError(errorOf(['--version'])), 'tritonserver 2.73.0 (nodetron 0.1.0)\n');
  assert.equal(formatCliError(errorOf([...REPO, '--foo'])), 'Unrecognized option: --foo (see --help)\n');
  assert.equal(formatCliError(errorOf([...REPO, '--http-prot=1'])), 'Unrecognized option: --http-prot; did you mean --http-port? (see --help)\n');
  assert.equal(
    formatCliError(errorOf([...REPO, '--exit-on-error=maybe'])),
    'Bad option: "--exit-on-error".\ninvalid value for bool option: maybe (see --help)\n',
  );
  assert.equal(formatCliError(errorOf([])), 'error: creating server: Invalid argument - --model-repository must be specified\n');
});

const BOOL_FORMS: [string, boolean][] = [
  ['true', true],
  ['TRUE', true],
  ['on', true],
  ['On', true],
  ['1', true],
  ['false', false],
  ['False', false],
  ['off', false],
  ['OFF', false],
  ['0', false],
];
for (const [value, expected] of BOOL_FORMS) {
  test(`bool form ${value}`, () => {
    assert.equal(parseServerOptions([...REPO, `--exit-on-error=${value}`]).exitOnError, expected);
    assert.equal(parseServerOptions([...REPO, '--allow-grpc', value]).allowGrpc, expected);
  });
}

const LOG_VERBOSE: [string, number][] = [
  ['0', 0],
  ['1', 1],
  ['3', 3],
  ['true', 1],
  ['false', 0],
];
for (const [value, expected] of LOG_VERBOSE) {
  test(`--log-verbose ${value}`, () => {
    assert.equal(parseServerOptions([...REPO, '--log-verbose', value]).logVerbose, expected);
  });
}

test("nodetron's limits: --http-max-json-response-size and --exit-quiet-ms, with their defaults", () => {
  const d = parseServerOptions([...REPO]);
  assert.equal(d.httpMaxJsonResponseSize, 256 * 1024 * 1024);
  assert.equal(d.exitQuietMs, 1000);
  const o = parseServerOptions([...REPO, '--http-max-json-response-size=4096', '--exit-quiet-ms', '0']);
  assert.equal(o.httpMaxJsonResponseSize, 4096);
  assert.equal(o.exitQuietMs, 0);
});

test('repeatable flags collect, scalar flags keep the last value, --model-store is an alias', () => {
  const o = parseServerOptions([
    '--model-repository=/a',
    '--model-store',
    '/b',
    '--model-repository',
    '/c',
    '--model-control-mode=EXPLICIT',
    '--load-model',
    'x',
    '--load-model=y',
    '--http-port',
    '1',
    '--http-port=2',
  ]);
  assert.deepEqual(o.modelRepositories, ['/a', '/c', '/b']);
  assert.equal(o.modelControlMode, 'explicit');
  assert.deepEqual(o.loadModels, ['x', 'y']);
  assert.equal(o.httpPort, 2);
  assert.equal(parseServerOptions([...REPO, '--openai-port=0']).openaiPort, 0, '--openai-port=0: a free port of its own');
  // Triton's OpenAI frontend's three-word form, as three tokens or one quoted, repeatable.
  assert.deepEqual(
    parseServerOptions([...REPO, '--openai-restricted-api', 'inference,health', 'api-key', 's3', '--openai-restricted-api=model-repository k v'])
      .openaiRestrictedApi,
    [
      { apis: ['inference', 'health'], key: 'api-key', value: 's3' },
      { apis: ['model-repository'], key: 'k', value: 'v' },
    ],
  );
});

test('poll interval applies only in poll mode', () => {
  assert.equal(parseServerOptions([...REPO, '--repository-poll-secs', '5']).repositoryPollSecs, 0);
  assert.equal(parseServerOptions([...REPO, '--model-control-mode', 'poll']).repositoryPollSecs, 15);
  assert.equal(parseServerOptions([...REPO, '--model-control-mode', 'poll', '--repository-poll-secs=5']).repositoryPollSecs, 5);
});

test('backend-config: per backend and global', () => {
  const o = parseServerOptions([
    ...REPO,
    '--backend-config',
    'onnxruntime,default-max-batch-size=8',
    '--backend-config=default-max-batch-size=4',
    '--backend-config',
    'python,shm-region-prefix-name=a,b',
    '--backend-config',
    'onnxruntime,default-max-batch-size=16',
  ]);
  assert.deepEqual(o.backendConfig, {
    onnxruntime: { 'default-max-batch-size': '16' },
    '': { 'default-max-batch-size': '4' },
    python: { 'shm-region-prefix-name': 'a,b' },
  });
});

test('auto-complete switches and deprecation warnings', () => {
  assert.equal(parseServerOptions([...REPO, '--disable-auto-complete-config']).disableAutoCompleteConfig, true);
  const strict = parseServerOptions([...REPO, '--strict-model-config=true']);
  assert.equal(strict.disableAutoCompleteConfig, true);
  assert.equal(strict.warnings.length, 1);
  assert.match(strict.warnings[0]!, /--strict-model-config' has been deprecated/);
  assert.equal(parseServerOptions([...REPO, '--strict-model-config=false']).disableAutoCompleteConfig, false);
});

test('deprecated cache and trace flags map onto their replacements', () => {
  const o = parseServerOptions([
    ...REPO,
    '--response-cache-byte-size',
    '1024',
    '--trace-file',
    '/tmp/t.json',
    '--trace-level',
    'TIMESTAMPS',
    '--trace-level=tensors',
    '--trace-rate',
    '5',
  ]);
  assert.deepEqual(o.cacheConfig, { local: { size: '1024' } });
  assert.equal(o.traceConfig.file, '/tmp/t.json');
  assert.deepEqual(o.traceConfig.level, ['TIMESTAMPS', 'TENSORS']);
  assert.equal(o.traceConfig.rate, 5);
  assert.equal(o.warnings.length, 4);
});

test('trace-config settings', () => {
  const o = parseServerOptions([
    ...REPO,
    '--trace-config',
    'level=TIMESTAMPS',
    '--trace-config',
    'count=10',
    '--trace-config',
    'mode=opentelemetry',
    '--trace-config',
    'opentelemetry,url=http://h:1/v1/traces',
    '--trace-config',
    'opentelemetry,resource=service.name=svc',
    '--trace-config',
    'triton,log-frequency=50',
  ]);
  assert.deepEqual(o.traceConfig.level, ['TIMESTAMPS']);
  assert.equal(o.traceConfig.count, 10);
  assert.equal(o.traceConfig.mode, 'opentelemetry');
  assert.equal(o.traceConfig.opentelemetry['url'], 'http://h:1/v1/traces');
  assert.deepEqual(o.traceConfig.opentelemetryResource, { 'service.name': 'svc' });
  assert.equal(o.traceConfig.logFrequency, 50);
});

test('structured flags: restricted APIs, rate limiter, memory pools, metrics', () => {
  const o = parseServerOptions([
    ...REPO,
    '--http-restricted-api',
    'model-repository,shared-memory:admin-key=secret',
    '--grpc-restricted-protocol=health:k=v',
    '--rate-limit=execution_count',
    '--rate-limit-resource',
    'R1:10',
    '--rate-limit-resource',
    'R2:4:0',
    '--cuda-memory-pool-byte-size',
    '0:1024',
    '--model-load-gpu-limit',
    '1:0.5',
    '--metrics-config',
    'summary_latencies=true',
    '--allow-metrics=false',
    '--grpc-use-ssl-mutual=1',
    '--http-address',
    '127.0.0.1',
    '--min-supported-compute-capability',
    '6.0',
  ]);
  assert.deepEqual(o.httpRestrictedApi, [{ apis: ['model-repository', 'shared-memory'], key: 'admin-key', value: 'secret' }]);
  assert.deepEqual(o.grpcRestrictedProtocol, [{ apis: ['health'], key: 'k', value: 'v' }]);
  assert.equal(o.rateLimit, 'execution_count');
  assert.deepEqual(o.rateLimitResources, [
    { name: 'R1', count: 10 },
    { name: 'R2', count: 4, device: 0 },
  ]);
  assert.deepEqual(o.cudaMemoryPoolByteSize, { 0: 1024 });
  assert.deepEqual(o.modelLoadGpuLimit, { 1: 0.5 });
  assert.deepEqual(o.metricsConfig, { summary_latencies: 'true' });
  assert.equal(o.allowGpuMetrics, false);
  assert.equal(o.allowCpuMetrics, false);
  assert.equal(o.grpcUseSsl, true);
  assert.equal(o.metricsAddress, '127.0.0.1');
  assert.equal(o.minSupportedComputeCapability, 6);
});

test('port collisions: disabled endpoints, different addresses and port 0 do not collide', () => {
  assert.doesNotThrow(() => parseServerOptions([...REPO, '--grpc-port', '8000', '--allow-grpc=false']));
  assert.doesNotThrow(() => parseServerOptions([...REPO, '--grpc-port', '8000', '--grpc-address', '127.0.0.1']));
  assert.doesNotThrow(() => parseServerOptions([...REPO, '--http-port', '0', '--grpc-port', '0', '--metrics-port=0']));
});

test('every §6 flag is accepted', () => {
  const flags = [
    '--id=x',
    '--model-load-retry-count=1',
    '--model-namespacing=true',
    '--enable-peer-access=false',
    '--repoagent-directory=/r',
    '--reuse-http-port=1',
    '--http-thread-count=2',
    '--http-header-forward-pattern=^x-',
    '--reuse-grpc-port=1',
    '--grpc-header-forward-pattern=x',
    '--grpc-infer-allocation-pool-size=4',
    '--grpc-max-response-pool-size=9',
    '--grpc-server-cert=a',
    '--grpc-server-key=b',
    '--grpc-root-cert=c',
    '--grpc-infer-response-compression-level=high',
    '--grpc-keepalive-time=1',
    '--grpc-keepalive-timeout=1',
    '--grpc-keepalive-permit-without-calls=1',
    '--grpc-http2-max-pings-without-data=1',
    '--grpc-http2-min-recv-ping-interval-without-data=1',
    '--grpc-http2-max-ping-strikes=1',
    '--grpc-max-connection-age=1',
    '--grpc-max-connection-age-grace=1',
    '--allow-gpu-metrics=0',
    '--allow-cpu-metrics=0',
    '--metrics-address=1.2.3.4',
    '--metrics-interval-ms=5',
    '--log-info=0',
    '--log-warning=0',
    '--log-error=0',
    '--log-format=ISO8601',
    '--log-file=/tmp/x.log',
    '--trace-count=3',
    '--trace-log-frequency=2',
    '--cache-directory=/c',
    '--pinned-memory-pool-byte-size=0',
    '--cuda-virtual-address-size=0:1',
    '--buffer-manager-thread-count=1',
    '--host-policy=p,numa-node=0',
    '--allow-client-shm=true',
    '--allow-sagemaker=false',
    '--sagemaker-port=9',
    '--sagemaker-safe-port-range=1-2',
    '--sagemaker-thread-count=1',
    '--allow-vertex-ai=false',
    '--vertex-ai-port=10',
    '--vertex-ai-thread-count=1',
    '--vertex-ai-default-model=m',
    '--exit-timeout-secs=1',
    '--model-load-thread-count=1',
    '--backend-directory=/b',
    '--model-config-name=alt',
    '--strict-readiness=false',
  ];
  const o = parseServerOptions([...REPO, ...flags]);
  assert.equal(o.id, 'x');
  assert.equal(o.logFormat, 'ISO8601');
  assert.equal(o.logFile, '/tmp/x.log');
  assert.deepEqual(o.hostPolicy, { p: { 'numa-node': '0' } });
  assert.equal(o.allowClientShm, true);
  assert.equal(o.grpcInferResponseCompressionLevel, 'high');
  assert.equal(o.modelConfigName, 'alt');
});

test('--http-codec-offload-bytes: 0 turns offload off, a size sets the threshold (int64)', () => {
  assert.equal(parseServerOptions([...REPO, '--http-codec-offload-bytes=0']).httpCodecOffloadBytes, 0);
  assert.equal(parseServerOptions([...REPO, '--http-codec-offload-bytes', '1048576']).httpCodecOffloadBytes, 1048576);
  assert.equal(parseServerOptions([...REPO, '--http-codec-offload-bytes=8589934592']).httpCodecOffloadBytes, 8589934592);
});

test('--max-queued-requests: a bound, 0 for none; a negative one is refused with the fix', () => {
  for (const [arg, want] of [
    ['--max-queued-requests=0', 0],
    ['--max-queued-requests=16', 16],
    ['--max-queued-requests', 100000],
  ] as const) {
    const argv = arg.includes('=') ? [...REPO, arg] : [...REPO, arg, String(want)];
    assert.equal(parseServerOptions(argv).maxQueuedRequests, want, arg);
  }
  assert.equal(errorOf([...REPO, '--max-queued-requests=-1']).message, 'Error: --max-queued-requests must be 0 (no bound) or greater.');
});

test('default --http-thread-count leaves a core to the scheduler and instances, 1..8', () => {
  for (const [cores, threads] of [
    [1, 1],
    [2, 1],
    [3, 2],
    [4, 3],
    [9, 8],
    [64, 8],
  ] as const) {
    assert.equal(defaultHttpThreadCount(cores), threads, `${cores} cores`);
  }
});

test('--http-cors-origin and --http-console: values kept, bad ones refused with what to give', () => {
  const on = parseServerOptions([...REPO, '--http-cors-origin', 'http://localhost:3000', '--http-cors-origin=*', '--http-console=/ui/']);
  assert.deepEqual(on.httpCorsOrigins, ['http://localhost:3000', '*']);
  assert.equal(on.httpConsolePath, '/ui');
  assert.equal(parseServerOptions([...REPO, '--http-console=false']).httpConsolePath, undefined);
  const bad: [string[], RegExp][] = [
    [['--http-cors-origin=localhost:3000'], /--http-cors-origin: 'localhost:3000' is not an origin; give scheme:\/\/host\[:port\]/],
    [['--http-cors-origin=http://a/b'], /is not an origin/],
    [['--http-console=/v2/ui'], /--http-console: '\/v2\/ui'; give a path such as \/console \(not under \/v2\)/],
    [['--http-console=console'], /--http-console: 'console'/],
  ];
  for (const [args, want] of bad) assert.throws(() => parseServerOptions([...REPO, ...args]), want, args.join(' '));
});
