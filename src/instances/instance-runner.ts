/**
 * One `execute` of an instance, wherever the instance runs: on its own
 * worker thread (instance-thread.ts) or on a frontend thread that hosts it
 * (frontend/http/hosted-instances.ts). Runs the backend, times it, and
 * returns the message for main: `executed` with the responses (outputs in
 * the arena, owned by the running thread) or `execute_failed`. Responses
 * with a reply address go on from there (ReplyRoutes.deliverAll).
 */
import { toErrorInfo } from '../core/errors';
import type { BackendInstance } from '../backends/backend';
import { nowNs } from '../core/clock';
import type { Arena } from '../dataplane/arena';
import type { ExecuteTimings, InferRequest, InferResponse } from '../core/request';

export interface BatchOutcome {
  /** One per request; undefined when the whole batch failed (`error`). */
  responses?: InferResponse[];
  error?: ReturnType<typeof toErrorInfo>;
  timings: ExecuteTimings;
}

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
