/**
 * How the execution pool reports a request to the statistics hooks: each
 * response of a streaming or decoupled request (`responseDone`: its index,
 * kind, the time since the previous one and since admission), and each
 * request's final answer (`requestDone`: its timestamps and why it failed).
 * The stats object is reused between calls (scheduler-hooks.ts); a hook
 * that throws is reported and costs no request its answer.
 */
import { nowNs } from '../core/clock';
import type { InferResponse } from '../core/request';
import type { QueuedRequest } from './queued-request';
import type { RequestDoneStats, SchedulerHooks } from './scheduler-hooks';

export class RequestAccounting {
  private readonly stats: RequestDoneStats = {
    success: false,
    queueStartNs: 0,
    computeStartNs: 0,
    computeInputEndNs: 0,
    computeInferEndNs: 0,
    computeEndNs: 0,
    endNs: 0,
  };

  constructor(private readonly hooks: SchedulerHooks | undefined) {}

  responseDone(q: QueuedRequest, response: InferResponse): void {
    const hook = this.hooks?.responseDone;
    const index = q.responses++;
    if (hook === undefined) return;
    const now = nowNs();
    const since = q.lastResponseNs === 0 ? 0 : now - q.lastResponseNs;
    q.lastResponseNs = now;
    const kind = response.error !== undefined ? (response.error.code === 'CANCELLED' ? 'cancel' : 'fail') : response.outputs.length === 0 ? 'empty' : 'success';
    try {
      hook.call(this.hooks, q.request, index, kind, since, now - q.queueStartNs);
    } catch (err) {
      schedulerWarning('responseDone hook', err);
    }
  }

  requestDone(q: QueuedRequest, success: boolean, endNs: number): void {
    const hook = this.hooks?.requestDone;
    if (hook === undefined) return;
    const s = this.stats;
    const t = q.timings;
    s.success = success;
    s.queueStartNs = q.queueStartNs;
    s.computeStartNs = t === null ? 0 : t.computeStartNs;
    s.computeInputEndNs = t === null ? 0 : t.computeInputEndNs;
    s.computeInferEndNs = t === null ? 0 : t.computeInferEndNs;
    s.computeEndNs = t === null ? 0 : t.computeEndNs;
    s.endNs = endNs;
    s.failure = q.failure;
    try {
      hook.call(this.hooks, q.request, s);
    } catch (err) {
      schedulerWarning('requestDone hook', err);
    }
  }
}

/** A hook or callback of the scheduler threw: say where, keep serving. */
export function schedulerWarning(where: string, err: unknown): void {
  process.emitWarning(`scheduler: ${where} threw: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
}
