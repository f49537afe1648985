/**
 * A model instance as the scheduler sees it (main thread): it runs one
 * execution at a time. Implementations: worker-instance.ts (a worker thread
 * running an in-process backend such as onnxruntime) and process-instance.ts
 * (a child-process backend: the Python stubs, each with its host thread).
 */
import type { ExecuteResult, InferRequest, ReplyAddress, StreamResponse } from '../core/request';

export interface ModelInstance {
  /** `<group name>_<index>` as Triton names instances. */
  readonly name: string;
  /**
   * Run one batch. Never rejects: failures come back as error responses.
   * `replyTo` (per request, or null) offers to send those responses straight
   * to their frontend threads; an instance that does so returns them marked
   * `delivered`, without outputs, and one that does not (a Python stub)
   * simply returns them whole, for main to send.
   */
  execute(requests: InferRequest[], stream?: StreamResponse, replyTo?: (ReplyAddress | null)[]): Promise<ExecuteResult>;
  /**
   * Batches the scheduler may hand over before the previous one finished
   * (default 1). The instance still runs one execution at a time; a depth of
   * 2 lets the next batch wait in the instance's own queue, so its thread
   * does not sit idle for a round trip to the scheduler between executions.
   */
  readonly pipelineDepth?: number;
  /** Finalize the backend and end the thread or process. Idempotent. */
  stop(): Promise<void>;
  /**
   * Forced end (the stop's timeout ran out, a second signal): the thread is
   * terminated and the process killed now, without finalizing; batches it
   * holds fail. Idempotent, also after or during stop().
   */
  kill(): Promise<void>;
}
