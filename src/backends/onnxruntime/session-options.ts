/**
 * ONNX Runtime session options of one instance, from the model config and the
 * instance arguments. Pure, so the choices are table-testable.
 *
 * Config `parameters` read (Triton's ONNX Runtime backend names):
 *   intra_op_thread_count, inter_op_thread_count, execution_mode (0
 *   sequential, 1 parallel), enable_mem_arena, enable_mem_pattern;
 * plus, as a nodetron extension, any key starting with `session.` is passed
 * as an ONNX Runtime session config entry (e.g.
 * `session.intra_op.allow_spinning`).
 *
 * Defaults chosen for this server: intra-op threads = the machine's cores
 * shared by the model's instances (ORT's own default, 0, creates no pool on
 * small VMs: perf-facts.md), and no spinning of idle intra-op threads: ORT's
 * spin-wait burns cores the HTTP threads and the scheduler need, which
 * showed up as worse tail latency on 2-core machines.
 */
import type { InferenceSession } from 'onnxruntime-node';
import { ServerError } from '../../core/errors';
import type { BackendInstanceArgs } from '../backend';

export const ALLOW_SPINNING_KEY = 'session.intra_op.allow_spinning';

export function sessionOptionsFor(
  args: Pick<BackendInstanceArgs, 'config' | 'instanceCountHint' | 'hosted'>,
  availableParallelism: number,
): InferenceSession.SessionOptions {
  const { config } = args;
  const params = config.parameters ?? {};
  const param = (key: string): string | undefined => params[key]?.string_value;
  const intParam = (key: string): number | undefined => {
    const text = param(key);
    if (text === undefined) return undefined;
    const n = Number(text);
    if (text.trim() === '' || !Number.isInteger(n) || n < 0) {
      throw new ServerError('INVALID_ARG', `unable to load model '${config.name}': parameter '${key}' must be a non-negative integer, got '${text}'`);
    }
    return n;
  };
  const boolParam = (key: string): boolean | undefined => {
    const text = param(key);
    if (text === undefined) return undefined;
    const t = text.trim().toLowerCase();
    if (t === '1' || t === 'true') return true;
    if (t === '0' || t === 'false') return false;
    throw new ServerError('INVALID_ARG', `unable to load model '${config.name}': parameter '${key}' must be true/false or 1/0, got '${text}'`);
  };

  const instances = Math.max(1, args.instanceCountHint);
  const options: InferenceSession.SessionOptions = {
    // An instance on a frontend thread (BackendInstanceArgs.hosted) runs on that thread alone: a pool of its own would wake for every run.
    intraOpNumThreads: intParam('intra_op_thread_count') ?? (args.hosted === true ? 1 : Math.max(1, Math.floor(availableParallelism / instances))),
    executionMode: executionMode(config.name, param('execution_mode')),
    graphOptimizationLevel: graphLevel(config.optimization),
    // Errors only: ORT's warnings would go to stderr around the server's own log lines.
    logSeverityLevel: 3,
  };
  const inter = intParam('inter_op_thread_count');
  if (inter !== undefined) options.interOpNumThreads = inter;
  const memArena = boolParam('enable_mem_arena');
  if (memArena !== undefined) options.enableCpuMemArena = memArena;
  const memPattern = boolParam('enable_mem_pattern');
  if (memPattern !== undefined) options.enableMemPattern = memPattern;

  const extra: Record<string, string> = { [ALLOW_SPINNING_KEY]: '0' };
  for (const [key, value] of Object.entries(params)) {
    if (key.startsWith('session.')) extra[key] = value.string_value;
  }
  options.extra = extra;
  return options;
}

function executionMode(model: string, text: string | undefined): 'sequential' | 'parallel' {
  if (text === undefined || text.trim() === '0') return 'sequential';
  if (text.trim() === '1') return 'parallel';
  throw new ServerError('INVALID_ARG', `unable to load model '${model}': parameter 'execution_mode' must be 0 (sequential) or 1 (parallel), got '${text}'`);
}

/** optimization.graph.level as Triton reads it: -1 basic, 1 extended, anything else all. */
function graphLevel(optimization: Record<string, unknown> | undefined): 'basic' | 'extended' | 'all' {
  const graph = optimization?.graph as { level?: number } | undefined;
  const level = graph?.level ?? 0;
  if (level === -1) return 'basic';
  if (level === 1) return 'extended';
  return 'all';
}
