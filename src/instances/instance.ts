/**
 * A model instance as the scheduler sees it (main thread): it runs one
 * execution at a time. Implementations: worker-instance.ts (a worker thread
 * running an in-process backend such as onnxruntime) and process-instance.ts
 * (a child-process backend: the Python stubs, each with its host thread).
 */
import type { ExecuteResult, InferRequest, ReplyAddress, StreamResponse } from '../core/request';
import type { InlineMessage } from '../dataplane/protocol';

/**
 * What an instance hosted on a frontend thread (hosted-instance.ts) adds:
 * that thread runs a request itself, unqueued, when the instance is idle
 * there and its gate is open. The execution pool owns the gate.
 */
export interface InlineRuns {
  /** Open while the version serves and nothing waits in its scheduler's queue. */
  setOpen(open: boolean): void;
  /** `listener` hears of each request the frontend thread ran inline (for the statistics): a stand-in request and what it took. */
  onRun(listener: (request: InferRequest, run: InlineMessage) => void): void;
}

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
  /**
   * `request`, of a batch this instance holds, was cancelled (its client went
   * away or cancelled it): an instance that can tell its backend does (a
   * Python stub: `request.is_cancelled()` turns true); the batch still
   * answers every request as usual. Absent: the backend runs requests to the
   * end (ONNX Runtime cannot stop a run).
   */
  cancel?(request: InferRequest): void;
  /** Finalize the backend and end the thread or process. Idempotent. */
  stop(): Promise<void>;
  /**
   * Why this instance cannot serve right now although its version is READY
   * (a dead stub being restarted, a model.py is_ready() that said no);
   * undefined while it can. Triton's instance readiness
   * (TRITONBACKEND_ModelInstanceReady): it makes the model's ready probe,
   * and with --strict-readiness the server's, answer not ready, and unloads
   * nothing. Absent: always ready once started.
   */
  readonly unready?: string | undefined;
  /**
   * How many times this instance's thread or process died and a restart
   * began (the console's instance health). Absent: never restarted.
   */
  readonly restarts?: number;
  /** `listener` is called each time `unready` changes. */
  onUnreadyChange?(listener: () => void): void;
  /**
   * Forced end (the stop's timeout ran out, a second signal): the thread is
   * terminated and the process killed now, without finalizing; batches it
   * holds fail. Idempotent, also after or during stop().
   */
  kill(): Promise<void>;
  /** Present on an instance a frontend thread hosts. */
  readonly inline?: InlineRuns;
}
