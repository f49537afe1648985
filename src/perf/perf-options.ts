/**
 * Command line of `nodetron perf`, in perf_analyzer's spelling: `-m`, `-x`,
 * `-u`, `-i`, `-b`, `--shape NAME:d1,d2`, `--input-data`,
 * `--concurrency-range start:end:step`, `--request-rate-range`,
 * `--measurement-interval` (ms), `--stability-percentage`, `--max-trials`,
 * `--percentile`, `-f out.csv`, `--measurement-mode`, `--latency-threshold`,
 * `-v`; `--service-kind openai` with `--endpoint v1/chat/completions|v1/completions`
 * (streamed LLM requests: openai-perf.ts) and its `--prompt`, `--max-tokens`,
 * `--extra-inputs name:value`, `--request-count`; perf_analyzer flags guides paste that change nothing here
 * (`--async`/`-a`, `--max-threads`, `--collect-metrics`,
 * `--shared-memory=none`) are accepted with a note saying what nodetron perf
 * does instead, and `-t N` is the old spelling of `--concurrency-range N`.
 * Pure: argv in, options or a PerfUsageError out.
 */

import type { OpenAIEndpoint } from './openai-stream-math';

export class PerfUsageError extends Error {}

export interface Range {
  start: number;
  end: number;
  step: number;
}

export interface PerfOptions {
  model: string;
  version: string;
  url: string;
  protocol: 'http' | 'grpc';
  batchSize: number;
  shapes: Map<string, number[]>;
  inputData: string;
  inputFormat: 'binary' | 'json';
  outputFormat: 'binary' | 'json';
  /** Exactly one of the two ranges is set. */
  concurrency: Range | undefined;
  requestRate: Range | undefined;
  measurementIntervalMs: number;
  stabilityPercentage: number;
  maxTrials: number;
  /** Latency percentile used for stability and the summary; undefined = average. */
  percentile: number | undefined;
  csvFile: string | undefined;
  /** Connections the request-rate mode may open. */
  maxConnections: number;
  /** count_windows: requests per window (--measurement-request-count); undefined = time windows. */
  windowRequests: number | undefined;
  /** --latency-threshold in ms: the sweep stops after a step over it; undefined = no limit. */
  latencyThresholdMs: number | undefined;
  verbose: boolean;
  /** triton: KServe v2 inference (the default); openai: streamed /v1 LLM requests (openai-perf.ts). */
  serviceKind: 'triton' | 'openai';
  endpoint: OpenAIEndpoint;
  /** openai: the prompt (chat: one user message), max_tokens, and more body fields. */
  prompt: string;
  maxTokens: number | undefined;
  extraInputs: Record<string, unknown>;
  /** openai: each step sends this many requests (else it runs for the measurement interval). */
  requestCount: number | undefined;
  /** What accepted-but-inert flags mean here, printed before the run. */
  notes: string[];
  help: boolean;
}

export type Kind = 'string' | 'int' | 'float' | 'flag';
interface Spec {
  key: string;
  kind: Kind;
  repeat?: boolean;
}

const SPECS: Record<string, Spec> = {
  '-m': { key: 'model', kind: 'string' },
  '--model-name': { key: 'model', kind: 'string' },
  '-x': { key: 'version', kind: 'string' },
  '--model-version': { key: 'version', kind: 'string' },
  '-u': { key: 'url', kind: 'string' },
  '--url': { key: 'url', kind: 'string' },
  '-i': { key: 'protocol', kind: 'string' },
  '--protocol': { key: 'protocol', kind: 'string' },
  '-b': { key: 'batchSize', kind: 'int' },
  '--batch-size': { key: 'batchSize', kind: 'int' },
  '--shape': { key: 'shape', kind: 'string', repeat: true },
  '--input-data': { key: 'inputData', kind: 'string' },
  '--input-tensor-format': { key: 'inputFormat', kind: 'string' },
  '--output-tensor-format': { key: 'outputFormat', kind: 'string' },
  '--concurrency-range': { key: 'concurrency', kind: 'string' },
  '--request-rate-range': { key: 'requestRate', kind: 'string' },
  '-p': { key: 'measurementIntervalMs', kind: 'int' },
  '--measurement-interval': { key: 'measurementIntervalMs', kind: 'int' },
  '-s': { key: 'stabilityPercentage', kind: 'float' },
  '--stability-percentage': { key: 'stabilityPercentage', kind: 'float' },
  '-r': { key: 'maxTrials', kind: 'int' },
  '--max-trials': { key: 'maxTrials', kind: 'int' },
  '--percentile': { key: 'percentile', kind: 'int' },
  '-f': { key: 'csvFile', kind: 'string' },
  '--max-connections': { key: 'maxConnections', kind: 'int' },
  '--measurement-mode': { key: 'measurementMode', kind: 'string' },
  '--measurement-request-count': { key: 'windowRequests', kind: 'int' },
  '--latency-threshold': { key: 'latencyThresholdMs', kind: 'int' },
  '-l': { key: 'latencyThresholdMs', kind: 'int' },
  '--service-kind': { key: 'serviceKind', kind: 'string' },
  '--endpoint': { key: 'endpoint', kind: 'string' },
  '--prompt': { key: 'prompt', kind: 'string' },
  '--max-tokens': { key: 'maxTokens', kind: 'int' },
  '--extra-inputs': { key: 'extraInputs', kind: 'string', repeat: true },
  '--request-count': { key: 'requestCount', kind: 'int' },
  '-v': { key: 'verbose', kind: 'flag' },
  '--verbose': { key: 'verbose', kind: 'flag' },
  '-t': { key: 'concurrencyOld', kind: 'int' },
  '-a': { key: 'async', kind: 'flag' },
  '--async': { key: 'async', kind: 'flag' },
  '--sync': { key: 'sync', kind: 'flag' },
  '--max-threads': { key: 'maxThreads', kind: 'int' },
  '--collect-metrics': { key: 'collectMetrics', kind: 'flag' },
  '--metrics-url': { key: 'metricsUrl', kind: 'string' },
  '--metrics-interval': { key: 'metricsInterval', kind: 'int' },
  '--shared-memory': { key: 'sharedMemory', kind: 'string' },
  '-h': { key: 'help', kind: 'flag' },
  '--help': { key: 'help', kind: 'flag' },
};

export const PERF_USAGE = `Usage: nodetron perf -m <model> [options]
  -m, --model-name NAME            model to load (required)
  -x, --model-version V            version (default: the server's choice)
  -u, --url HOST:PORT              server (default localhost:8000 for http, localhost:8001 for grpc)
  -i, --protocol http|grpc         (default http)
  -b, --batch-size N               batch dimension for batching models (default 1)
  --shape NAME:d1,d2,...           shape of an input with variable dims (repeatable; no batch dim)
  --input-data zero|random|FILE    tensor values (default random); FILE is perf_analyzer JSON {"data":[{...}]}
  --input-tensor-format binary|json   HTTP request tensors (default binary)
  --output-tensor-format binary|json  HTTP response tensors (default binary)
  --concurrency-range S:E:STEP     closed loop with S..E requests in flight (default 1:1:1)
  --request-rate-range S:E:STEP    open loop at S..E requests per second
  -p, --measurement-interval MS    window length (default 5000)
  -s, --stability-percentage P     windows agree within P% (default 10)
  -r, --max-trials N               windows per step before giving up on stability (default 10)
  --percentile P                   use the P-th latency percentile instead of the average
  -f FILE                          write the steps as CSV (perf_analyzer's columns, times in us)
  --max-connections N              connections the request-rate mode may open (default 256)
  --measurement-mode time_windows|count_windows   windows of -p ms (default), or of
                                   --measurement-request-count requests (default 50)
  -l, --latency-threshold MS       stop the sweep after a step whose latency is over MS
  -v, --verbose                    print every measurement window
  --service-kind triton|openai     triton (default): KServe v2 inference; openai: streamed LLM
                                   requests to an OpenAI-compatible endpoint (default url
                                   localhost:9000), closed loop at --concurrency-range, each step
                                   for -p ms or --request-count requests; reports time to first
                                   token, inter-token latency, output tokens/s and requests/s
  --endpoint v1/chat/completions|v1/completions   openai: the route (default v1/chat/completions)
  --prompt TEXT                    openai: the prompt (chat: one user message; default "Hello")
  --max-tokens N                   openai: max_tokens of every request (default: the model's)
  --extra-inputs NAME:VALUE        openai: another body field (repeatable; VALUE read as JSON
                                   when it parses, else as a string), e.g. seed:7
  --request-count N                openai: requests per step instead of a time window
  -t N                             old spelling of --concurrency-range N
  -a, --async, --sync              accepted: requests are always sent asynchronously, up to
                                   the concurrency (or rate) in flight
  --max-threads N                  accepted: nodetron perf drives all requests from one thread
  --collect-metrics, --metrics-url, --metrics-interval   accepted: no GPU metrics are
                                   collected; the server split comes from the statistics API
  --shared-memory none             only none: system and cuda shared memory are not supported yet
`;

export function parseNumber(flag: string, kind: Kind, text: string): number {
  const ok = kind === 'int' ? /^[+-]?\d+$/.test(text) : text.trim() !== '' && Number.isFinite(Number(text));
  if (!ok) throw new PerfUsageError(`${flag}: expected ${kind === 'int' ? 'an integer' : 'a number'}, got '${text}'`);
  return Number(text);
}

/** `start[:end[:step]]`, perf_analyzer's range syntax; end defaults to start, step to 1. */
export function parseRange(flag: string, text: string): Range {
  const parts = text.split(':');
  if (parts.length > 3 || parts.some((p) => p === '')) throw new PerfUsageError(`${flag}: expected start:end:step, got '${text}'`);
  const nums = parts.map((p) => {
    const n = Number(p);
    if (!Number.isFinite(n) || n <= 0) throw new PerfUsageError(`${flag}: '${p}' is not a positive number in '${text}'`);
    return n;
  });
  const range = { start: nums[0]!, end: nums[1] ?? nums[0]!, step: nums[2] ?? 1 };
  if (range.end < range.start) throw new PerfUsageError(`${flag}: end ${range.end} is below start ${range.start}`);
  return range;
}

/** The steps of a range: start, start+step, ... up to end inclusive. */
export function rangeSteps(r: Range): number[] {
  const out: number[] = [];
  for (let v = r.start; v <= r.end + 1e-9; v += r.step) out.push(v);
  return out;
}

/** `NAME:d1,d2,...`; the name may itself contain ':' (the last one separates). */
export function parseShape(text: string): [string, number[]] {
  const at = text.lastIndexOf(':');
  if (at <= 0 || at === text.length - 1) throw new PerfUsageError(`--shape: expected NAME:d1,d2,..., got '${text}'`);
  const dims = text
    .slice(at + 1)
    .split(',')
    .map((d) => {
      const n = Number(d);
      if (!Number.isInteger(n) || n < 0) throw new PerfUsageError(`--shape: dimension '${d}' of '${text}' is not a non-negative integer`);
      return n;
    });
  return [text.slice(0, at), dims];
}

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) throw new PerfUsageError(`${flag}: expected one of ${allowed.join(', ')}, got '${value}'`);
  return value as T;
}

/**
 * The flags of `argv` in order, each with its value (`--flag=value`,
 * `--flag value`, `-f value`; none for a switch). An unknown flag or a
 * missing value is a PerfUsageError. `nodetron tune` reads its argv with it too.
 */
export function* flagsOf<S extends { key: string; kind: Kind }>(
  argv: string[],
  specs: Record<string, S>,
): Generator<{ flag: string; spec: S; value: string | undefined }> {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const spec = specs[flag];
    if (spec === undefined) throw new PerfUsageError(`unknown option '${flag}'`);
    if (spec.kind === 'flag') {
      yield { flag, spec, value: undefined };
      continue;
    }
    const value: string | undefined = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new PerfUsageError(`${flag}: missing value`);
    yield { flag, spec, value };
  }
}

export function parsePerfOptions(argv: string[]): PerfOptions {
  const raw = new Map<string, string | number | boolean>();
  const shapes = new Map<string, number[]>();
  const extraInputs: Record<string, unknown> = {};
  for (const { flag, spec, value } of flagsOf(argv, SPECS)) {
    if (value === undefined) {
      raw.set(spec.key, true);
      continue;
    }
    if (spec.key === 'extraInputs') {
      const at = value.indexOf(':');
      if (at <= 0) throw new PerfUsageError(`--extra-inputs: expected NAME:VALUE, got '${value}'`);
      extraInputs[value.slice(0, at)] = jsonOrString(value.slice(at + 1));
      continue;
    }
    if (spec.key === 'shape') {
      const [name, dims] = parseShape(value);
      shapes.set(name, dims);
      continue;
    }
    raw.set(spec.key, spec.kind === 'string' ? value : parseNumber(flag, spec.kind, value));
  }
  const help = raw.get('help') === true;
  const notes = inertFlagNotes(raw);
  const shm = String(raw.get('sharedMemory') ?? 'none');
  if (shm !== 'none') {
    oneOf('--shared-memory', shm, ['none', 'system', 'cuda'] as const);
    throw new PerfUsageError(`--shared-memory=${shm}: not supported by nodetron perf yet; tensors go in the request ` + '(--shared-memory=none, the default)');
  }
  const mode = oneOf('--measurement-mode', String(raw.get('measurementMode') ?? 'time_windows'), ['time_windows', 'count_windows'] as const);
  const old = raw.get('concurrencyOld') as number | undefined;
  if (old !== undefined && raw.has('concurrency')) throw new PerfUsageError('-t and --concurrency-range cannot be used together');
  if (old !== undefined) raw.set('concurrency', String(old));
  const model = raw.get('model') as string | undefined;
  if (model === undefined && !help) throw new PerfUsageError('-m: a model name is required');
  const protocol = oneOf('-i', String(raw.get('protocol') ?? 'http').toLowerCase(), ['http', 'grpc'] as const);
  const serviceKind = oneOf('--service-kind', String(raw.get('serviceKind') ?? 'triton'), ['triton', 'openai'] as const);
  const endpoint = oneOf('--endpoint', String(raw.get('endpoint') ?? 'v1/chat/completions').replace(/^\//, ''), [
    'v1/chat/completions',
    'v1/completions',
  ] as const);
  if (serviceKind === 'openai') {
    if (protocol !== 'http') throw new PerfUsageError('--service-kind openai: the OpenAI API is HTTP only; leave -i out');
    if (raw.has('requestRate')) throw new PerfUsageError('--service-kind openai runs a closed loop: use --concurrency-range, not --request-rate-range');
  } else {
    for (const [key, flag] of [
      ['endpoint', '--endpoint'],
      ['prompt', '--prompt'],
      ['maxTokens', '--max-tokens'],
      ['requestCount', '--request-count'],
    ] as const) {
      if (raw.has(key)) throw new PerfUsageError(`${flag} belongs to --service-kind openai`);
    }
    if (Object.keys(extraInputs).length > 0) throw new PerfUsageError('--extra-inputs belongs to --service-kind openai');
  }
  const conc = raw.get('concurrency') as string | undefined;
  const rate = raw.get('requestRate') as string | undefined;
  if (conc !== undefined && rate !== undefined) throw new PerfUsageError('--concurrency-range and --request-rate-range cannot be used together');
  const positive = (key: string, flag: string, dflt: number): number => {
    const v = (raw.get(key) as number | undefined) ?? dflt;
    if (!(v > 0)) throw new PerfUsageError(`${flag}: must be positive, got ${v}`);
    return v;
  };
  const percentile = raw.get('percentile') as number | undefined;
  if (percentile !== undefined && !(percentile > 0 && percentile < 100)) throw new PerfUsageError(`--percentile: must be between 1 and 99, got ${percentile}`);
  return {
    model: model ?? '',
    version: (raw.get('version') as string | undefined) ?? '',
    url: (raw.get('url') as string | undefined) ?? (serviceKind === 'openai' ? 'localhost:9000' : protocol === 'grpc' ? 'localhost:8001' : 'localhost:8000'),
    protocol,
    batchSize: positive('batchSize', '-b', 1),
    shapes,
    inputData: (raw.get('inputData') as string | undefined) ?? 'random',
    inputFormat: oneOf('--input-tensor-format', String(raw.get('inputFormat') ?? 'binary'), ['binary', 'json'] as const),
    outputFormat: oneOf('--output-tensor-format', String(raw.get('outputFormat') ?? 'binary'), ['binary', 'json'] as const),
    concurrency: rate === undefined ? parseRange('--concurrency-range', conc ?? '1') : undefined,
    requestRate: rate === undefined ? undefined : parseRange('--request-rate-range', rate),
    measurementIntervalMs: positive('measurementIntervalMs', '--measurement-interval', 5000),
    stabilityPercentage: positive('stabilityPercentage', '--stability-percentage', 10),
    maxTrials: positive('maxTrials', '--max-trials', 10),
    percentile,
    csvFile: raw.get('csvFile') as string | undefined,
    maxConnections: positive('maxConnections', '--max-connections', 256),
    windowRequests: mode === 'count_windows' ? positive('windowRequests', '--measurement-request-count', 50) : undefined,
    latencyThresholdMs: raw.has('latencyThresholdMs') ? positive('latencyThresholdMs', '--latency-threshold', 1) : undefined,
    verbose: raw.get('verbose') === true,
    serviceKind,
    endpoint,
    prompt: (raw.get('prompt') as string | undefined) ?? 'Hello',
    maxTokens: raw.has('maxTokens') ? positive('maxTokens', '--max-tokens', 1) : undefined,
    extraInputs,
    requestCount: raw.has('requestCount') ? positive('requestCount', '--request-count', 1) : undefined,
    notes,
    help,
  };
}

/** A --extra-inputs value: JSON when it parses (7, true, 0.5, "x", [..]), else the text itself. */
function jsonOrString(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** One line per perf_analyzer flag given that changes nothing here, saying what nodetron perf does instead. */
function inertFlagNotes(raw: Map<string, string | number | boolean>): string[] {
  const notes: string[] = [];
  if (raw.has('async') || raw.has('sync')) {
    notes.push('--async/--sync: nodetron perf always sends asynchronously, with the concurrency (or rate) in flight');
  }
  if (raw.has('maxThreads')) {
    notes.push(`--max-threads=${String(raw.get('maxThreads'))}: ignored; one thread drives every request (the concurrency sets how many are in flight)`);
  }
  if (raw.has('collectMetrics') || raw.has('metricsUrl') || raw.has('metricsInterval')) {
    notes.push('--collect-metrics: ignored; nodetron serves no GPU metrics; the server-side split comes from the statistics API');
  }
  return notes;
}
