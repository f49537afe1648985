/**
 * --log-access (nodetron's own): one INFO line per inference request a client
 * sent that reached the main thread, once its final response is out:
 *
 *   access] "HTTP client=127.0.0.1:50412 model=simple version=1 status=200 in_bytes=128 out_bytes=128 queue_us=12 compute_us=85 total_us=310 id=\"\""
 *
 * It wraps the route the frontends enter (protocol known there) and the
 * scheduler hooks (queue and compute times, the same stamps the statistics
 * use), so no frontend, thread message or scheduler changes. The scheduler
 * calls requestDone right after the final response, synchronously; a request
 * refused before any scheduler (no READY version) gets its line from a
 * microtask, with `-` for the times. Status is the HTTP status (HTTP) or the
 * gRPC status number (GRPC) the error code maps to. The client address
 * travels in the request (InferRequest.client, set by the frontend threads
 * only while this log is on). A request a frontend thread refused itself
 * (bad JSON or shape, a model or version its snapshot lacks) is reported by
 * that thread (RefusedRequest, postMessage) and logged by `refused`, with `-`
 * for the times.
 */
import { GRPC_STATUS, HTTP_STATUS } from '../core/errors';
import type { ErrorInfo } from '../core/errors';
import type { InferRequest, RefusedRequest, Respond, TensorRef } from '../core/request';
import type { Logger } from '../logging/logger';
import type { RequestDoneStats, SchedulerHooks } from '../scheduler/scheduler-hooks';
import type { VersionObserver } from './version-observer';

export type AccessProtocol = 'HTTP' | 'GRPC';
export type Route = (request: InferRequest, respond: Respond) => void;

interface Pending {
  protocol: AccessProtocol;
  inBytes: number;
  status: number;
  outBytes: number;
  answered: boolean;
}

const bytes = (ts: readonly TensorRef[]): number => ts.reduce((n, t) => n + t.byteSize, 0);

/** The status a client sees for an error code (0/200 for success). */
export function accessStatus(protocol: AccessProtocol, error: ErrorInfo | undefined): number {
  if (protocol === 'HTTP') return error === undefined ? 200 : HTTP_STATUS[error.code];
  return error === undefined ? 0 : GRPC_STATUS[error.code];
}

export interface AccessTimes {
  queueUs: number;
  computeUs: number;
  totalUs: number;
}

/** The line's text (pure; table-tested). */
export function accessLine(
  protocol: AccessProtocol,
  req: Pick<InferRequest, 'model' | 'id' | 'client'> & { version: number | string },
  status: number,
  inBytes: number,
  outBytes: number,
  times: AccessTimes | undefined,
): string {
  const us = (v: number | undefined): string => (v === undefined ? '-' : String(Math.round(v)));
  return (
    `${protocol} client=${req.client === undefined || req.client === '' ? '-' : req.client} model=${req.model} ` +
    `version=${req.version === '' ? '-' : req.version} status=${status} in_bytes=${inBytes} ` +
    `out_bytes=${outBytes} queue_us=${us(times?.queueUs)} compute_us=${us(times?.computeUs)} ` +
    `total_us=${us(times?.totalUs)} id=${JSON.stringify(req.id)}`
  );
}

export class AccessLog {
  private readonly pending = new WeakMap<InferRequest, Pending>();
  private readonly log: Logger;
  private readonly inners = new WeakMap<SchedulerHooks, SchedulerHooks>();

  constructor(log: Logger) {
    this.log = log.child({ source: 'access', site: false });
  }

  /** The route a frontend enters, logging each request it sends. */
  route(protocol: AccessProtocol, route: Route): Route {
    return (request, respond) => {
      const p: Pending = { protocol, inBytes: bytes(request.inputs), status: 0, outBytes: 0, answered: false };
      this.pending.set(request, p);
      route(request, (response) => {
        if (response.final) {
          p.status = accessStatus(protocol, response.error);
          p.outBytes = bytes(response.outputs);
          p.answered = true;
          queueMicrotask(() => this.emit(request, undefined)); // no scheduler saw it
        }
        respond(response);
      });
    };
  }

  /** `inner` (the statistics), with each version's requestDone also ending that request's access line. */
  observer(inner: VersionObserver): VersionObserver {
    return {
      loading: (model, version, decoupled) => {
        const hooks = inner.loading(model, version, decoupled);
        const wrapped: SchedulerHooks = {
          requestDone: (req, s) => {
            hooks.requestDone?.(req, s);
            this.emit(req, s);
          },
        };
        if (hooks.executionDone) wrapped.executionDone = hooks.executionDone.bind(hooks);
        if (hooks.cacheDone) wrapped.cacheDone = hooks.cacheDone.bind(hooks);
        if (hooks.responseDone) wrapped.responseDone = hooks.responseDone.bind(hooks);
        this.inners.set(wrapped, hooks);
        return wrapped;
      },
      loaded: (model, version, hooks, loadSecs, inflight) => inner.loaded(model, version, this.inners.get(hooks) ?? hooks, loadSecs, inflight),
      gone: (model, version) => inner.gone(model, version),
    };
  }

  /** A request a frontend thread refused before routing it: its line, without times. */
  refused(r: RefusedRequest): void {
    this.log.info(accessLine(r.protocol, r, r.status, r.inBytes, 0, undefined));
  }

  private emit(req: InferRequest, s: RequestDoneStats | undefined): void {
    const p = this.pending.get(req);
    if (p === undefined || !p.answered) return;
    this.pending.delete(req);
    const ran = s !== undefined && s.computeStartNs > 0;
    const times =
      s === undefined
        ? undefined
        : {
            queueUs: ((ran ? s.computeStartNs : s.endNs) - s.queueStartNs) / 1000,
            computeUs: ran ? (s.computeEndNs - s.computeStartNs) / 1000 : 0,
            totalUs: (s.endNs - req.arrivalNs) / 1000,
          };
    this.log.info(accessLine(p.protocol, req, p.status, p.inBytes, p.outBytes, times));
  }
}
