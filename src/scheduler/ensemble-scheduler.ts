/**
 * The scheduler of an `ensemble_scheduling` model: it runs no instance of its
 * own. Each request follows the plan compiled at load (ensemble-plan.ts):
 * a step starts once every tensor it reads is written, and goes through the
 * same `route` the frontends use, so it is validated and batched in its own
 * model's scheduler like any client request.
 *
 * Tensors stay in the arena the whole way: a step's outputs are handed to the
 * next step's request as they are (only the name changes), never copied.
 * Intermediate tensors are freed as soon as every step reading them has
 * finished; ensemble outputs go to the requester, who frees them; the
 * request's own inputs belong to its frontend.
 *
 * A failing step fails the request with that step's error (prefixed `in ensemble '<name>', `, as Triton does), once every step
 * already running has finished (they may be reading the request's inputs,
 * which the frontend frees after our final response). A cancelled request
 * starts no further step (Triton checks between steps), its running steps
 * are cancelled in their own models, and it ends CANCELLED once they have
 * finished.
 *
 * `max_inflight_requests` bounds each step's requests in flight across all
 * requests of the ensemble (step-inflight-limiter.ts): a step over it waits
 * for a slot instead of being sent.
 */
import { toErrorInfo, type ErrorInfo } from '../core/errors';
import type { DecodedRequest } from '../request/decoded-request';
import { validateRequest } from '../request/validate';
import type { ValidationPlan } from '../request/validation-plan';
import type { Arena } from '../dataplane/arena';
import type { ModelConfig } from '../core/model-config';
import { nowNs } from '../core/clock';
import { compileEnsemblePlan, type ComposingConfig, type EnsemblePlan } from './ensemble-plan';
import { stoppingMessage } from './scheduler-answers';
import { cancelledMessage } from '../core/request';
import type { InferRequest, InferResponse, Respond, TensorRef } from '../core/request';
import type { Scheduler } from './scheduler';
import type { RequestDoneStats, SchedulerHooks } from './scheduler-hooks';
import { StepInflightLimiter } from './step-inflight-limiter';

/** What an ensemble needs from the server around it. */
export interface EnsembleServices {
  arena: Arena;
  /** Config of a composing model's READY version (-1 = newest), for the load-time checks; throws Triton's dependency error. */
  composingConfig: ComposingConfig;
  /** A READY version (-1 = newest) and its validation plan, at request time; throws the lookup error. */
  resolve(model: string, version: number): { version: number; plan: ValidationPlan };
  /** Where composing requests enter: the frontends' route. */
  route(request: InferRequest, respond: Respond): void;
  /** A composing request that `route` took is cancelled (version-resolution.ts cancelRequest). */
  cancel(request: InferRequest): void;
}

export class EnsembleScheduler implements Scheduler {
  private readonly plan: EnsemblePlan;
  /** One per step when max_inflight_requests > 0, shared by every request of this ensemble version. */
  private readonly limiters: readonly StepInflightLimiter[] | undefined;
  private inflight = 0;
  /** The runs in flight, by the request they serve: what a cancel looks up. */
  private readonly runs = new Map<InferRequest, EnsembleRun>();
  private drainWaiters: (() => void)[] = [];
  private stopped: Promise<void> | null = null;

  constructor(
    config: ModelConfig,
    private readonly services: EnsembleServices,
    private readonly hooks?: SchedulerHooks,
  ) {
    this.plan = compileEnsemblePlan(config, services.composingConfig);
    const max = config.ensemble_scheduling?.max_inflight_requests ?? 0;
    if (max > 0) this.limiters = this.plan.steps.map(() => new StepInflightLimiter(max));
  }

  enqueue(request: InferRequest, respond: Respond): void {
    if (this.stopped !== null) {
      const now = nowNs();
      respond({ outputs: [], error: { code: 'UNAVAILABLE', message: stoppingMessage(request) }, final: true });
      this.report(request, false, now, now, now);
      return;
    }
    this.inflight++;
    const run = new EnsembleRun(this.plan, this.services, this.limiters, request, (response, startNs, cancelled) => {
      this.runs.delete(request);
      try {
        respond(response);
      } finally {
        this.report(request, response.error === undefined, startNs, startNs, nowNs(), cancelled);
        this.inflight--;
        if (this.inflight === 0 && this.drainWaiters.length > 0) {
          const waiters = this.drainWaiters;
          this.drainWaiters = [];
          for (const w of waiters) w();
        }
      }
    });
    this.runs.set(request, run);
    run.start();
  }

  cancel(request: InferRequest): void {
    this.runs.get(request)?.cancel();
  }

  inflightCount(): number {
    return this.inflight;
  }

  stop(): Promise<void> {
    this.stopped ??= this.inflight === 0 ? Promise.resolve() : new Promise((resolve) => this.drainWaiters.push(resolve));
    return this.stopped;
  }

  /**
   * Statistics as one "execution" per request spanning all its steps: the
   * ensemble itself never queues, its compute is the whole pipeline.
   */
  private report(request: InferRequest, success: boolean, queueStartNs: number, computeStartNs: number, endNs: number, cancelled = false): void {
    const hooks = this.hooks;
    if (hooks === undefined) return;
    const ran = computeStartNs !== queueStartNs || endNs !== queueStartNs;
    const s: RequestDoneStats = {
      success,
      queueStartNs,
      computeStartNs: ran ? computeStartNs : 0,
      computeInputEndNs: ran ? computeStartNs : 0,
      computeInferEndNs: ran ? endNs : 0,
      computeEndNs: ran ? endNs : 0,
      endNs,
    };
    if (cancelled && !success) s.failure = 'CANCELED';
    try {
      if (success) hooks.executionDone?.(request.batchSize, 1, s, 0);
      hooks.requestDone?.(request, s);
    } catch (err) {
      process.emitWarning(`ensemble '${this.plan.name}': statistics hook threw: ${String(err)}`);
    }
  }
}

/** One request's walk through the plan. */
class EnsembleRun {
  private readonly slots: (TensorRef | undefined)[];
  /** Per step: input slots not written yet. */
  private readonly waiting: number[];
  /** Per slot: steps that read it and have not finished. */
  private readonly readersLeft: number[];
  private running = 0;
  private finished = 0;
  private error: ErrorInfo | undefined;
  /** The composing requests routed and not finished: a cancel reaches them. */
  private readonly live = new Set<InferRequest>();
  private cancelled = false;
  /** The final response went out (steps may answer synchronously, so finish can be reached twice). */
  private over = false;
  private readonly startNs = nowNs();

  constructor(
    private readonly plan: EnsemblePlan,
    private readonly services: EnsembleServices,
    private readonly limiters: readonly StepInflightLimiter[] | undefined,
    private readonly request: InferRequest,
    private readonly done: (response: InferResponse, startNs: number, cancelled: boolean) => void,
  ) {
    this.slots = new Array<TensorRef | undefined>(plan.slotNames.length);
    this.waiting = plan.steps.map((s) => s.inputSlots.length);
    this.readersLeft = plan.consumers.map((c) => c.length);
  }

  start(): void {
    const ready: number[] = [];
    for (const t of this.request.inputs) {
      const slot = this.plan.inputSlots.get(t.name);
      if (slot === undefined || this.slots[slot] !== undefined) continue;
      this.slots[slot] = t;
      ready.push(slot);
    }
    for (const slot of ready) this.written(slot);
    if (this.running === 0 && this.finished !== this.plan.steps.length) this.finish(); // nothing could start
  }

  /** No step starts from now on; the running ones are cancelled; the request ends CANCELLED once they are done. */
  cancel(): void {
    if (this.over || this.cancelled) return;
    this.cancelled = true;
    this.error ??= { code: 'CANCELLED', message: cancelledMessage(this.request, 'between its steps') };
    for (const r of [...this.live]) this.services.cancel(r);
  }

  /** A slot got its tensor: start the steps that now have all their inputs. */
  private written(slot: number): void {
    for (const step of this.plan.consumers[slot]!) {
      if (--this.waiting[step]! === 0 && this.error === undefined) this.runStep(step);
    }
  }

  /** A step counts as running from here, also while it waits for a slot of its limiter. */
  private runStep(index: number): void {
    this.running++;
    const limiter = this.limiters?.[index];
    if (limiter === undefined) return this.sendStep(index);
    limiter.acquire(() => {
      // The request failed while this step waited: it is not sent, and ends as a step that did not run.
      if (this.error !== undefined) this.stepDone(index, { outputs: [], final: true });
      else this.sendStep(index);
    });
  }

  private sendStep(index: number): void {
    const step = this.plan.steps[index]!;
    const inputs: TensorRef[] = step.inputs.map((i) => ({ ...this.slots[i.slot]!, name: i.name }));
    let request: InferRequest;
    try {
      request = this.stepRequest(step.model, step.version, inputs, step.requestedOutputs);
    } catch (err) {
      this.stepDone(index, { outputs: [], error: toErrorInfo(err), final: true });
      return;
    }
    this.live.add(request);
    this.services.route(request, (response) => {
      if (response.final) {
        this.live.delete(request);
        this.stepDone(index, response);
      } else for (const o of response.outputs) this.services.arena.free(o); // decoupled steps are refused at load
    });
  }

  /** The composing request, validated against its model as a client request would be. */
  private stepRequest(model: string, version: number, inputs: TensorRef[], requestedOutputs: string[]): InferRequest {
    const { version: resolved, plan } = this.services.resolve(model, version);
    const arena = this.services.arena;
    const decoded: DecodedRequest = {
      id: this.request.id,
      inputs: inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape, data: arena.bytes(t.offset, t.byteSize), parameters: {} })),
      outputs: requestedOutputs.map((name) => ({ name, binary: true, classification: 0, parameters: {} })),
      parameters: this.request.parameters,
      binaryDataOutput: true,
    };
    const { batchSize } = validateRequest(plan, decoded);
    return {
      id: this.request.id,
      model,
      version: resolved,
      latest: version === -1,
      batchSize: plan.maxBatchSize > 0 ? batchSize : 1,
      inputs,
      requestedOutputs,
      parameters: this.request.parameters,
      arrivalNs: nowNs(),
    };
  }

  private stepDone(index: number, response: InferResponse): void {
    this.running--;
    this.finished++;
    const step = this.plan.steps[index]!;
    const written: number[] = [];
    if (response.error !== undefined || this.error !== undefined) {
      this.error ??= response.error;
      for (const o of response.outputs) this.services.arena.free(o);
    } else {
      for (const o of response.outputs) {
        const mapped = step.outputs.find((x) => x.name === o.name);
        if (mapped === undefined || this.slots[mapped.slot] !== undefined) {
          this.services.arena.free(o);
          continue;
        }
        this.slots[mapped.slot] = o;
        written.push(mapped.slot);
      }
      const missing = step.outputs.find((x) => this.slots[x.slot] === undefined);
      if (missing !== undefined) {
        this.error = { code: 'INTERNAL', message: `step of model '${step.model}' did not produce output '${missing.name}'` };
      }
    }
    // Intermediates nobody else reads go back to the arena now.
    for (const slot of step.inputSlots) {
      if (--this.readersLeft[slot]! === 0) this.release(slot);
    }
    if (this.error === undefined) for (const slot of written) this.written(slot);
    if (this.running === 0 && (this.error !== undefined || this.finished === this.plan.steps.length)) this.finish();
    this.limiters?.[index]!.release(); // last: the step the slot goes to may be another request's, run from here
  }

  /** Free a slot the ensemble owns (a step wrote it and the requester will not get it). */
  private release(slot: number): void {
    if (this.plan.producer[slot] === -1 || this.plan.isOutput[slot]) return;
    const t = this.slots[slot];
    if (t === undefined) return;
    this.slots[slot] = undefined;
    this.services.arena.free(t);
  }

  private finish(): void {
    if (this.over) return;
    this.over = true;
    const plan = this.plan;
    if (this.error === undefined && this.finished !== plan.steps.length) {
      this.error = { code: 'INTERNAL', message: 'not every step could run with the given inputs' };
    }
    if (this.error !== undefined) {
      // Triton names the ensemble in front of whatever failed in it (a step's own error included).
      const error = { code: this.error.code, message: `in ensemble '${plan.name}', ${this.error.message}` };
      for (let slot = 0; slot < this.slots.length; slot++) {
        const t = this.slots[slot];
        if (t !== undefined && plan.producer[slot] !== -1) this.services.arena.free(t);
        this.slots[slot] = undefined;
      }
      this.done({ outputs: [], error, final: true }, this.startNs, this.cancelled);
      return;
    }
    const wanted = this.request.requestedOutputs;
    const outputs: TensorRef[] = [];
    for (const o of plan.outputs) {
      const t = this.slots[o.slot]!;
      const owned = plan.producer[o.slot] !== -1;
      if (wanted !== null && !wanted.includes(o.name)) {
        if (owned) this.services.arena.free(t);
        continue;
      }
      outputs.push(owned ? { ...t, name: o.name } : this.copy(t, o.name));
    }
    this.done({ outputs, final: true }, this.startNs, false);
  }

  /** An ensemble input passed straight through: the requester frees outputs, so it gets its own copy. */
  private copy(t: TensorRef, name: string): TensorRef {
    const arena = this.services.arena;
    const { offset, gen } = arena.alloc(t.byteSize);
    arena.bytes(offset, t.byteSize).set(arena.bytes(t.offset, t.byteSize));
    return { ...t, name, offset, gen };
  }
}
