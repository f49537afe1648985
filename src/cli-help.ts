/**
 * What each flag means: its --help group (Triton's groups, in Triton's
 * order), one description, its default, and, for flags nodetron accepts so
 * that Triton command lines run but does not act on, why (the start-up
 * warning and the --help text both say it). The layout of --help for 80
 * columns is here too; the flag table itself is cli-flags.ts.
 */
import { RESTRICTED_CATEGORIES } from './cli-values';
import { wrapWords } from './core/text-wrap';

export const HELP_GROUPS = [
  '',
  'Server',
  'Logging',
  'Model Repository',
  'HTTP',
  'GRPC',
  'Sagemaker',
  'Vertex',
  'Metrics',
  'Tracing',
  'Backend',
  'Repository Agent',
  'Response Cache',
  'Rate Limiter',
  'Memory/Device Management',
  'DEPRECATED',
  "nodetron's own",
] as const;
export type HelpGroup = (typeof HELP_GROUPS)[number];

export interface FlagDoc {
  group: HelpGroup;
  text: string;
  /** The default as --help prints it; absent = no default (unset). */
  def?: string;
  /** Accepted and not acted on: why, and what to do instead. */
  ignored?: string;
  /** No warning when the value (booleans normalised to true/false) is this: the ignored feature stays off. */
  quietWhen?: string;
}

const NO_GPU = 'nodetron runs on the CPU only (no CUDA)';
const NO_SAGEMAKER = 'nodetron has no SageMaker endpoint (/ping, /invocations); use the KServe v2 HTTP API on --http-port';
const NO_VERTEX = 'nodetron has no Vertex AI endpoint; use the KServe v2 HTTP API on --http-port';

const d = (group: HelpGroup, text: string, def?: string, ignored?: string, quietWhen?: string): FlagDoc => ({ group, text, def, ignored, quietWhen });

export const FLAG_DOCS: Readonly<Record<string, FlagDoc>> = {
  help: d('', 'Print this text and exit.'),
  version: d('', "Print the Triton version this server reproduces and nodetron's version, then exit (nodetron's own)."),

  id: d('Server', 'Name of this server, reported by GET /v2 and ServerMetadata.', 'triton'),
  'exit-timeout-secs': d(
    'Server',
    'On SIGINT/SIGTERM, the seconds the stop may take. Readiness turns 503 at once while ' +
      'requests are still served, until none is in flight or arriving for --exit-quiet-ms or, under steady traffic, until the ' +
      'last min(5, T/2) s, kept for answering what was received and unloading the models; then exit 0, or 1 when ' +
      'requests had to be cut. 0 = close at once. A second signal stops at once (exit 1).',
    '30',
  ),

  'log-verbose': d('Logging', 'Verbose logging level: 0 is off, 1 and more log more detail.', '0'),
  'log-info': d('Logging', 'Log info-level messages.', 'true'),
  'log-warning': d('Logging', 'Log warnings.', 'true'),
  'log-error': d('Logging', 'Log errors.', 'true'),
  'log-format': d(
    'Logging',
    'Line format: "default" (I1201 12:00:00.123456 ...), "ISO8601" (2026-12-01T12:00:00Z I ...) ' +
      'or "json" (one JSON object per line: time, level, pid, source, message, model; nodetron\'s own).',
    'default',
  ),
  'log-file': d('Logging', 'Write every log line to this file instead of stdout/stderr.', 'console'),
  'log-access': d(
    'Logging',
    'Log one line per HTTP request: client, protocol, model, version, status, bytes, ' + "queue and compute microseconds (nodetron's own).",
    'false',
  ),

  'model-store': d('Model Repository', 'Same as --model-repository.'),
  'model-repository': d(
    'Model Repository',
    'Model repository directory (required). Give several to serve ' + 'them all; a model name found in two of them is not served.',
  ),
  'exit-on-error': d('Model Repository', 'Exit with status 1 when a model fails to load at start.', 'true'),
  'disable-auto-complete-config': d(
    'Model Repository',
    'Do not fill in missing config.pbtxt settings from the model ' + 'file; every required setting must then be written.',
    'off',
  ),
  'strict-readiness': d('Model Repository', 'true: /v2/health/ready is 200 only when every model is ready; ' + 'false: as soon as the server answers.', 'true'),
  'model-control-mode': d(
    'Model Repository',
    'none: load every model at start; poll: also reload when the ' +
      'repository changes (--repository-poll-secs); explicit: only --load-model models and the load/unload API.',
    'none',
  ),
  'repository-poll-secs': d('Model Repository', 'Seconds between repository polls (poll mode only).', '15'),
  'load-model': d('Model Repository', "Model to load at start in explicit mode; '*' loads all.", 'none'),
  'model-config-name': d(
    'Model Repository',
    "Read each model's configs/<name>.pbtxt where it exists, " + 'else its config.pbtxt, e.g. --model-config-name=h100.',
    'config.pbtxt',
  ),
  'model-load-thread-count': d('Model Repository', "Model configs completed (a Python model's auto-complete stub) and versions built at the same time.", '4'),
  'model-load-retry-count': d('Model Repository', 'Retries of a model load that failed.', '0'),
  'model-namespacing': d(
    'Model Repository',
    'Serve models of the same name from different repositories.',
    'false',
    'a model name found in two repositories is not served; rename one of them',
    'false',
  ),
  'enable-peer-access': d('Model Repository', 'Enable GPU peer-to-peer access.', 'true', NO_GPU, 'true'),

  'allow-http': d('HTTP', 'Serve HTTP/REST (KServe v2).', 'true'),
  'http-address': d('HTTP', 'Address the HTTP server binds to.', '0.0.0.0'),
  'http-port': d('HTTP', 'HTTP port; 0 picks a free one.', '8000'),
  'reuse-http-port': d(
    'HTTP',
    'Share the HTTP port with other servers that set it too.',
    'false',
    "the HTTP port is shared only among this server's own HTTP threads; give each server its own --http-port",
    'false',
  ),
  'http-header-forward-pattern': d(
    'HTTP',
    'Regex of HTTP headers to forward to the model as request parameters ' + '(case-insensitive unless it starts with (?-i)).',
    'none',
  ),
  'http-thread-count': d(
    'HTTP',
    "Threads serving HTTP; Triton's default is 8. Without this flag one more " +
      'thread (up to the core count) starts and stays when the models loaded at start put instances on it ' +
      '(--inline-execution-max-us).',
    'cores - 1, 1 to 8',
  ),
  'http-restricted-api': d(
    'HTTP',
    'Restrict APIs to requests carrying a header: ' + `<api>[,<api>...]:<header>=<value>; apis: ${RESTRICTED_CATEGORIES.join(', ')}.`,
    'none',
  ),
  'openai-port': d(
    'HTTP',
    'Also serve the OpenAI-compatible routes (/v1/models, /v1/completions, /v1/chat/completions) ' +
      "on this port of their own, as Triton's OpenAI frontend does (its default is 9000); 0 picks a free one. " +
      'They are on --http-port in any case.',
    'none',
  ),
  'openai-restricted-api': d(
    'HTTP',
    "Restrict routes of --openai-port to requests carrying a header, as Triton's OpenAI " +
      "frontend does: '<api>[,<api>...] <header> <value>' (three words); apis: inference (completions), model-repository " +
      '(/v1/models), health (/health/ready), embedding, metrics (no such routes here). Refused: 401.',
    'none',
  ),
  'http-max-input-size': d('HTTP', 'Largest request body in bytes; bigger ones are refused with 400.', '67108864'),

  'allow-grpc': d('GRPC', 'Serve gRPC (inference.GRPCInferenceService).', 'true'),
  'grpc-address': d('GRPC', 'Address the gRPC server binds to.', '0.0.0.0'),
  'grpc-port': d('GRPC', 'gRPC port; 0 picks a free one.', '8001'),
  'reuse-grpc-port': d(
    'GRPC',
    'Share the gRPC port with other servers that set it too.',
    'false',
    'grpc-js binds the port for this server alone; give each server its own --grpc-port',
    'false',
  ),
  'grpc-header-forward-pattern': d(
    'GRPC',
    'Regex of gRPC metadata keys to forward to the model as request parameters ' + '(case-insensitive unless it starts with (?-i)).',
    'none',
  ),
  'grpc-infer-thread-count': d('GRPC', 'gRPC inference handler threads (2 to 128).', '2', 'gRPC requests are handled on the main thread by grpc-js'),
  'grpc-infer-allocation-pool-size': d('GRPC', 'Request/response states kept for reuse.', '8', 'grpc-js allocates per request; there is no pool to size'),
  'grpc-max-response-pool-size': d(
    'GRPC',
    'Largest number of responses queued per stream.',
    '2147483647',
    'grpc-js allocates per request; there is no pool to size',
  ),
  'grpc-use-ssl': d('GRPC', 'Serve gRPC over TLS (--grpc-server-cert, --grpc-server-key).', 'false'),
  'grpc-use-ssl-mutual': d('GRPC', 'Serve gRPC over mutual TLS (also --grpc-root-cert); implies --grpc-use-ssl.', 'false'),
  'grpc-server-cert': d('GRPC', 'PEM server certificate file (with --grpc-use-ssl).'),
  'grpc-server-key': d('GRPC', 'PEM server key file (with --grpc-use-ssl).'),
  'grpc-root-cert': d('GRPC', 'PEM root certificate file for client certificates (with --grpc-use-ssl-mutual).'),
  'grpc-infer-response-compression-level': d(
    'GRPC',
    'Compression of ModelInfer and ModelStreamInfer responses, in an ' +
      'encoding the client accepts (grpc-accept-encoding): none; low (gzip, else deflate); medium and high (deflate, else gzip).',
    'none',
  ),
  'grpc-keepalive-time': d('GRPC', 'Milliseconds between keepalive pings.', '7200000'),
  'grpc-keepalive-timeout': d('GRPC', "Milliseconds to wait for a keepalive ping's answer before closing.", '20000'),
  'grpc-keepalive-permit-without-calls': d('GRPC', 'Allow keepalive pings while no call is in flight.', 'false'),
  'grpc-http2-max-pings-without-data': d('GRPC', 'Pings allowed without data; 0 = no limit.', '2'),
  'grpc-http2-min-recv-ping-interval-without-data': d(
    'GRPC',
    'Shortest interval (ms) between client pings ' + 'without data; faster pings are strikes.',
    '300000',
  ),
  'grpc-http2-max-ping-strikes': d('GRPC', 'Bad pings tolerated before GOAWAY; 0 = any number.', '2'),
  'grpc-max-connection-age': d('GRPC', 'Longest life of a connection in milliseconds.', 'unlimited'),
  'grpc-max-connection-age-grace': d('GRPC', 'Grace period (ms) after --grpc-max-connection-age.', 'unlimited'),
  'grpc-restricted-protocol': d(
    'GRPC',
    'Restrict protocols to calls carrying metadata: ' + '<protocol>[,...]:<key>=<value> (checked as triton-grpc-protocol-<key>).',
    'none',
  ),

  'allow-sagemaker': d('Sagemaker', 'Serve the SageMaker API.', 'false', NO_SAGEMAKER, 'false'),
  'sagemaker-port': d('Sagemaker', 'SageMaker port.', '8080', NO_SAGEMAKER),
  'sagemaker-safe-port-range': d('Sagemaker', 'Ports other endpoints may use, <from>-<to>.', 'none', NO_SAGEMAKER),
  'sagemaker-thread-count': d('Sagemaker', 'SageMaker threads.', '8', NO_SAGEMAKER),
  'allow-vertex-ai': d('Vertex', 'Serve the Vertex AI API.', 'false', NO_VERTEX, 'false'),
  'vertex-ai-port': d('Vertex', 'Vertex AI port.', '8080', NO_VERTEX),
  'vertex-ai-thread-count': d('Vertex', 'Vertex AI threads.', '8', NO_VERTEX),
  'vertex-ai-default-model': d('Vertex', 'Model for single-model Vertex AI requests.', 'none', NO_VERTEX),

  'allow-metrics': d('Metrics', 'Serve Prometheus metrics on --metrics-port.', 'true'),
  'allow-gpu-metrics': d('Metrics', 'Report GPU metrics.', 'true', NO_GPU, 'true'),
  'allow-cpu-metrics': d('Metrics', 'Report CPU and memory metrics.', 'true'),
  'metrics-address': d('Metrics', 'Address the metrics server binds to.', 'the --http-address'),
  'metrics-port': d('Metrics', 'Metrics port (/metrics); 0 picks a free one.', '8002'),
  'metrics-interval-ms': d('Metrics', 'Milliseconds between CPU metric samples.', '2000'),
  'metrics-config': d(
    'Metrics',
    'Metrics setting <setting>=<value>, repeatable: summary_latencies, ' + 'summary_quantiles, counter_latencies, histogram_latencies.',
    'none',
  ),

  'trace-config': d(
    'Tracing',
    'Trace setting [<mode>,]<setting>=<value>, repeatable: level ' +
      '(OFF|TIMESTAMPS|TENSORS), rate, count, mode (triton|opentelemetry), triton,file=..., ' +
      'triton,log-frequency=..., opentelemetry,url=....',
    'level=OFF, rate=1000, count=-1',
  ),

  'backend-directory': d(
    'Backend',
    'Directory of backend shared libraries.',
    '/opt/tritonserver/backends',
    'backends are built in (onnxruntime, python, ensemble); no shared library is loaded',
  ),
  'backend-config': d('Backend', 'Backend setting <backend>,<setting>=<value>, repeatable; without <backend>, ' + 'for every backend.', 'none'),
  'repoagent-directory': d(
    'Repository Agent',
    'Directory of repository agent libraries.',
    '/opt/tritonserver/repoagents',
    'repository agents are not supported',
  ),
  'cache-config': d('Response Cache', 'Response cache <cache>,<setting>=<value>, e.g. local,size=1048576 ' + '(only "local").', 'no cache'),
  'cache-directory': d(
    'Response Cache',
    'Directory of cache libraries.',
    '/opt/tritonserver/caches',
    'the local cache is built in; no cache library is loaded',
  ),
  'rate-limit': d('Rate Limiter', "off, or execution_count: an execution starts only when its instance's " + 'rate_limiter resources are free.', 'off'),
  'rate-limit-resource': d('Rate Limiter', 'Resource available: <name>:<count>[:<device>], repeatable.', 'the most any instance asks for'),

  'pinned-memory-pool-byte-size': d('Memory/Device Management', 'Pinned host memory for GPU transfers.', '268435456', NO_GPU),
  'cuda-memory-pool-byte-size': d('Memory/Device Management', 'CUDA memory pool per GPU, <gpu>:<bytes>.', '67108864', NO_GPU),
  'cuda-virtual-address-size': d('Memory/Device Management', 'CUDA virtual address size per GPU, <gpu>:<bytes>.', '1073741824', NO_GPU),
  'min-supported-compute-capability': d('Memory/Device Management', 'Oldest CUDA compute capability used.', '7.5', NO_GPU),
  'buffer-manager-thread-count': d('Memory/Device Management', 'Threads for tensor copies.', '0', 'tensors are copied by the thread that needs them', '0'),
  'host-policy': d(
    'Memory/Device Management',
    'Host policy <name>,<setting>=<value> (numa-node, cpu-cores).',
    'none',
    'NUMA and CPU pinning are not supported; run the server under numactl or taskset',
  ),
  'model-load-gpu-limit': d('Memory/Device Management', 'Refuse loads when GPU memory use is over ' + '<gpu>:<fraction>.', 'no limit', NO_GPU),
  'allow-client-shm': d('Memory/Device Management', 'Allow clients to register system shared memory regions.', 'false'),

  'strict-model-config': d('DEPRECATED', 'Use --disable-auto-complete-config.', 'false'),
  'response-cache-byte-size': d('DEPRECATED', 'Use --cache-config=local,size=<bytes>.'),
  'trace-file': d('DEPRECATED', 'Use --trace-config triton,file=<path>.'),
  'trace-level': d('DEPRECATED', 'Use --trace-config level=<OFF|TIMESTAMPS|TENSORS>.'),
  'trace-rate': d('DEPRECATED', 'Use --trace-config rate=<n>.'),
  'trace-count': d('DEPRECATED', 'Use --trace-config count=<n>.'),
  'trace-log-frequency': d('DEPRECATED', 'Use --trace-config triton,log-frequency=<n>.'),

  'http-codec-offload-bytes': d(
    "nodetron's own",
    'Request JSON from this size (a compressed body counts 16x, ' + 'a JSON output byte 8x) is decoded/encoded off the HTTP thread; 0 = never.',
    '65536',
  ),
  'inline-execution-max-us': d(
    "nodetron's own",
    'Instances of small ONNX and FIL models (fixed input shapes, ' +
      'no sequence batching, cache or queue delay) live on the HTTP threads and run the requests those threads ' +
      'admit without a thread hop, when a probe run at full batch takes at most this many microseconds; ' +
      '0 = every instance on a thread of its own.',
    '500',
  ),
  'http-header-timeout-ms': d(
    "nodetron's own",
    'A request head (request line and headers) must arrive whole within this ' +
      'many milliseconds of its first byte, however it trickles in; past it, 408 and the connection closes.',
    '30000',
  ),
  'http-body-min-rate': d(
    "nodetron's own",
    'After its first 10 seconds a request body must have come at this many bytes a ' +
      'second at least; a slower one gets 408 and the connection closes; 0 = no rate (a body quiet for 10 s still gets 408).',
    '4096',
  ),
  'http-keepalive-timeout-ms': d("nodetron's own", 'A kept-alive connection with no request for this many milliseconds is closed.', '65000'),
  'http-max-connections': d(
    "nodetron's own",
    'Most open client connections over all HTTP threads and ports; one more is ' +
      'answered 503 and closed, while the open ones keep being served; 0 = no bound.',
    '10000',
  ),
  'http-max-connections-per-thread': d(
    "nodetron's own",
    "The same bound for each HTTP thread on its own (nginx's " +
      'worker_connections): a thread that holds this many answers the next connection it accepts 503 even while others ' +
      'have room, so one event loop never carries more; 0 = none, only --http-max-connections applies.',
    '0',
  ),
  'http-auth-token-file': d(
    "nodetron's own",
    'A file of tokens, one per line (# comments): every request on the HTTP port ' +
      'must send "Authorization: Bearer <one of them>", checked before anything else; others get 401. Also the OpenAI ' +
      "port's unless --openai-auth-token-file is given.",
  ),
  'grpc-auth-token-file': d(
    "nodetron's own",
    'The same for gRPC: every call must send the metadata "authorization: Bearer ' + '<token>"; others end UNAUTHENTICATED.',
  ),
  'openai-auth-token-file': d("nodetron's own", "The same for --openai-port's routes (default: --http-auth-token-file's tokens)."),
  'auth-exempt-health': d(
    "nodetron's own",
    "Health checks need no token: /v2/health/*, the OpenAI port's /health/ready, " +
      "gRPC ServerLive, ServerReady and grpc.health.v1 (for a load balancer's probes).",
    'false',
  ),
  'grpc-max-concurrent-streams': d(
    "nodetron's own",
    'Most streams (calls) at once on one gRPC connection (HTTP/2 ' +
      'SETTINGS_MAX_CONCURRENT_STREAMS); a client queues the next ones until one ends; 0 = no bound.',
    '128',
  ),
  'grpc-max-connection-idle': d("nodetron's own", 'A gRPC connection with no call for this many milliseconds is sent GOAWAY ' + 'and closed; 0 = never.', '0'),
  'grpc-max-connections': d(
    "nodetron's own",
    'Most open gRPC client connections; the calls of one more end UNAVAILABLE ' +
      '("the server has too many open gRPC connections") and it is closed a second later, while the open ones keep ' +
      'being served; 0 = no bound.',
    '10000',
  ),
  'grpc-reflection': d(
    "nodetron's own",
    'Serve gRPC server reflection (grpc.reflection.v1 and v1alpha), so grpcurl and other tools list and describe ' +
      'inference.GRPCInferenceService without the proto files; behind --grpc-auth-token-file when that is set.',
    'true',
  ),
  'max-queued-requests': d(
    "nodetron's own",
    'Most inference requests clients may have in the server at once ' +
      '(waiting in a queue or running, over all models); one more gets HTTP 429 / gRPC RESOURCE_EXHAUSTED ' +
      '"Exceeds maximum queue size" with a Retry-After hint instead of waiting. The default keeps a burst from ' +
      "growing the queues, and the memory their requests hold, without bound; 0 = no bound (Triton's behaviour).",
    '4096',
  ),
  'http-cors-origin': d(
    "nodetron's own",
    'Let pages from this origin (scheme://host[:port], or * for any) call ' +
      'the HTTP API from a browser: preflights are answered on every KServe route and answers carry ' +
      'Access-Control-Allow-Origin. Triton has no CORS.',
    'none',
  ),
  'http-console': d(
    "nodetron's own",
    'Where the built-in console (models, live charts, a try-it form) is served ' +
      'on the HTTP port; false = no console. Its data comes from the API routes, which --http-restricted-api ' +
      'still guards (the console asks for the key).',
    '/console',
  ),
  'http-max-json-response-size': d(
    "nodetron's own",
    'Most bytes of JSON one HTTP inference response may carry ' +
      '(binary outputs are not counted); a response whose JSON outputs would pass it is refused with 400 and the ' +
      'advice to ask for binary outputs. JSON is built in memory before it is sent: this bounds what one request ' +
      'can make the server hold.',
    '268435456',
  ),
  'exit-quiet-ms': d(
    "nodetron's own",
    'On SIGINT/SIGTERM, serving ends early once nothing is in flight and no ' +
      'inference request arrived for this many ms (counted from the signal too), instead of at the end of ' +
      '--exit-timeout-secs; give a load balancer that is slow to take the replica out more. 0 = as soon as ' +
      'nothing is in flight.',
    '1000',
  ),
  'model-cache-dir': d(
    "nodetron's own",
    'Where cloud repository roots (s3://, as://, gs://) are mirrored, one folder ' +
      "per root: only objects whose ETag changed are downloaded again, also at the next start; an unloaded model's " +
      'files are removed (explicit mode). Default: nodetron-model-cache-<uid> in the OS temp folder.',
  ),
  'python-env-cache-dir': d(
    "nodetron's own",
    "Where a Python model's requirements.txt is built into a virtual " +
      'environment (python3 -m venv + pip install -r), once per file content and interpreter: models with the same ' +
      'file share one, and servers sharing the folder never build one twice at once.',
    '<--model-cache-dir>/python-envs',
  ),
  'python-env-pip-args': d(
    "nodetron's own",
    'More arguments for pip when it builds a requirements.txt environment, split ' +
      "on spaces; pip's own configuration (pip.conf, PIP_* variables) applies as well. Offline: " +
      '--python-env-pip-args="--no-index --find-links <wheelhouse folder>".',
  ),
  'python-env-build-timeout-secs': d(
    "nodetron's own",
    'Longest a requirements.txt environment may take to build (venv + pip ' +
      'install); past it pip is ended and the model fails to load, saying so. 0 = no limit.',
    '1800',
  ),
};

/** --help's width: readable in an 80-column terminal. */
export const HELP_WIDTH = 80;
const INDENT = '      ';

export interface HelpFlag {
  name: string;
  /** Placeholder after the name, '' for switches. */
  arg: string;
  repeatable: boolean;
}

/** The whole --help text: groups in Triton's order, each flag with its default and description. */
export function helpText(flags: readonly HelpFlag[], width = HELP_WIDTH): string {
  const out: string[] = ['Usage: tritonserver [options]', ''];
  for (const group of HELP_GROUPS) {
    const members = flags.filter((f) => FLAG_DOCS[f.name]?.group === group);
    if (members.length === 0) continue;
    if (group !== '') out.push(`${group}:`);
    for (const f of members) out.push(...flagHelp(f, FLAG_DOCS[f.name]!, width));
    out.push('');
  }
  return `${out.join('\n')}`;
}

/** One flag: `  --name <arg>` and its default on one line when they fit, then the wrapped description. */
export function flagHelp(f: HelpFlag, doc: FlagDoc, width = HELP_WIDTH): string[] {
  const head = `  --${f.name}${f.arg === '' ? '' : ` ${f.arg}`}`;
  const def = doc.def !== undefined ? `default: ${doc.def}` : '';
  let text = doc.text;
  if (f.repeatable) text += ' Repeatable.';
  if (doc.ignored !== undefined) text += ` Ignored by nodetron: ${doc.ignored}.`;
  const lines: string[] = [];
  if (def !== '' && head.length + 2 + def.length <= width) lines.push(`${head}${' '.repeat(width - head.length - def.length)}${def}`);
  else {
    lines.push(head);
    if (def !== '') text = `(${def}) ${text}`;
  }
  for (const l of wrapWords(text, width - INDENT.length)) lines.push(INDENT + l);
  return lines;
}
