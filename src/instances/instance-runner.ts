/**
 * One `execute` of an instance, wherever the instance runs: on its own
 * worker thread (instance-thread.ts) or on a frontend thread that hosts it
 * (frontend/http/hosted-instances.ts). Runs the backend, times it, and
 * returns the message for main: `executed` with the responses (outputs in
 * the arena, owned by the running thread) or `execute_failed`. Responses
 * with a reply address go on from there (ReplyRoutes.deliverAll). A request
 * cancelled while its batch waited there (`cancel_in_batch`) is answered
 * CANCELLED without running.
 */
import { toErrorInfo } from '../core/errors';
import type { BackendInstance } from '../backends/backend';
import { nowNs } from '../core/clock';
import type { Arena } from '../dataplane/arena';
import { skippedResponse, type ExecuteTimings, type InferRequest, type InferResponse } from '../core/request';
import type { MainToInstance } from '../dataplane/protocol';

export interface BatchOutcome {
  /** One per request; undefined when the whole batch failed (`error`). */
  responses?: InferResponse[];
  error?: ReturnType<typeof toErrorInfo>;
  timings: ExecuteTimings;
}

/**
 * Runs `requests` but those at the `cancelled` indexes, which are answered
 * CANCELLED without running (skippedResponse: no part of the execution);
 * with all of them cancelled the backend is not called. Never rejects.
 */
export async function runBatchWithout(backend: BackendInstance, requests: InferRequest[], cancelled: ReadonlySet<number>, arena: Arena): Promise<BatchOutcome> {
  if (cancelled.size === 0) return runBatch(backend, requests, arena);
  const kept = requests.filter((_, i) => !cancelled.has(i));
  const now = nowNs();
  const outcome =
    kept.length > 0
      ? await runBatch(backend, kept, arena)
      : { responses: [], timings: { computeStartNs: now, computeInputEndNs: now, computeInferEndNs: now, computeEndNs: now } };
  if (outcome.responses === undefined) return outcome;
  let k = 0;
  return { ...outcome, responses: requests.map((r, i) => (cancelled.has(i) ? skippedResponse(r) : outcome.responses![k++]!)) };
}

/** The indexes of batch `batchId` that `cancel_in_batch` messages in `queue` name; those messages leave the queue. */
export function takeCancels(queue: MainToInstance[], batchId: number): ReadonlySet<number> {
  let cancelled: Set<number> | undefined;
  for (let i = queue.length - 1; i >= 0; i--) {
    const m = queue[i]!;
    if (m.t !== 'cancel_in_batch' || m.batchId !== batchId) continue;
    (cancelled ??= new Set()).add(m.index);
    queue.splice(i, 1);
  }
  return cancelled ?? NONE_CANCELLED;
}

/** A batch none of whose requests was cancelled (the common case: nothing is allocated for it). */
export const NONE_CANCELLED: ReadonlySet<number> = new Set();

/** Never rejects: a throwing backend becomes `error`. */
export async function runBatch(backend: BackendInstance, requests: InferRequest[], arena: Arena): Promise<BatchOutcome> {
  const computeStartNs = nowNs();
  const marks = { inputEndNs: 0, inferEndNs: 0 };
  try {
    const responses = await backend.execute(requests, arena, marks);
    const end = nowNs();
    // The backend does gather, run and scatter in one call; the split of the
    // compute time into input/infer/output is refined by backends that report it.
    return {
      responses,
      timings: {
        computeStartNs,
        computeInputEndNs: marks.inputEndNs || computeStartNs,
        computeInferEndNs: marks.inferEndNs || end,
        computeEndNs: end,
      },
    };
  } catch (err) {
    const end = nowNs();
    return { error: toErrorInfo(err), timings: { computeStartNs, computeInputEndNs: computeStartNs, computeInferEndNs: end, computeEndNs: end } };
  }
}
