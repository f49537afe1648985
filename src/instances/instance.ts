/**
 * A model instance as the scheduler sees it (main thread): it runs one
 * execution at a time. Implementations: worker-instance.ts (a worker thread
 * running an in-process backend such as onnxruntime); later a child-process
 * instance for the Python backend.
 */
import type { InferRequest, InferResponse } from '../scheduler/request';

export interface ExecuteTimings {
  /** Wall-clock ns (clock.ts): execution started in the instance. */
  computeStartNs: number;
  /** Inputs gathered, backend about to run. */
  computeInputEndNs: number;
  /** Backend run finished. */
  computeInferEndNs: number;
  /** Outputs written to the arena. */
  computeEndNs: number;
}

export interface ExecuteResult {
  /** One response per request, in the order of the requests. */
  responses: InferResponse[];
  timings: ExecuteTimings;
}

/**
 * Receives the non-final responses of request `index` of a batch while it
 * runs (decoupled models); final responses come back in the ExecuteResult.
 */
export type StreamResponse = (index: number, response: InferResponse) => void;

export interface ModelInstance {
  /** `<group name>_<index>` as Triton names instances. */
  readonly name: string;
  /** Run one batch. Never rejects: failures come back as error responses. */
  execute(requests: InferRequest[], stream?: StreamResponse): Promise<ExecuteResult>;
  /**
   * Batches the scheduler may hand over before the previous one finished
   * (default 1). The instance still runs one execution at a time; a depth of
   * 2 lets the next batch wait in the instance's own queue, so its thread
   * does not sit idle for a round trip to the scheduler between executions.
   */
  readonly pipelineDepth?: number;
  /** Finalize the backend and end the thread or process. Idempotent. */
  stop(): Promise<void>;
}
