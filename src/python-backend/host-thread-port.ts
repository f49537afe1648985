/**
 * The host thread's side of its message port to the main thread
 * (host-thread-protocol.ts): the StubHostServices that forward there. Log
 * records, BLS requests, custom-metric operations and model-control calls
 * go to main; BLS responses and the answers come back and reach whoever
 * waits for them.
 */
import type { MessagePort } from 'node:worker_threads';
import type { CancelInfer, GatewayRequest, InferGateway } from '../backends/backend';
import type { Respond } from '../core/request';
import type { Arena } from '../dataplane/arena';
import type { HostLog, MetricReply, StubHostServices } from './host-services';
import type { PyHostPortIn, PyHostPortOut, PyLog } from './host-thread-protocol';
import type { MetricMsg } from './ipc-protocol';
import type { ModelControlCall } from './model-control';

class PortLog implements HostLog {
  constructor(
    private readonly port: MessagePort,
    private readonly source: string | undefined,
  ) {}

  info(message: string): void {
    this.post('info', message);
  }

  warn(message: string): void {
    this.post('warn', message);
  }

  error(message: string): void {
    this.post('error', message);
  }

  verbose(level: number, message: string): void {
    this.post('verbose', message, level);
  }

  child(bindings: { source: string }): HostLog {
    return new PortLog(this.port, bindings.source);
  }

  private post(level: PyLog['level'], message: string, verbose?: number): void {
    const m: PyLog = { t: 'log', level, message };
    if (verbose !== undefined) m.verbose = verbose;
    if (this.source !== undefined) m.source = this.source;
    this.port.postMessage(m satisfies PyHostPortOut);
  }
}

/** The services of a stub whose host runs in this thread, and the handler of what main sends back. */
export class HostThreadPort {
  readonly services: StubHostServices;
  private readonly blsWaiting = new Map<number, Respond>();
  private readonly metricWaiting = new Map<number, MetricReply>();
  private readonly controlWaiting = new Map<number, { resolve: (v: boolean | undefined) => void; reject: (e: Error) => void }>();
  private nextBls = 1;
  private nextControl = 1;

  constructor(
    private readonly port: MessagePort,
    arena: Arena,
  ) {
    const gateway: InferGateway = { infer: (request, respond) => this.bls(request, respond) };
    this.services = {
      arena,
      log: new PortLog(port, undefined),
      gateway,
      metric: (op, reply) => this.metric(op, reply),
      modelControl: (call) => this.modelControl(call),
    };
    port.on('message', (m: PyHostPortIn) => this.onMessage(m));
  }

  private bls(request: GatewayRequest, respond: Respond): CancelInfer {
    const id = this.nextBls++;
    this.blsWaiting.set(id, respond);
    this.port.postMessage({ t: 'bls', id, request } satisfies PyHostPortOut);
    return () => {
      if (this.blsWaiting.has(id)) this.port.postMessage({ t: 'bls_cancel', id } satisfies PyHostPortOut);
    };
  }

  private metric(op: MetricMsg, reply: MetricReply | undefined): void {
    if (reply !== undefined && op.id !== undefined) this.metricWaiting.set(op.id, reply);
    this.port.postMessage({ t: 'metric', op } satisfies PyHostPortOut);
  }

  private modelControl(call: ModelControlCall): Promise<boolean | undefined> {
    const id = this.nextControl++;
    return new Promise((resolve, reject) => {
      this.controlWaiting.set(id, { resolve, reject });
      this.port.postMessage({ t: 'model_control', id, call } satisfies PyHostPortOut);
    });
  }

  private onMessage(m: PyHostPortIn): void {
    switch (m.t) {
      case 'bls_response': {
        const respond = this.blsWaiting.get(m.id);
        if (respond === undefined) {
          for (const o of m.response.outputs) this.services.arena.free(o);
          return;
        }
        if (m.response.final) this.blsWaiting.delete(m.id);
        respond(m.response);
        return;
      }
      case 'metric_result': {
        const reply = this.metricWaiting.get(m.id);
        this.metricWaiting.delete(m.id);
        reply?.(m.value, m.error);
        return;
      }
      case 'model_control_result': {
        const waiting = this.controlWaiting.get(m.id);
        this.controlWaiting.delete(m.id);
        if (m.error !== undefined) waiting?.reject(new Error(m.error));
        else waiting?.resolve(m.value);
        return;
      }
      default:
        return;
    }
  }
}
