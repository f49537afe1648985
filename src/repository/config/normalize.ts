/**
 * Triton's config normalisation that needs no model file (protocol.md §3.2,
 * §3.5-3.7): the defaults `/config` shows after a model loads. Runs after
 * backend resolution and backend auto-complete, before validation.
 */
import type { ModelConfig, ModelInstanceGroup } from '../../core/model-config';
import { fillDefaults } from './defaults';
import { schemaType } from './schema';

export interface NormalizeContext {
  /** Model directory name; the config name when none is given. */
  modelName: string;
  /** GPUs visible to the server (ids 0..gpuCount-1 are the supported ones). */
  gpuCount: number;
  /**
   * Instance count for groups that resolve to KIND_CPU and give no count
   * (Triton: 2 for the onnxruntime and tensorflow backends, else 1; see
   * `defaultCpuInstanceCount`). GPU and MODEL groups default to 1. When
   * omitted it is derived from the config's backend.
   */
  defaultInstanceCount?: number;
}

/** Sequence idle timeout used when the config gives 0 (1 s). */
export const SEQUENCE_IDLE_DEFAULT_MICROSECONDS = 1_000_000;

/** Triton's default count for a KIND_CPU group of a backend. */
export function defaultCpuInstanceCount(backend: string): number {
  return backend === 'onnxruntime' || backend === 'tensorflow' ? 2 : 1;
}

/** Returns a normalised copy of `config`; the input is not modified. */
export function normalizeConfig(config: ModelConfig, ctx: NormalizeContext): ModelConfig {
  const c = structuredClone(config) as ModelConfig;
  if (!c.name) c.name = ctx.modelName;

  if (c.version_policy === undefined || c.version_policy === null) {
    c.version_policy = { latest: { num_versions: 1 } };
  }

  const mbs = c.max_batch_size ?? 0;
  const db = c.dynamic_batching;
  if (db !== undefined && db !== null) {
    if (!db.preferred_batch_size || db.preferred_batch_size.length === 0) {
      db.preferred_batch_size = mbs > 0 ? [mbs] : [];
    }
  }

  const sb = c.sequence_batching as Record<string, unknown> | undefined | null;
  if (sb !== undefined && sb !== null) {
    if (!sb.max_sequence_idle_microseconds) sb.max_sequence_idle_microseconds = SEQUENCE_IDLE_DEFAULT_MICROSECONDS;
    const oldest = sb.oldest as { preferred_batch_size?: number[] } | undefined;
    if (oldest !== undefined && oldest !== null) {
      if (!oldest.preferred_batch_size || oldest.preferred_batch_size.length === 0) {
        oldest.preferred_batch_size = mbs > 0 ? [mbs] : [];
      }
    }
  }

  // Ensembles have neither instances nor an optimization policy.
  const isEnsemble = c.ensemble_scheduling !== undefined && c.ensemble_scheduling !== null;
  if (!isEnsemble) {
    const opt = fillDefaults<Record<string, unknown>>(c.optimization ?? {}, schemaType('ModelOptimizationPolicy'));
    if (opt.input_pinned_memory === undefined) opt.input_pinned_memory = { enable: true };
    if (opt.output_pinned_memory === undefined) opt.output_pinned_memory = { enable: true };
    c.optimization = opt;
    c.instance_group = normalizeInstanceGroups(c, ctx);
  }
  return c;
}

function normalizeInstanceGroups(c: ModelConfig, ctx: NormalizeContext): ModelInstanceGroup[] {
  const groupType = schemaType('ModelInstanceGroup');
  const supported = Array.from({ length: Math.max(0, ctx.gpuCount) }, (_, i) => i);
  const groups = (c.instance_group ?? []).map((g) => fillDefaults<ModelInstanceGroup>(g, groupType));
  if (groups.length === 0) {
    // Triton names the group it creates after the model; AUTO resolves below.
    groups.push(fillDefaults<ModelInstanceGroup>({ name: c.name, kind: 'KIND_AUTO' }, groupType));
  }
  const cpuCount = ctx.defaultInstanceCount ?? defaultCpuInstanceCount(c.backend ?? '');
  groups.forEach((g, index) => {
    if (!g.name) g.name = `${c.name}_${index}`;
    if (g.kind === 'KIND_AUTO') {
      // AUTO is GPU only when GPUs exist and every listed gpu is one of them.
      const allPresent = g.gpus.every((id) => id >= 0 && id < supported.length);
      g.kind = supported.length > 0 && allPresent ? 'KIND_GPU' : 'KIND_CPU';
    }
    if (!(g.count >= 1)) g.count = g.kind === 'KIND_CPU' ? cpuCount : 1;
    if (g.kind === 'KIND_GPU' && g.gpus.length === 0) g.gpus = [...supported];
  });
  return groups;
}
