/**
 * Which model versions may have instances on a frontend thread
 * (hosted-instance.ts): those whose every request the thread can run at once
 * and briefly, without changing what the scheduler would have done. Pure;
 * the probe run at load (frontend/http/hosted-instances.ts) then measures
 * the execution itself.
 */
import type { ModelConfig } from '../core/model-config';

/** In-process backends whose instances can run on any thread. */
const INLINE_BACKENDS: ReadonlySet<string> = new Set(['onnxruntime', 'fil']);

/** A model file larger than this is not loaded on a frontend thread (the load would hold its event loop). */
export const INLINE_MAX_MODEL_BYTES = 8 * 1024 * 1024;

export interface PlacementFacts {
  config: ModelConfig;
  /** Backend.name. */
  backend: string;
  /** --inline-execution-max-us; 0 = never. */
  maxUs: number;
  /** The model file's size in bytes, or undefined when it is a folder. */
  modelBytes: number | undefined;
}

/** Why the version's instances keep threads of their own, or undefined when they may be hosted. */
export function inlineRefusal(f: PlacementFacts): string | undefined {
  const c = f.config;
  if (f.maxUs <= 0) return '--inline-execution-max-us is 0';
  if (!INLINE_BACKENDS.has(f.backend)) return `backend '${f.backend}' runs outside the frontend threads`;
  if (c.ensemble_scheduling != null) return 'an ensemble has no instances';
  if (c.sequence_batching != null) return 'sequence batching schedules every request';
  if (c.model_transaction_policy?.decoupled === true) return 'decoupled';
  if (c.response_cache?.enable === true) return 'the response cache answers before the scheduler';
  const db = c.dynamic_batching;
  if (db !== undefined && db.max_queue_delay_microseconds > 0) return 'the dynamic batcher waits for a batch (max_queue_delay_microseconds > 0)';
  if (db !== undefined && db.preserve_ordering) return 'preserve_ordering releases responses in dispatch order';
  if (c.batch_input.length > 0 || c.batch_output.length > 0) return 'batch_input / batch_output';
  for (const i of c.input) {
    if (i.data_type === 'TYPE_STRING') return `input '${i.name}' is BYTES`;
    if (i.dims.some((d) => d < 0)) return `input '${i.name}' has a variable dimension`;
    if (i.is_shape_tensor) return `input '${i.name}' is a shape tensor`;
  }
  if (f.modelBytes === undefined) return 'the model is a folder';
  if (f.modelBytes > INLINE_MAX_MODEL_BYTES) return `the model file is over ${INLINE_MAX_MODEL_BYTES} bytes`;
  return undefined;
}
