/**
 * What both schedulers share once they have chosen a batch: the free
 * instances, running a batch on one, routing each response back to its
 * requester exactly once (optionally in dispatch order), counting in-flight
 * requests for a draining stop, and calling the statistics hooks. It also
 * knows which batches each instance holds, so a cancelled request that is
 * already running reaches its instance (`cancelRunning`), and answers one
 * its scheduler took out of the queue (`cancelQueued`).
 */
import { ServerError, requestIdPrefix, type ErrorInfo } from '../core/errors';
import { rescheduleRefused } from './scheduler-answers';
import type { ModelInstance } from '../instances/instance';
import { InlineGates } from './inline-gates';
import { nowNs } from '../core/clock';
import { OrderedRelease } from './ordered-release';
import {
  cancelledMessage,
  executionFailedMessage,
  type ExecuteResult,
  type InferRequest,
  type InferResponse,
  type ReplyAddress,
  type Respond,
} from '../core/request';
import type { SchedulerHooks } from './scheduler-hooks';
import { RequestAccounting, schedulerWarning as warn } from './request-accounting';
import { QueuedRequest } from './queued-request';

export interface ExecutionPoolOptions {
  model: string;
  instances: readonly ModelInstance[];
  hooks?: SchedulerHooks;
  /** Release responses in dispatch order (dynamic_batching.preserve_ordering). */
  preserveOrdering?: boolean;
  /**
   * Hand instances up to their pipelineDepth batches at once. The default
   * scheduler gains (simple, c=32: +15%, bench/README.md); the dynamic
   * batcher loses a little (smaller batches), so it keeps depth 1.
   */
  pipeline?: boolean;
  /** Called after an instance became free, so the scheduler can dispatch more. */
  onIdle: () => void;
  /** Sees each final response of an execution before the instance is free again (implicit sequence state). */
  onResult?: (q: QueuedRequest, response: InferResponse) => void;
  /**
   * Pass the requesters' reply addresses (Respond.replyTo) to the instance,
   * so their responses go straight from the instance thread to the frontend
   * thread. Only where main needs nothing of a response but its status:
   * not with preserve_ordering (main orders the release) nor onResult.
   */
  directReplies?: boolean;
  /**
   * The model is decoupled (model_transaction_policy): every response of
   * every request is in response_stats, also a request whose only response
   * is its final one. Otherwise only requests that stream are.
   */
  decoupled?: boolean;
  /**
   * Takes back a request its model released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE
   * (InferResponse.rescheduled), to run it again; called before the instance
   * is free, so the request can be the next one it runs. The request stays
   * in flight here until its final answer. Absent: the scheduler cannot, and
   * the request is answered with Triton's refusal.
   */
  reschedule?: (q: QueuedRequest) => void;
}

interface Slot {
  instance: ModelInstance;
  /** Batches it may hold at once. */
  depth: number;
  /** Batches it holds. */
  running: number;
  /** Order of the last time it finished a batch (higher = later). */
  freedAt: number;
  /** The batches it holds, oldest first (at most `depth`): where a cancel looks for a running request. */
  batches: QueuedRequest[][];
}

export class ExecutionPool {
  /**
   * Each instance with the batches it may hold (ModelInstance.pipelineDepth)
   * and holds. A batch goes to the instance with the fewest in flight (so
   * load spreads before any instance gets a second batch), and among those
   * to the one freed last: at low load the same instance keeps its caches
   * warm while the others sleep, which on a small machine is worth more
   * than rotating (simple at c=1: see bench/README.md).
   */
  private readonly slots: Slot[];
  private freeSlots = 0;
  private freedTick = 0;
  private inflight = 0;
  private drainWaiters: (() => void)[] = [];
  private readonly order: OrderedRelease<QueuedRequest> | null;
  private readonly hooks: SchedulerHooks | undefined;
  private readonly onIdle: () => void;
  private readonly onResult: ((q: QueuedRequest, response: InferResponse) => void) | undefined;
  private readonly direct: boolean;
  private readonly decoupled: boolean;
  private readonly reschedule: ((q: QueuedRequest) => void) | undefined;
  private readonly accounting: RequestAccounting;
  /** Gates of the instances a frontend thread hosts (inline-gates.ts). */
  private readonly gates: InlineGates;
  /** Admitted requests in the batches the instances hold. */
  private inBatches = 0;

  constructor(opts: ExecutionPoolOptions) {
    if (opts.instances.length === 0) {
      throw new ServerError('INTERNAL', `model '${opts.model}' has no instances to schedule on`);
    }
    const depthOf = (i: ModelInstance): number => (opts.pipeline === true ? Math.max(1, i.pipelineDepth ?? 1) : 1);
    // Earlier instances count as freed more recently, so an idle pool starts on the first.
    this.slots = opts.instances.map((instance, i) => ({ instance, depth: depthOf(instance), running: 0, freedAt: -i, batches: [] }));
    for (const slot of this.slots) this.freeSlots += slot.depth;
    this.hooks = opts.hooks;
    this.accounting = new RequestAccounting(opts.hooks);
    this.onIdle = opts.onIdle;
    this.onResult = opts.onResult;
    this.decoupled = opts.decoupled === true;
    this.reschedule = opts.reschedule;
    this.direct = opts.directReplies === true && opts.preserveOrdering !== true && opts.onResult === undefined;
    this.order = opts.preserveOrdering === true ? new OrderedRelease<QueuedRequest>((q, r) => this.release(q, r)) : null;
    this.gates = new InlineGates(opts.instances, opts.hooks, this.accounting);
  }

  /** The version serves (its lifecycle says READY and this build takes its requests), or no longer does. */
  serve(on: boolean): void {
    this.gates.serve(on, this.inflight, this.inBatches);
  }

  hasIdle(): boolean {
    return this.freeSlots > 0;
  }

  inflightCount(): number {
    return this.inflight;
  }

  /** Count a request from the moment it is queued. */
  admit(): void {
    this.inflight++;
    this.gates.update(this.inflight, this.inBatches);
  }

  /** Resolves once every admitted request has had its final response. Closes the inline gates: the scheduler stops. */
  drained(): Promise<void> {
    this.serve(false);
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /** Answer a request that was never admitted (queue full, stopping). */
  reject(request: InferRequest, respond: Respond, error: ErrorInfo): void {
    const now = nowNs();
    const q = new QueuedRequest(request, respond, now, '');
    q.done = true;
    callRespond(respond, { outputs: [], error, final: true });
    this.accounting.requestDone(q, false, now);
  }

  /** Answer an admitted request that will never run (its queue timeout passed: Triton's REJECTED). */
  abandon(q: QueuedRequest, error: ErrorInfo): void {
    q.failure = 'REJECTED';
    this.deliver(q, { outputs: [], error, final: true });
  }

  /**
   * Answer an admitted request its scheduler took out of the queue because
   * it was cancelled: CANCELLED, counted as Triton counts it (a failure,
   * reason CANCELED). No instance holds it now, so none is involved; the
   * caller has counted it in flight here (admit), or this pool still counts
   * it from the execution that released it with RESCHEDULE (its place in
   * the dispatch order kept, so the answers behind it go out). `message`:
   * when it was not cancelled itself (the sequence batcher's later requests
   * of a cancelled sequence).
   */
  cancelQueued(q: QueuedRequest, message = cancelledMessage(q.request)): void {
    q.failure = 'CANCELED';
    this.deliver(q, { outputs: [], error: { code: 'CANCELLED', message }, final: true });
  }

  /**
   * A cancelled request that is already on an instance: tell the instance
   * (a Python model then sees `is_cancelled()`); an instance that cannot
   * stop a running request (ONNX Runtime) lets it finish. Its response comes
   * back as usual (a request its model reschedules anyway is cancelled in
   * the queue: QueuedRequest.cancelRequested). Returns the running request,
   * or undefined when no batch of this pool holds it.
   */
  cancelRunning(request: InferRequest): QueuedRequest | undefined {
    for (const slot of this.slots) {
      for (const batch of slot.batches) {
        for (const q of batch) {
          if (q.origin !== request || q.done) continue;
          q.cancelRequested = true;
          slot.instance.cancel?.(q.request);
          return q;
        }
      }
    }
    return undefined;
  }

  /**
   * A request this pool counts in flight since its model released it with
   * RESCHEDULE runs its next step on another pool (its sequence lost its
   * slot here meanwhile: a cancel of a later request ended it), which
   * admits it: this pool stops counting it and gives up its dispatch order
   * place.
   */
  handOff(q: QueuedRequest): void {
    if (this.order !== null && q.inOrder) this.order.leave(q);
    this.left();
  }

  /** Run a batch of admitted requests on a free instance; call only when hasIdle(). */
  run(batch: QueuedRequest[]): void {
    const slot = this.takeSlot();
    if (slot === undefined) throw new Error('ExecutionPool.run called with no free instance');
    const instance = slot.instance;
    const requests: InferRequest[] = new Array(batch.length);
    const now = nowNs();
    let batchSize = 0;
    let padding = 0;
    let replyTo: (ReplyAddress | null)[] | undefined;
    for (let i = 0; i < batch.length; i++) {
      const q = batch[i]!;
      requests[i] = q.request;
      const to = this.direct ? q.respond.replyTo : undefined;
      if (to !== undefined) (replyTo ??= new Array<ReplyAddress | null>(batch.length).fill(null))[i] = to;
      q.lastResponseNs = now;
      batchSize += q.batchSize > 1 ? q.batchSize : 1;
      if (q.padding) padding++;
      else if (this.order !== null) this.order.register(q);
    }
    slot.batches.push(batch);
    this.inBatches += batch.length - padding;
    this.gates.update(this.inflight, this.inBatches);
    let pending: Promise<ExecuteResult>;
    try {
      // Non-final responses (decoupled models) go out as they come.
      pending = instance.execute(
        requests,
        (i, r) => {
          if (!r.final && batch[i] !== undefined) this.deliver(batch[i]!, r);
        },
        replyTo,
      );
    } catch (err) {
      pending = Promise.reject(err);
    }
    pending
      .then(
        (result) => this.executed(slot, batch, batchSize, padding, result),
        (err: unknown) => this.failed(slot, batch, err),
      )
      .catch((err: unknown) => warn('response routing', err));
  }

  private executed(slot: Slot, batch: QueuedRequest[], batchSize: number, padding: number, result: ExecuteResult): void {
    const instance = slot.instance;
    forget(slot, batch);
    this.inBatches -= batch.length - padding;
    const timings = result.timings;
    const responses = result.responses;
    // Before the instance is free: a rescheduled request may be the next it runs
    // (and so be dispatched again before the loop below).
    let requeued: Set<QueuedRequest> | undefined;
    for (let i = 0; i < batch.length; i++) {
      const q = batch[i]!;
      if (responses[i]?.rescheduled !== true || this.reschedule === undefined || q.padding || q.done) continue;
      q.timings = timings;
      q.rescheduled = true;
      try {
        this.reschedule(q);
        (requeued ??= new Set()).add(q);
      } catch (err) {
        q.rescheduled = false;
        this.deliver(q, errorResponse(q.request, `could not reschedule the request: ${err instanceof Error ? err.message : String(err)}`));
      }
    }
    if (this.onResult !== undefined) {
      for (let i = 0; i < batch.length; i++) {
        const r = responses[i];
        if (r === undefined || r.rescheduled === true) continue;
        try {
          this.onResult(batch[i]!, r);
        } catch (err) {
          warn('onResult hook', err);
        }
      }
    }
    this.free(slot);
    // Requests the instance answered without running them (cancelled while they waited there) are no part of the execution.
    let ran = batch.length - padding;
    let rows = batchSize;
    for (let i = 0; i < batch.length; i++) {
      if (responses[i]?.skipped !== true) continue;
      ran--;
      rows -= batch[i]!.batchSize > 1 ? batch[i]!.batchSize : 1;
    }
    if (this.hooks?.executionDone !== undefined && ran > 0) {
      try {
        this.hooks.executionDone(rows, ran, timings, padding);
      } catch (err) {
        warn('executionDone hook', err);
      }
    }
    for (let i = 0; i < batch.length; i++) {
      const q = batch[i]!;
      const r = responses[i];
      if (r?.skipped === true) q.failure = 'CANCELED';
      else q.timings = timings;
      if (r === undefined) {
        this.deliver(
          q,
          errorResponse(
            q.request,
            `instance '${instance.name}' of model '${q.request.model}' version ${q.request.version} returned ${responses.length} responses for a batch of ${batch.length} requests`,
          ),
        );
        continue;
      }
      if (r.rescheduled === true) {
        if (requeued?.has(q) === true) continue;
        // A padding row's final frees its slot's shared tensors; a request gets Triton's refusal.
        this.deliver(q, q.padding ? { outputs: [], final: true } : { outputs: [], error: rescheduleRefused(q.request), final: true });
        continue;
      }
      this.deliver(q, r);
      // The execution is over, so the request is too: close a decoupled
      // stream the backend left open with an empty final response.
      if (!r.final) this.deliver(q, { outputs: [], final: true });
    }
  }

  private failed(slot: Slot, batch: QueuedRequest[], err: unknown): void {
    const instance = slot.instance;
    forget(slot, batch);
    this.inBatches -= batch.filter((q) => !q.padding).length;
    this.free(slot);
    const why = err instanceof Error ? err.message : String(err);
    for (const q of batch) {
      const r: InferResponse = { outputs: [], error: { code: 'INTERNAL', message: executionFailedMessage(q.request, instance.name, why) }, final: true };
      // As a response with an error from a batch that ran: the sequence batcher forgets the request's implicit state.
      if (this.onResult !== undefined && !q.padding) {
        try {
          this.onResult(q, r);
        } catch (e) {
          warn('onResult hook', e);
        }
      }
      this.deliver(q, r);
    }
  }

  /** Fewest batches in flight first, then the most recently freed. */
  private takeSlot(): Slot | undefined {
    let best: Slot | undefined;
    for (const s of this.slots) {
      if (s.running >= s.depth) continue;
      if (best === undefined || s.running < best.running || (s.running === best.running && s.freedAt > best.freedAt)) best = s;
    }
    if (best !== undefined) {
      best.running++;
      this.freeSlots--;
    }
    return best;
  }

  /** Free the slot first, so the next batch starts while responses go out. */
  private free(slot: Slot): void {
    slot.running--;
    slot.freedAt = ++this.freedTick;
    this.freeSlots++;
    try {
      this.onIdle();
    } catch (err) {
      warn('scheduler dispatch', err);
    }
  }

  /** Through the dispatch order when the request holds a place in it (dispatched, not yet past; never a padding row). */
  private deliver(q: QueuedRequest, response: InferResponse): void {
    if (this.order !== null && q.inOrder) this.order.deliver(q, response);
    else this.release(q, response);
  }

  private release(q: QueuedRequest, response: InferResponse): void {
    if (q.done) return; // exactly one final response, nothing after it
    if (response.final) q.done = true;
    if (q.padding) {
      callRespond(q.respond, response);
      return;
    }
    if (!response.final) q.streaming = true;
    if (q.streaming || this.decoupled) this.accounting.responseDone(q, response);
    callRespond(q.respond, response);
    if (!response.final) return;
    // A request its frontend cancelled with the whole answer in hand (a stop sequence) succeeded.
    const answered = response.error?.code === 'CANCELLED' && q.origin.answered === true;
    if (answered) q.failure = undefined;
    this.accounting.requestDone(q, response.error === undefined || answered, nowNs());
    this.left();
  }

  /** An admitted request is no longer counted here (answered, or handed off). */
  private left(): void {
    this.inflight--;
    this.gates.update(this.inflight, this.inBatches);
    if (this.inflight === 0 && this.drainWaiters.length > 0) {
      const waiters = this.drainWaiters;
      this.drainWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }
}

/** A batch the instance finished (or failed) leaves the slot's list. */
function forget(slot: Slot, batch: QueuedRequest[]): void {
  const i = slot.batches.indexOf(batch);
  if (i >= 0) slot.batches.splice(i, 1);
}

function errorResponse(request: InferRequest, message: string): InferResponse {
  return { outputs: [], error: { code: 'INTERNAL', message: requestIdPrefix(request.id) + message }, final: true };
}

/** A throwing requester must not cost other requests their responses. */
function callRespond(respond: Respond, response: InferResponse): void {
  try {
    respond(response);
  } catch (err) {
    warn('respond callback', err);
  }
}
