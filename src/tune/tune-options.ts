/**
 * Command line of `nodetron tune`: which model, where the server is (one
 * started here on `--model-repository`, or a running one at `-u` in explicit
 * mode), the time budget, the latency budget, the output, and the load's
 * inputs in perf's spelling (`--input-data`, `--shape`, `-b`). Pure: argv in,
 * options or a TuneUsageError out.
 */
import { flagsOf, parseNumber, parseShape, PerfUsageError, type Kind } from '../perf/perf-options';

export class TuneUsageError extends Error {}

export interface TuneOptions {
  model: string;
  /** Local repository: the server started here serves it, and the tuned config is written into it. */
  repository: string | undefined;
  /** A running server (explicit mode) instead of one started here. */
  url: string | undefined;
  budgetMinutes: number;
  /** Highest p99 a point may have to count; undefined = each config's knee. */
  latencyBudgetMs: number | undefined;
  format: 'table' | 'csv' | 'json';
  /** Also replace config.pbtxt with the winner (the old one kept as config.pbtxt.orig). */
  write: boolean;
  batchSize: number;
  shapes: Map<string, number[]>;
  inputData: string;
  maxConcurrency: number;
  measurementIntervalMs: number;
  stabilityPercentage: number;
  maxTrials: number;
  /** More arguments for the server started here. */
  serverArgs: string[];
  help: boolean;
}

interface Spec {
  key: string;
  kind: Kind;
}

const SPECS: Record<string, Spec> = {
  '-m': { key: 'model', kind: 'string' },
  '--model-name': { key: 'model', kind: 'string' },
  '--model-repository': { key: 'repository', kind: 'string' },
  '-u': { key: 'url', kind: 'string' },
  '--url': { key: 'url', kind: 'string' },
  '--budget-minutes': { key: 'budgetMinutes', kind: 'float' },
  '--latency-budget-ms': { key: 'latencyBudgetMs', kind: 'float' },
  '--format': { key: 'format', kind: 'string' },
  '--write': { key: 'write', kind: 'flag' },
  '-b': { key: 'batchSize', kind: 'int' },
  '--batch-size': { key: 'batchSize', kind: 'int' },
  '--shape': { key: 'shape', kind: 'string' },
  '--input-data': { key: 'inputData', kind: 'string' },
  '--max-concurrency': { key: 'maxConcurrency', kind: 'int' },
  '-p': { key: 'measurementIntervalMs', kind: 'int' },
  '--measurement-interval': { key: 'measurementIntervalMs', kind: 'int' },
  '-s': { key: 'stabilityPercentage', kind: 'float' },
  '--stability-percentage': { key: 'stabilityPercentage', kind: 'float' },
  '-r': { key: 'maxTrials', kind: 'int' },
  '--max-trials': { key: 'maxTrials', kind: 'int' },
  '--server-arg': { key: 'serverArg', kind: 'string' },
  '-h': { key: 'help', kind: 'flag' },
  '--help': { key: 'help', kind: 'flag' },
};

export const TUNE_USAGE = `Usage: nodetron tune -m <model> --model-repository DIR [options]
       nodetron tune -m <model> -u HOST:PORT [options]
Finds the fastest config for a model by loading candidates and measuring them:
instance count, max batch size, dynamic batching (preferred sizes, queue delay)
and ONNX Runtime's thread counts; for Python models the instance count.

  -m, --model-name NAME          the model to tune (required)
  --model-repository DIR         start a server here in explicit mode on free ports,
                                 serving DIR; the tuned config is written into DIR/NAME
  -u, --url HOST:PORT            tune on a running server started with
                                 --model-control-mode=explicit (the model is reloaded
                                 with its repository config at the end)
  --budget-minutes M             time for the whole search (default 10)
  --latency-budget-ms MS         the objective: highest throughput whose p99 stays under
                                 MS (default: each config at the knee of its curve)
  --format table|csv|json        how the results are printed (default table)
  --write                        also replace config.pbtxt with the winner (the old file
                                 kept as config.pbtxt.orig); without it only
                                 config.tuned.pbtxt is written
  -b, --batch-size N             batch of each request, for batching models (default 1)
  --shape NAME:d1,d2,...         shape of an input with variable dims (repeatable)
  --input-data zero|random|FILE  tensor values, as nodetron perf takes them (default random)
  --max-concurrency N            the sweep doubles the concurrency from 1 up to N (default 64)
  -p, --measurement-interval MS  window length (default 500)
  -s, --stability-percentage P   windows agree within P% (default 10)
  -r, --max-trials N             windows per point before it is marked not stable (default 6)
  --server-arg ARG               one more argument for the server started here (repeatable),
                                 e.g. --server-arg=--http-thread-count=2
`;

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) throw new TuneUsageError(`${flag}: expected one of ${allowed.join(', ')}, got '${value}'`);
  return value as T;
}

export function parseTuneOptions(argv: string[]): TuneOptions {
  const raw = new Map<string, string | number | boolean>();
  const shapes = new Map<string, number[]>();
  const serverArgs: string[] = [];
  try {
    for (const { flag, spec, value } of flagsOf(argv, SPECS)) {
      if (value === undefined) raw.set(spec.key, true);
      else if (spec.key === 'shape') {
        const [name, dims] = parseShape(value);
        shapes.set(name, dims);
      } else if (spec.key === 'serverArg') serverArgs.push(value);
      else raw.set(spec.key, spec.kind === 'string' ? value : parseNumber(flag, spec.kind, value));
    }
  } catch (err) {
    // perf's parsing pieces say what is wrong in perf's error type; the text is the same here.
    if (err instanceof PerfUsageError) throw new TuneUsageError(err.message);
    throw err;
  }
  const help = raw.get('help') === true;
  const model = raw.get('model') as string | undefined;
  const repository = raw.get('repository') as string | undefined;
  const url = raw.get('url') as string | undefined;
  if (!help) {
    if (model === undefined) throw new TuneUsageError('-m: a model name is required');
    if (repository === undefined && url === undefined) {
      throw new TuneUsageError('give --model-repository DIR (a server is started here) or -u HOST:PORT (a running server in explicit mode)');
    }
    if (url !== undefined && serverArgs.length > 0)
      throw new TuneUsageError('--server-arg: only for the server tune starts; with -u the server is already running');
  }
  const positive = (key: string, flag: string, dflt: number): number => {
    const v = (raw.get(key) as number | undefined) ?? dflt;
    if (!(v > 0)) throw new TuneUsageError(`${flag}: must be positive, got ${v}`);
    return v;
  };
  return {
    model: model ?? '',
    repository,
    url,
    budgetMinutes: positive('budgetMinutes', '--budget-minutes', 10),
    latencyBudgetMs: raw.has('latencyBudgetMs') ? positive('latencyBudgetMs', '--latency-budget-ms', 1) : undefined,
    format: oneOf('--format', String(raw.get('format') ?? 'table'), ['table', 'csv', 'json'] as const),
    write: raw.get('write') === true,
    batchSize: positive('batchSize', '-b', 1),
    shapes,
    inputData: (raw.get('inputData') as string | undefined) ?? 'random',
    maxConcurrency: positive('maxConcurrency', '--max-concurrency', 64),
    measurementIntervalMs: positive('measurementIntervalMs', '--measurement-interval', 500),
    stabilityPercentage: positive('stabilityPercentage', '--stability-percentage', 10),
    maxTrials: Math.max(3, positive('maxTrials', '--max-trials', 6)),
    serverArgs,
    help,
  };
}
