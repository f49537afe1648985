/**
 * Main-thread side of the gRPC control channel (grpc-thread-protocol.ts):
 * runs the control rpcs the gRPC thread forwards (control-forward.ts) through
 * the same handlers as ever (admin-handlers.ts, then control-handlers.ts
 * where server.ts gave the control APIs), against the forwarded request and
 * metadata, and turns the handler's callback into the answer message.
 */
import * as grpc from '@grpc/grpc-js';
import { GRPC_STATUS, toErrorInfo } from '../../core/errors';
import { adminHandlers } from './admin-handlers';
import { controlHandlers } from './control-handlers';
import type { GrpcControlContext } from './grpc-context';
import type { ControlAnswer, ControlCall } from './grpc-thread-protocol';

export class ControlAnswers {
  private readonly handlers: grpc.UntypedServiceImplementation;

  constructor(ctx: GrpcControlContext) {
    this.handlers = { ...adminHandlers(ctx), ...controlHandlers(ctx) };
  }

  /** The rpcs the gRPC thread must forward here. */
  get rpcs(): string[] {
    return Object.keys(this.handlers);
  }

  answer(m: ControlCall): Promise<ControlAnswer> {
    return new Promise((resolve) => {
      const fail = (code: number, details: string): void => resolve({ t: 'control_answer', id: m.id, ok: false, code, details });
      const handler = Object.hasOwn(this.handlers, m.rpc) ? (this.handlers[m.rpc] as grpc.handleUnaryCall<unknown, unknown>) : undefined;
      if (handler === undefined) return fail(grpc.status.UNIMPLEMENTED, `${m.rpc}: not answered by the main thread`);
      // The handlers read only the request and the metadata of their call.
      const call = { request: m.request, metadata: toMetadata(m.metadata) } as unknown as grpc.ServerUnaryCall<unknown, unknown>;
      try {
        handler(call, (err, value) => {
          if (err) fail(err.code ?? grpc.status.UNKNOWN, err.details ?? '');
          else resolve({ t: 'control_answer', id: m.id, ok: true, response: value ?? {} });
        });
      } catch (err) {
        const info = toErrorInfo(err);
        fail(GRPC_STATUS[info.code], info.message);
      }
    });
  }
}

function toMetadata(json: ControlCall['metadata']): grpc.Metadata {
  const md = new grpc.Metadata();
  for (const [key, values] of Object.entries(json)) {
    for (const v of values) md.add(key, typeof v === 'string' ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength));
  }
  return md;
}
