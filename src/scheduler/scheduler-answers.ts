/**
 * The schedulers' own answers to a request that no execution answers (its
 * scheduler is stopping, or its model released it with RESCHEDULE where
 * nothing can take it back), each naming the request, the model and what
 * happened. A cancelled request's text is core/request.ts cancelledMessage:
 * the instances answer it too.
 */
import { requestIdPrefix, type ErrorInfo } from '../core/errors';
import type { InferRequest } from '../core/request';

/**
 * Triton's answer to a request its model released with RESCHEDULE when the
 * model's scheduler cannot take it back (only the iterative sequence batcher
 * can), and what to do.
 */
export function rescheduleRefused(request: InferRequest): ErrorInfo {
  return {
    code: 'UNSUPPORTED',
    message: `${requestIdPrefix(request.id)}Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not configured to handle such a flag. ` +
      `Only the iterative sequence batcher takes a request back: add 'sequence_batching { iterative_sequence: true }' to the config of model '${request.model}', or answer the request in the execution that has it.`,
  };
}

/** The answer to a request that arrives while its scheduler stops. */
export function stoppingMessage(request: InferRequest): string {
  return `${requestIdPrefix(request.id)}model '${request.model}' version ${request.version} is stopping and accepts no new requests`;
}
