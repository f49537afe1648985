/** Every request of a batch answered with the same error (the instance could not run it). */
import { toErrorInfo } from '../core/errors';
import { nowNs } from '../core/clock';
import type { ExecuteResult, InferRequest } from '../core/request';

export function failedResult(requests: InferRequest[], err: unknown): ExecuteResult {
  const t = nowNs();
  const error = toErrorInfo(err);
  return {
    responses: requests.map(() => ({ outputs: [], error, final: true })),
    timings: { computeStartNs: t, computeInputEndNs: t, computeInferEndNs: t, computeEndNs: t },
  };
}
