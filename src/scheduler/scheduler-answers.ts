/**
 * The schedulers' own answers to a request that no execution answers (it
 * was cancelled while it waited, its scheduler is stopping, or its model
 * released it with RESCHEDULE where nothing can take it back), each naming
 * the request, the model and what happened.
 */
import { requestIdPrefix, type ErrorInfo } from '../core/errors';
import type { InferRequest } from '../core/request';

/**
 * The answer to a request cancelled while it waited (its client went away
 * or cancelled it, or its BLS caller did): Triton answers it with the
 * CANCELLED status; the text says which request and that it never ran.
 */
export function cancelledMessage(request: InferRequest, when = 'before it ran'): string {
  return `${requestIdPrefix(request.id)}request for model '${request.model}' version ${request.version} was cancelled ${when} ` +
    '(its client cancelled it or went away)';
}

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
