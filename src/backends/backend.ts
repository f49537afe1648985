/**
 * The backend interface. A backend has a main-thread side (file names,
 * auto-complete, config checks against the model file: cheap, no inference
 * runtime loaded) and an instance side that runs inside the instance's
 * worker thread or process and executes batches.
 */
import type { ModelConfig } from '../repository/config/model-config';
import type { InferRequest, InferResponse } from '../scheduler/request';
import type { Arena } from '../instances/arena';

export interface BackendInstanceArgs {
  config: ModelConfig;
  /** <repo>/<model> */
  modelDir: string;
  version: number;
  /** Absolute path of the model file (or directory) for this version. */
  modelPath: string;
  /** `<group name>_<index>`. */
  instanceName: string;
  kind: 'KIND_CPU' | 'KIND_GPU' | 'KIND_MODEL';
  /** GPU id for KIND_GPU, else 0. */
  deviceId: number;
  /** Settings from --backend-config for this backend (and global ones). */
  backendConfig: Record<string, string>;
  /** Instances of this model on the machine, for sizing thread pools. */
  instanceCountHint: number;
}

/** Runs inside an instance thread/process. One execution at a time. */
export interface BackendInstance {
  /**
   * Execute one batch. Inputs are read from the arena; outputs are allocated
   * in the arena (the caller of the scheduler frees them). Returns one
   * response per request, same order; a per-request failure is a response
   * with `error`; a thrown error fails the whole batch.
   */
  execute(requests: InferRequest[], arena: Arena): Promise<InferResponse[]>;
  finalize(): Promise<void>;
}

export type CreateBackendInstance = (args: BackendInstanceArgs) => Promise<BackendInstance>;

/** Main-thread side of a backend. */
export interface Backend {
  readonly name: string;
  /** File name used when the config gives no default_model_filename. */
  readonly defaultModelFilename: string;
  /** Platform string this backend reports when the config gives none ('' if none). */
  readonly platform: string;
  /**
   * Fill missing inputs/outputs/max_batch_size from the model file (unless
   * auto-complete is disabled) and check the config against the model with
   * Triton's texts. Throws ServerError on mismatch. Returns the completed config.
   */
  completeConfig(config: ModelConfig, modelPath: string, autoComplete: boolean, backendConfig: Record<string, string>): Promise<ModelConfig>;
  /** Module path (absolute, compiled .js) exporting `createBackendInstance: CreateBackendInstance`. */
  readonly instanceModule: string;
}
