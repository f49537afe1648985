/**
 * The schedulers' own answers to a request that no execution answers (its
 * scheduler is stopping, or its model released it with RESCHEDULE where
 * nothing can take it back; the sequence batcher's: a sequence without its
 * START, a sequence ended by a cancel, a rescheduled request cancelled),
 * each naming the request, the model and what happened. A cancelled
 * request's text is core/request.ts cancelledMessage: the instances answer
 * it too.
 */
import { requestIdPrefix, type ErrorInfo } from '../core/errors';
import { cancelledMessage, type CorrelationId, type InferRequest } from '../core/request';

/**
 * Triton's answer to a request its model released with RESCHEDULE when the
 * model's scheduler cannot take it back (only the iterative sequence batcher
 * can), and what to do.
 */
export function rescheduleRefused(request: InferRequest): ErrorInfo {
  return {
    code: 'UNSUPPORTED',
    message:
      `${requestIdPrefix(request.id)}Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not configured to handle such a flag. ` +
      `Only the iterative sequence batcher takes a request back: add 'sequence_batching { iterative_sequence: true }' to the config of model '${request.model}', or answer the request in the execution that has it.`,
  };
}

/** The answer to a request that arrives while its scheduler stops. */
export function stoppingMessage(request: InferRequest): string {
  return `${requestIdPrefix(request.id)}model '${request.model}' version ${request.version} is stopping and accepts no new requests`;
}

/** The answer to a later request of a sequence whose request `cancelled` was cancelled. */
export function sequenceCancelledMessage(request: InferRequest, cancelled: InferRequest, id: CorrelationId): string {
  const which = cancelled.id === '' ? 'another request' : `request '${cancelled.id}'`;
  return (
    `${requestIdPrefix(request.id)}request for model '${request.model}' version ${request.version} was cancelled before it ran: ` +
    `${which} of its sequence ${String(id)} was cancelled, which ends the sequence (send a new START to begin again)`
  );
}

/** Triton's answer to a request of a sequence that is not active and lacks START. */
export function missingStart(id: CorrelationId, model: string): ErrorInfo {
  return {
    code: 'INVALID_ARG',
    message: `inference request for sequence ${String(id)} to model '${model}' must specify the START flag on the first request of the sequence`,
  };
}

/** A rescheduled request cancelled before its next step ran (it ran before: not "before it ran"). */
export function rescheduledCancelMessage(request: InferRequest): string {
  return cancelledMessage(request, 'after its model rescheduled it, before its next step ran');
}
