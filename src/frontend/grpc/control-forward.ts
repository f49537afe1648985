/**
 * gRPC-thread side of the control channel (grpc-thread-protocol.ts):
 * statistics, repository, shared-memory, trace and log rpcs need the main
 * thread's objects, so the thread forwards each call (rpc name, decoded
 * request, metadata) by postMessage and answers it when the answer with the
 * same id comes back. The handlers themselves (admin-handlers.ts,
 * control-handlers.ts) run on the main thread (control-answer.ts), so their
 * texts and status codes are unchanged. Low volume: structured clone is fine.
 */
import type * as grpc from '@grpc/grpc-js';
import type { ControlAnswer, ControlCall } from './grpc-thread-protocol';

export class ControlForwarder {
  private nextId = 1;
  private readonly waiting = new Map<number, grpc.sendUnaryData<unknown>>();

  constructor(private readonly post: (msg: ControlCall) => void) {}

  /** One forwarding handler per rpc name. */
  handlers(rpcs: readonly string[]): grpc.UntypedServiceImplementation {
    const out: grpc.UntypedServiceImplementation = {};
    for (const rpc of rpcs) {
      const handler: grpc.handleUnaryCall<unknown, unknown> = (call, callback) => this.forward(rpc, call, callback);
      out[rpc] = handler;
    }
    return out;
  }

  onAnswer(msg: ControlAnswer): void {
    const callback = this.waiting.get(msg.id);
    if (callback === undefined) return;
    this.waiting.delete(msg.id);
    if (msg.ok) callback(null, msg.response);
    else callback({ code: msg.code, details: msg.details });
  }

  private forward(rpc: string, call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>): void {
    const id = this.nextId++;
    this.waiting.set(id, callback);
    const metadata = call.metadata.toJSON() as ControlCall['metadata'];
    this.post({ t: 'control_call', id, rpc, request: call.request, metadata });
  }
}
