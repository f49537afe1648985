/**
 * The scheduler of a `sequence_batching` model. Requests of a sequence run
 * in arrival order on the one slot of one instance their START bound them to
 * (sequence-slots.ts): max_batch_size slots per instance for the direct
 * strategy, max_candidate_sequences candidate sequences for the oldest one.
 * Each carries the config's control tensors (sequence-controls.ts) as extra
 * inputs. When an instance is free, sequence-batch-policy.ts decides over the
 * head request of each of its slots: run them or wait for the queue delay.
 * Direct runs one row per slot up to the highest busy one, each sequence at
 * its slot's row, and fills the idle slots below with not-ready rows
 * (sequence-padding.ts), as Triton does; oldest runs at most max_batch_size
 * heads, oldest first, with preferred sizes, and with its preserve_ordering
 * answers in the order the requests were batched (execution-pool.ts).
 * Sequences idle past max_sequence_idle_microseconds lose their slot.
 * Implicit state (sequence_batching.state) lives in sequence-state.ts. With
 * iterative_sequence a request without a correlation id is given one and
 * START, and a request its model releases with RESCHEDULE goes back to the
 * front of its sequence's slot, with neither START nor END, to run again
 * (Triton's IterativeSequencer; iterative-sequences.ts); its sequence ends
 * with its final response.
 */
import { ServerError, toErrorInfo } from '../core/errors';
import type { Arena } from '../dataplane/arena';
import type { ModelInstance } from '../instances/instance';
import type { ModelConfig } from '../core/model-config';
import { SEQUENCE_IDLE_DEFAULT_MICROSECONDS } from '../repository/config/normalize';
import { nowNs, nowUs } from '../core/clock';
import { ExecutionPool } from './execution-pool';
import { QueuedRequest } from './queued-request';
import { missingStart, rescheduledCancelMessage, sequenceCancelledMessage, stoppingMessage } from './scheduler-answers';
import type { CorrelationId, InferRequest, InferResponse, Respond } from '../core/request';
import type { Scheduler } from './scheduler';
import type { SchedulerHooks } from './scheduler-hooks';
import { checkCorridType, compileControls, correlationIdOf, writeControls, type ControlPlan } from './sequence-controls';
import { sequenceKey, SequenceSlots } from './sequence-slots';
import { compileStates, SequenceStates } from './sequence-state';
import { IterativeSequences } from './iterative-sequences';
import { decideSequenceBatch, directRows, sequenceStrategyOf, type SequenceStrategy } from './sequence-batch-policy';
import { SlotPadding } from './sequence-padding';
import { batchKeyPlan, shapeKeyOf } from './batch-decision';

/** The idle check runs at most this often. */
const MIN_IDLE_CHECK_MS = 10;

export class SequenceBatchScheduler implements Scheduler {
  private readonly pools: ExecutionPool[];
  private readonly slots: SequenceSlots<QueuedRequest>;
  private readonly controls: ControlPlan;
  private readonly idleUs: number;
  private readonly model: string;
  /** Admitted, not yet handed to an instance. */
  private queued = 0;
  private queueWaiters: (() => void)[] = [];
  private idleTimer: NodeJS.Timeout | null = null;
  private stopped: Promise<void> | null = null;
  /** Implicit state; null when the config has no `state`. */
  private readonly states: SequenceStates | null;
  private readonly configOutputs: string[];
  private readonly strategy: SequenceStrategy;
  /** Per instance: the pending queue-delay wake-up, if any. */
  private readonly waitTimers: (NodeJS.Timeout | null)[];
  /** Sequence of each queued request, for the state (only with states). */
  private readonly stateOf = new Map<QueuedRequest, { key: string; start: boolean; end: boolean; original: InferRequest }>();
  /** Not-ready rows for the direct strategy's idle slots. */
  private readonly padding: SlotPadding;
  /** Inputs the batch key skips (ragged), or null when every request batches with every other. */
  private readonly ragged: ReadonlySet<string> | null;
  /** sequence_batching.iterative_sequence, or null without it. */
  private readonly iterative: IterativeSequences | null;

  constructor(
    config: ModelConfig,
    instances: readonly ModelInstance[],
    private readonly arena: Arena,
    hooks?: SchedulerHooks,
    modelDir?: string,
  ) {
    if (instances.length === 0) throw new ServerError('INTERNAL', `model '${config.name}' has no instances to schedule on`);
    this.model = config.name;
    this.controls = compileControls(config);
    const sb = config.sequence_batching as { max_sequence_idle_microseconds?: number };
    this.idleUs = Number(sb.max_sequence_idle_microseconds ?? 0) || SEQUENCE_IDLE_DEFAULT_MICROSECONDS;
    this.strategy = sequenceStrategyOf(config);
    this.slots = new SequenceSlots<QueuedRequest>(instances.length, this.strategy.slots, (q) => q.shapeKey);
    this.padding = new SlotPadding(this.controls, arena);
    this.ragged = batchKeyPlan(config);
    this.iterative = (sb as { iterative_sequence?: boolean }).iterative_sequence === true ? new IterativeSequences(this.controls, arena, config.name) : null;
    this.waitTimers = instances.map(() => null);
    const specs = compileStates(config, modelDir);
    this.states = specs.length === 0 ? null : new SequenceStates(specs, arena);
    this.configOutputs = config.output.map((o) => o.name);
    const onResult = this.states === null ? undefined : (q: QueuedRequest, r: InferResponse): void => this.stateResult(q, r);
    const preserveOrdering = this.strategy.kind === 'oldest' && this.strategy.preserveOrdering;
    this.pools = instances.map(
      (instance, i) =>
        new ExecutionPool({
          model: config.name,
          instances: [instance],
          hooks,
          onIdle: () => this.dispatchAll(),
          onResult,
          preserveOrdering,
          decoupled: config.model_transaction_policy?.decoupled === true,
          reschedule: this.iterative === null ? undefined : (q: QueuedRequest): void => this.reschedule(q, i),
        }),
    );
  }

  enqueue(request: InferRequest, respond: Respond): void {
    const given = request;
    const pool = this.pools[0]!;
    if (this.stopped !== null) {
      pool.reject(request, respond, { code: 'UNAVAILABLE', message: stoppingMessage(request) });
      return;
    }
    let q: QueuedRequest;
    let key: string;
    let start: boolean;
    let end: boolean;
    let id: CorrelationId;
    try {
      checkCorridType(this.controls, request);
      if (request.batchSize > 1) {
        throw new ServerError('INVALID_ARG', `inference request to model '${this.model}' must specify batch-size 1 due to requirements of sequence batcher`);
      }
      if (this.iterative !== null) request = this.iterative.withId(request);
      id = correlationIdOf(this.controls, request);
      start = request.parameters['sequence_start'] === true;
      end = request.parameters['sequence_end'] === true;
      key = sequenceKey(id);
      q = this.withControls(request, respond, id, key, start, end);
      q.origin = given; // what a cancel names (the request as given, before an iterative id)
    } catch (err) {
      pool.reject(request, respond, toErrorInfo(err));
      return;
    }
    // An iterative sequence ends with its request's final response (its slot is held while it is rescheduled).
    const iterative = this.iterative !== null;
    const ends = end || iterative;
    const admitted = this.slots.admit(key, { start, end: end && !iterative }, q, nowUs());
    if (admitted === 'no-start') {
      this.freeControls(q.request, request);
      this.iterative?.done(q);
      pool.reject(request, respond, missingStart(id, this.model));
      return;
    }
    if (this.states !== null) this.stateOf.set(q, { key, start, end: ends, original: request });
    this.queued++;
    this.armIdleCheck();
    if (admitted === 'queued') this.dispatchAll();
  }

  /**
   * A queued request ends its sequence, as Triton's sequence batcher ends a
   * sequence whose request was cancelled: it and the sequence's later
   * queued requests are answered CANCELLED (counted CANCELED), its earlier
   * ones still run, and the id needs a new START (sequence-slots.ts
   * `cancel`). A running request's instance is told (a Python model sees
   * is_cancelled()), and, outside iterative_sequence, its sequence ends the
   * same way: the requests queued after it are answered CANCELLED, while it
   * ends with its own response. Its implicit state goes
   * with the last request of it that runs. A rescheduled request waiting
   * for its next step was never queued again: the pool of the execution
   * that released it still counts it, and answers it; one whose model
   * reschedules it after a cancel reached it running is cancelled as it
   * comes back (reschedule).
   */
  cancel(request: InferRequest): void {
    const q = this.queuedRequest(request);
    if (q === undefined) {
      for (const p of this.pools) {
        const running = p.cancelRunning(request);
        if (running === undefined) continue;
        // iterative_sequence: the model decides (a request it reschedules anyway is cancelled as it comes back).
        if (this.iterative === null) this.endCancelled(this.slots.cancelAfter(running), undefined, request, correlationIdOf(this.controls, request));
        return;
      }
      return;
    }
    this.cancelQueued(q, request);
  }

  /** `q` (as given: `request`) is queued and cancelled: it ends its sequence (cancel). */
  private cancelQueued(q: QueuedRequest, request: InferRequest): void {
    const gone = this.slots.cancel(q);
    if (gone.length === 0) return;
    this.endCancelled(gone, q, request, correlationIdOf(this.controls, q.request));
  }

  /**
   * Answers what left the queue because `request` (queued as `q`, or
   * running: undefined) of sequence `id` was cancelled: CANCELLED, `q` as
   * itself, the others naming it; the sequence's state goes with its last
   * request, and the freed slot may take a sequence of the backlog.
   */
  private endCancelled(gone: readonly QueuedRequest[], q: QueuedRequest | undefined, request: InferRequest, id: CorrelationId): void {
    for (const g of gone) {
      if (this.states !== null) this.stateOf.delete(g);
      const message = g === q ? undefined : sequenceCancelledMessage(g.request, request, id);
      const held = this.iterative?.heldBy(g);
      if (held !== undefined) {
        this.pools[held]!.cancelQueued(g, message ?? rescheduledCancelMessage(g.request));
        continue;
      }
      this.queued--;
      const pool = this.pools[0]!;
      pool.admit();
      pool.cancelQueued(g, message);
    }
    this.wakeQueueWaiters();
    if (this.states !== null) this.endStateWithLast(sequenceKey(id));
    // The slot may have gone to a sequence of the backlog.
    this.dispatchAll();
  }

  inflightCount(): number {
    let n = this.queued;
    for (const p of this.pools) n += p.inflightCount();
    return n;
  }

  stop(): Promise<void> {
    this.stopped ??= (async () => {
      while (this.queued > 0) await new Promise<void>((resolve) => this.queueWaiters.push(resolve));
      await Promise.all(this.pools.map((p) => p.drained()));
      if (this.idleTimer !== null) clearTimeout(this.idleTimer);
      this.idleTimer = null;
      // Nothing is queued any more: a pending queue-delay wake-up has nothing to run.
      for (let i = 0; i < this.waitTimers.length; i++) {
        const timer = this.waitTimers[i];
        if (timer !== null && timer !== undefined) clearTimeout(timer);
        this.waitTimers[i] = null;
      }
      this.states?.dropAll();
    })();
    return this.stopped;
  }

  private wakeQueueWaiters(): void {
    if (this.queued !== 0 || this.queueWaiters.length === 0) return;
    const waiters = this.queueWaiters;
    this.queueWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /** The queued request that `request` (as given to enqueue) became, if it is still queued. */
  private queuedRequest(request: InferRequest): QueuedRequest | undefined {
    return this.slots.find((q) => q.origin === request);
  }

  /**
   * A cancel ended sequence `key`: the last of its requests still queued or
   * running takes its implicit state with it, as an END would; with none
   * left, the state goes now.
   */
  private endStateWithLast(key: string): void {
    let last: { end: boolean } | undefined;
    for (const s of this.stateOf.values()) if (s.key === key) last = s;
    if (last !== undefined) last.end = true;
    else this.states!.drop(key);
  }

  /**
   * The request as the backend sees it: its inputs plus the control tensors,
   * freed after its final response (for iterative_sequence, which also ends
   * the sequence then).
   */
  private withControls(request: InferRequest, respond: Respond, id: CorrelationId, key: string, start: boolean, end: boolean): QueuedRequest {
    const extra = writeControls(this.controls, this.arena, id, start, end);
    const withExtra: InferRequest = extra.length === 0 ? request : { ...request, inputs: [...request.inputs, ...extra] };
    const iterative = this.iterative;
    let q: QueuedRequest | undefined;
    const wrapped: Respond =
      extra.length === 0 && iterative === null
        ? respond
        : (response) => {
            if (response.final) {
              const it = q === undefined ? undefined : iterative?.done(q);
              for (const t of it?.controls ?? extra) this.arena.free(t);
              if (it !== undefined) this.slots.finish(it.key);
            }
            respond(response);
            if (response.final && iterative !== null) this.dispatchAll();
          };
    q = new QueuedRequest(withExtra, wrapped, nowNs(), this.ragged === null ? '' : shapeKeyOf(request, this.ragged));
    iterative?.track(q, key, id, request, extra);
    return q;
  }

  /**
   * iterative_sequence: the model released `q` with RESCHEDULE. It goes back
   * to the front of its sequence's slot (so it is the sequence's next step,
   * with its correlation id) with neither START nor END, as Triton's
   * IterativeSequencer clears the flags; pool `pool`, whose execution
   * released it, keeps it in flight (and answers it if it is cancelled
   * before it runs again).
   */
  private reschedule(q: QueuedRequest, pool: number): void {
    const key = this.iterative!.rescheduled(q, pool);
    const s = this.stateOf.get(q);
    if (s !== undefined) s.start = false;
    this.slots.requeue(key, q, nowUs());
    // A cancel reached it while it ran: it is cancelled as it comes back (as Triton's batcher finds a cancelled request), not run again.
    if (q.cancelRequested) this.cancelQueued(q, q.origin);
  }

  private freeControls(withExtra: InferRequest, original: InferRequest): void {
    for (let k = original.inputs.length; k < withExtra.inputs.length; k++) this.arena.free(withExtra.inputs[k]!);
  }

  /** take() may free a slot and bind a waiting sequence on another instance, so every completion looks at all. */
  private dispatchAll(): void {
    for (let i = 0; i < this.pools.length; i++) this.dispatch(i);
  }

  private dispatch(instance: number): void {
    const pool = this.pools[instance]!;
    if (!pool.hasIdle() || !this.slots.hasWork(instance)) return;
    const now = nowUs();
    const decision = decideSequenceBatch(this.strategy, this.slots.readyHeads(instance), now);
    if (decision.kind !== 'run') {
      if (decision.kind === 'wait') this.wakeAt(instance, decision.untilUs - now);
      return;
    }
    let batch: QueuedRequest[];
    let rows: (number | null)[] | null = null;
    if (this.strategy.kind === 'oldest') {
      batch = this.slots.take(instance, now, decision.count);
    } else {
      rows = directRows(this.slots.heads(instance).map((q) => (q === undefined ? null : q.shapeKey)));
      batch = this.slots.takeSlots(
        instance,
        rows.filter((k): k is number => k !== null),
        now,
      );
    }
    for (const q of batch) {
      // A rescheduled request is still in flight in the pool that ran it (and was never counted as queued again).
      if (q.rescheduled) {
        const held = this.iterative!.heldBy(q);
        q.rescheduled = false;
        // Its sequence lost its slot there (a cancel ended it): the pool that runs it counts it from now on.
        if (held !== undefined && held !== instance) {
          pool.admit();
          this.pools[held]!.handOff(q);
        }
        continue;
      }
      pool.admit();
      this.queued--;
    }
    this.wakeQueueWaiters();
    let run: QueuedRequest[];
    try {
      if (this.states !== null) {
        for (const q of batch) {
          const s = this.stateOf.get(q);
          if (s !== undefined) q.request = this.states.inject(q.request, s.key, s.start, this.configOutputs);
        }
      }
      run = rows === null || rows.length === batch.length ? batch : this.withPadding(rows, batch);
    } catch (err) {
      // The arena could not hold a state or a not-ready row: the batch is answered, not run.
      const error = toErrorInfo(err);
      for (const q of batch) {
        if (this.states !== null) this.stateResult(q, { outputs: [], error, final: true });
        pool.abandon(q, error);
      }
      return;
    }
    pool.run(run);
  }

  /** The direct execution's rows: each request at its slot's row, a not-ready row for every other slot up to the highest. */
  private withPadding(rows: readonly (number | null)[], batch: readonly QueuedRequest[]): QueuedRequest[] {
    const now = nowNs();
    const pads = this.padding.rows(batch[0]!.request, rows.length - batch.length, now);
    const run: QueuedRequest[] = [];
    let r = 0;
    let p = 0;
    for (const k of rows) {
      if (k !== null) {
        run.push(batch[r++]!);
        continue;
      }
      const pad = pads[p++]!;
      const q = new QueuedRequest(pad.request, pad.respond, now, '');
      q.padding = true;
      run.push(q);
    }
    return run;
  }

  /** Dispatch the instance again once its queue delay has passed (one wake-up pending per instance). */
  private wakeAt(instance: number, inUs: number): void {
    if (this.waitTimers[instance] !== null) return;
    const timer = setTimeout(
      () => {
        this.waitTimers[instance] = null;
        this.dispatch(instance);
      },
      Math.max(0, Math.ceil(inUs / 1000)),
    );
    this.waitTimers[instance] = timer;
  }

  /** The state output of a final response becomes the sequence's next state. */
  private stateResult(q: QueuedRequest, response: InferResponse): void {
    const s = this.stateOf.get(q);
    if (s === undefined || !response.final) return;
    this.stateOf.delete(q);
    this.states!.update(response, s.original, s.key, s.end, this.configOutputs);
  }

  /** One idle check pending while any sequence holds or waits for a slot. */
  private armIdleCheck(): void {
    if (this.idleTimer !== null) return;
    const ms = Math.max(MIN_IDLE_CHECK_MS, Math.ceil(this.idleUs / 2000));
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      // An iterative sequence keeps its slot while its request runs, so a rescheduled request runs again where its pool counts it.
      for (const key of this.slots.expireIdle(nowUs(), this.idleUs, this.iterative?.heldKeys())) this.states?.drop(key);
      this.dispatchAll();
      if (this.slots.sequenceCount() > 0) this.armIdleCheck();
    }, ms);
    this.idleTimer.unref();
  }
}
