/**
 * The backend interface. A backend has a main-thread side (file names,
 * auto-complete, config checks against the model file: cheap, no inference
 * runtime loaded) and an instance side that runs inside the instance's
 * worker thread or process and executes batches.
 */
import type { ModelConfig } from '../core/model-config';
import type { ExecuteResult, InferRequest, InferResponse, ParamValue, ReplyAddress, Respond, StreamResponse, TensorRef } from '../core/request';
import type { Arena } from '../dataplane/arena';
import type { MainPort } from '../dataplane/main-port';
import type { Logger } from '../logging/logger';
import type { CustomMetrics } from '../metrics/custom-metrics';

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
  /** The instance runs on a frontend thread's event loop (instances/hosted-instance.ts): no thread pool of its own. */
  hosted?: boolean;
}

/** Runs inside an instance thread/process. One execution at a time. */
export interface BackendInstance {
  /**
   * Execute one batch. Inputs are read from the arena; outputs are allocated
   * in the arena (the caller of the scheduler frees them). Returns one
   * response per request, same order; a per-request failure is a response
   * with `error`; a thrown error fails the whole batch.
   */
  execute(requests: InferRequest[], arena: Arena, marks?: ComputeMarks): Promise<InferResponse[]>;
  finalize(): Promise<void>;
}

/**
 * Phase ends a backend may report during execute() (wall-clock ns,
 * core/clock.ts): inputs gathered, and inference done (outputs about to
 * be written). Left 0, the whole execution counts as compute_infer.
 */
export interface ComputeMarks {
  inputEndNs: number;
  inferEndNs: number;
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
  /**
   * Slow work a model needs before its config can be completed, done once per
   * content and outside the load slots, so that other models load meanwhile
   * (the Python backend builds a requirements.txt environment). `progress`
   * takes log lines and the state reason to show while it runs. Absent: none.
   */
  readonly prepare?: (config: ModelConfig, modelPath: string, backendConfig: Record<string, string>, progress: PrepareProgress) => Promise<void>;
  /** The server is stopping: end the `prepare` work in progress (each fails its load) and start none. */
  readonly abortPrepare?: () => void;
  /**
   * Warnings about the config's backend-specific settings (parameters the
   * backend reads but does not act on here), one line each, logged once per
   * load beside `ignoredSettings`. Pure; absent: none.
   */
  readonly configWarnings?: (config: ModelConfig) => string[];
  /** Module path (absolute, compiled .js) exporting `createBackendInstance: CreateBackendInstance`. */
  readonly instanceModule: string;
  /** Where instances run: worker threads (default, `instanceModule`) or child processes (`startProcess`). */
  readonly instanceKind?: 'thread' | 'process';
  /** For instanceKind 'process': start one instance's child process and initialize it. */
  readonly startProcess?: StartProcessChild;
}

/** Where Backend.prepare reports. */
export interface PrepareProgress {
  info(text: string): void;
  verbose(text: string): void;
  /** The model's state reason while the work runs (undefined: done). */
  stage(reason: string | undefined): void;
}

/** What the server lends a child-process instance (on the main thread). */
export interface ProcessHostServices {
  arena: Arena;
  /** The main thread's end of the data plane (a host thread's rings, their doorbells). */
  port: MainPort;
  log: Logger;
  /** Inference requests made by a model (BLS) enter the server here. */
  gateway?: InferGateway;
  /** Where Python models' custom metric families live (exported on /metrics). */
  customMetrics?: CustomMetrics;
  /** The repository API for models (pb_utils.load_model, ...); absent: those calls fail. */
  modelControl?: ModelControl;
}

/** A load as the repository API takes it: an optional JSON config override and override files. */
export interface ModelLoadRequest {
  config?: string;
  /** Paths relative to the model folder (after `file:`). */
  files: { path: string; data: Uint8Array }[];
}

/**
 * Model control asked for from inside the server (a Python model's
 * pb_utils.load_model, unload_model, is_model_ready): the same calls, checks
 * and texts as the repository API of the frontends. Runs on the main thread.
 */
export interface ModelControl {
  /** Resolves when the load finished; rejects with the repository API's error (explicit mode only). */
  load(model: string, req: ModelLoadRequest): Promise<void>;
  /** Resolves once the model is unloading; rejects with the repository API's error (explicit mode only). */
  unload(model: string, unloadDependents: boolean): Promise<void>;
  /** -1: whichever version the version policy serves. Unknown models are not ready. */
  isReady(model: string, version: number): boolean;
}

/** A request built inside the server (BLS): tensors already in the arena, owned by the caller. */
export interface GatewayRequest {
  model: string;
  /** -1: the version policy chooses. */
  version: number;
  id: string;
  inputs: TensorRef[];
  requestedOutputs: string[] | null;
  parameters: Record<string, ParamValue>;
  /** The caller takes several responses; otherwise decoupled models are refused. */
  decoupled: boolean;
}

export interface InferGateway {
  /**
   * Look up, validate and enqueue; every outcome (errors too) arrives through
   * `respond`. Returns how to cancel it (a BLS caller's `.cancel()`): the
   * request then ends as any cancelled one does, with its final response.
   */
  infer(request: GatewayRequest, respond: Respond): CancelInfer;
}

/** Cancels one request made through an InferGateway; a no-op once it has finished. */
export type CancelInfer = () => void;

/** A backend instance living in a child process, as started by Backend.startProcess. */
export interface ProcessChild {
  readonly pid: number;
  /**
   * Run one batch; never rejects (failures are error responses). `replyTo`:
   * the host sends those final responses straight to their frontend threads
   * (dataplane/reply-routes.ts) and resolves with what main gets instead.
   */
  execute(requests: InferRequest[], stream?: StreamResponse, replyTo?: (ReplyAddress | null)[]): Promise<ExecuteResult>;
  /**
   * `request` (of a batch given to execute) was cancelled: the model sees it
   * (`is_cancelled()`). False when no batch of this child holds it (yet).
   */
  cancel?(request: InferRequest): boolean;
  /** Graceful end: finalize the model, then the process exits. Idempotent. */
  stop(): Promise<void>;
  /** Forced end: the process is killed (SIGKILL) and its host side ended now; batches fail. Idempotent. */
  kill(): Promise<void>;
  /** Called once when the process ends without stop() (crash, kill). */
  onDeath(listener: (why: string) => void): void;
  /** What its instance reports as the reason it is not ready while the process is dead (the backend's words, Triton's for Python). */
  readonly deadText?: string;
  /** Why the live process cannot serve (the model's own readiness check said no); undefined while it can. */
  readonly unready?: string | undefined;
  /** `listener` is called each time `unready` changes. */
  onUnreadyChange?(listener: () => void): void;
}

export type StartProcessChild = (args: BackendInstanceArgs, services: ProcessHostServices) => Promise<ProcessChild>;
