/**
 * What a frontend thread knows about the server: health flags and, per
 * model, its config, compiled validation plan and version states. The main
 * thread builds it from the registry and posts it to every HTTP thread on
 * each change (control plane; structured clone is fine here). Frontends
 * answer health, metadata, config and ready from it without a thread hop.
 */
import type { ModelConfig } from '../core/model-config';
import type { ModelState } from '../core/model-state';
import type { ShmRegionTable } from './shm-regions';
import type { ValidationPlan } from './validation-plan';

export interface VersionView {
  version: number;
  state: ModelState;
  reason: string;
  /**
   * READY, but an instance cannot serve now (a dead stub being restarted, a
   * model.py is_ready() that said no): why. The model's ready probe answers
   * not ready (model-lookup.ts, lookup 'ready').
   */
  unready?: string;
}

export interface ModelView {
  name: string;
  /** Present once the config was read and completed. */
  config?: ModelConfig;
  configJson?: string;
  /** The model's folder in its repository (the OpenAI routes read its tokenizer files there). */
  dir?: string;
  /**
   * How many loads built a version of it (a reload beside itself included):
   * what a frontend read from its folder itself (the OpenAI routes' chat
   * template and tokenizer) is read again when this changes.
   */
  loads?: number;
  plan?: ValidationPlan;
  /** Labels per output name, from label_filename (classification); an ensemble output without one has its composing model's (repository/ensemble-labels.ts). */
  labels: Record<string, string[]>;
  versions: VersionView[];
}

export interface ServerSnapshot {
  live: boolean;
  ready: boolean;
  exiting: boolean;
  models: Record<string, ModelView>;
  /** Registered client system shared-memory regions (shm-registry.ts); absent = none. */
  shmRegions?: ShmRegionTable;
}

export function emptySnapshot(): ServerSnapshot {
  return { live: false, ready: false, exiting: false, models: {} };
}
