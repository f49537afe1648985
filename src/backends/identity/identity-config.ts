/**
 * What Triton's identity backend asks of a config (its ValidateModelConfig),
 * with its texts: as many outputs as inputs, inputs named INPUT<i> and
 * outputs OUTPUT<i>, each OUTPUT<i> with an INPUT<i> of the same data type
 * and shape (its reshape when it has one); and the parameters it reads:
 * `execute_delay_ms` (each execution sleeps that long first) and
 * `creation_delay_sec` (each instance's load sleeps that long). Pure.
 */
import { ServerError } from '../../core/errors';
import type { ModelConfig } from '../../core/model-config';

function invalid(message: string): ServerError {
  return new ServerError('INVALID_ARG', message);
}

/** Triton's backend ShapeToString: `[4,8]`. */
function shapeText(dims: readonly number[]): string {
  return `[${dims.join(',')}]`;
}

export function checkIdentityConfig(config: ModelConfig): void {
  const inputs = config.input ?? [];
  const outputs = config.output ?? [];
  if (inputs.length !== outputs.length) throw invalid('model configuration must have equal input/output pairs');
  const byIndex = new Map<string, { dtype: string; shape: number[] }>();
  for (let i = 0; i < inputs.length; i++) {
    const input = inputs[i]!;
    const output = outputs[i]!;
    if (!input.name.startsWith('INPUT')) throw invalid(`expected input name to follow INPUT<index> pattern, got '${input.name}'`);
    if (!output.name.startsWith('OUTPUT')) throw invalid(`expected output name to follow OUTPUT<index> pattern, got '${output.name}'`);
    byIndex.set(input.name.slice('INPUT'.length), { dtype: input.data_type, shape: input.reshape?.shape ?? input.dims });
  }
  for (const output of outputs) {
    const input = byIndex.get(output.name.slice('OUTPUT'.length));
    if (input === undefined) throw invalid('expected input and output indices to match');
    if (input.dtype !== output.data_type) throw invalid(`expected input and output datatype to match, got ${input.dtype} and ${output.data_type}`);
    const shape = output.reshape?.shape ?? output.dims;
    if (shapeText(input.shape) !== shapeText(shape)) {
      throw invalid(`expected input and output shape to match, got ${shapeText(input.shape)} and ${shapeText(shape)}`);
    }
  }
}

/** A parameter's string_value as a whole number of `unit`s (Triton reads these with std::stoi), 0 when absent. */
export function identityDelay(config: ModelConfig, key: 'execute_delay_ms' | 'creation_delay_sec'): number {
  const raw = config.parameters?.[key]?.string_value;
  if (raw === undefined) return 0;
  const m = /^\s*([+-]?\d+)/.exec(raw);
  if (m === null) throw invalid(`model '${config.name}': parameter '${key}' must be a whole number, got '${raw}'`);
  return Math.max(0, Number(m[1]));
}
