/**
 * sequence_batching.iterative_sequence as the sequence batcher keeps it
 * (Triton's IterativeSequencer): a request without a correlation id is given
 * the next one (from 1) and START; each request is known until its final
 * response, with the control tensors it carries; a request its model
 * released with RESCHEDULE gets new controls with neither START nor END,
 * and the execution pool that released it is remembered, since that pool
 * still counts it in flight while it waits for its next step (and answers
 * it if it is cancelled there, or hands it off to the pool that runs its
 * next step). Its sequence holds its slot until the final response, however
 * long a step runs (`heldKeys`, for the idle check).
 */
import { ServerError } from '../core/errors';
import type { Arena } from '../dataplane/arena';
import type { CorrelationId, InferRequest, TensorRef } from '../core/request';
import type { QueuedRequest } from './queued-request';
import { writeControls, type ControlPlan } from './sequence-controls';

/** An iterative_sequence request until its final response. */
export interface IterativeRequest {
  key: string;
  id: CorrelationId;
  /** As admitted (with its correlation id), without the control tensors. */
  request: InferRequest;
  /** Its control tensors in the arena (rewritten when it is rescheduled), freed with its final response. */
  controls: TensorRef[];
  /** Index of the pool whose execution last released it with RESCHEDULE: it counts the request in flight until its final answer. */
  heldBy: number | undefined;
}

export class IterativeSequences {
  private nextId = 1;
  private readonly requests = new Map<QueuedRequest, IterativeRequest>();

  constructor(
    private readonly controls: ControlPlan,
    private readonly arena: Arena,
    private readonly model: string,
  ) {}

  /** A request without a correlation id starts a sequence of its own, with the next id and START; the model sees both. */
  withId(request: InferRequest): InferRequest {
    const id = request.parameters['sequence_id'];
    if (id !== undefined && id !== 0 && id !== '') return request;
    const n = this.nextId++;
    const given = this.controls.corridType === 'BYTES' ? String(n) : n;
    return { ...request, parameters: { ...request.parameters, sequence_id: given, sequence_start: true } };
  }

  /** `q` was admitted: `request` is it without `controls`. */
  track(q: QueuedRequest, key: string, id: CorrelationId, request: InferRequest, controls: TensorRef[]): void {
    this.requests.set(q, { key, id, request, controls, heldBy: undefined });
  }

  /** Its final response went out (or it was refused): forgotten; what it was, if known. */
  done(q: QueuedRequest): IterativeRequest | undefined {
    const it = this.requests.get(q);
    this.requests.delete(q);
    return it;
  }

  /**
   * The model released `q` from an execution of pool `pool` with RESCHEDULE:
   * its controls are rewritten (no START, no END, as Triton clears the
   * flags) into `q.request`; returns its sequence's key.
   */
  rescheduled(q: QueuedRequest, pool: number): string {
    const it = this.requests.get(q);
    if (it === undefined) throw new ServerError('INTERNAL', `model '${this.model}' rescheduled a request it does not know`);
    it.heldBy = pool;
    const extra = writeControls(this.controls, this.arena, it.id, false, false);
    for (const t of it.controls) this.arena.free(t);
    it.controls = extra;
    const parameters = { ...it.request.parameters, sequence_start: false, sequence_end: false };
    it.request = { ...it.request, parameters };
    q.request = extra.length === 0 ? it.request : { ...it.request, inputs: [...it.request.inputs, ...extra] };
    return it.key;
  }

  /** The pool that counts `q` in flight while it waits for its next step; undefined when it is not rescheduled. */
  heldBy(q: QueuedRequest): number | undefined {
    return q.rescheduled ? this.requests.get(q)?.heldBy : undefined;
  }

  /** The sequences whose request has not had its final response (they keep their slots); undefined when there are none. */
  heldKeys(): ((key: string) => boolean) | undefined {
    if (this.requests.size === 0) return undefined;
    const keys = new Set<string>();
    for (const it of this.requests.values()) keys.add(it.key);
    return (key) => keys.has(key);
  }
}
