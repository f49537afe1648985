/**
 * What every gRPC handler shares: the server's parts it may use (on the gRPC
 * thread: snapshot copy, ring route, arena; on the main thread: the control
 * APIs), Triton's error → status mapping, the restricted-protocol check, and
 * a wrapper that turns a handler's result or thrown error into the unary
 * callback.
 */
import * as grpc from '@grpc/grpc-js';
import type { ServerOptions } from '../../cli-options';
import { GRPC_STATUS, RETRY_AFTER_SECONDS, ServerError, toErrorInfo } from '../../core/errors';
import type { Arena } from '../../dataplane/arena';
import type { RepositoryApiContext } from '../../repository/repository-api';
import type { InferRequest, RefusedRequest, Respond } from '../../core/request';
import type { ServerSnapshot } from '../../request/server-snapshot';
import type { ShmRegistry } from '../shm-registry';

export type RestrictedCategory =
  'health' | 'metadata' | 'inference' | 'shared-memory' | 'model-config' | 'model-repository' | 'statistics' | 'trace' | 'logging';

/**
 * The main thread's control APIs (src/frontend/http/control-api.ts), typed by
 * what gRPC calls; results are the JSON shapes the HTTP endpoints print.
 */
export interface GrpcControl {
  modelStatistics(model?: string, version?: number): object[];
  logSettings(): object;
  updateLogSettings(body: unknown): object;
  traceSettings(model?: string): object;
  updateTraceSettings(model: string | undefined, body: unknown): object;
}

/** What every handler reads, on either thread: the flags (restricted protocol) and a server snapshot. */
export interface GrpcCallContext {
  options: ServerOptions;
  snapshot: () => ServerSnapshot;
}

/**
 * The gRPC thread's context (grpc-thread.ts): health, metadata and inference
 * handlers. `route` sends a request to the main thread's scheduler over the
 * thread's ring (ring-route.ts) and returns how to cancel it (the client
 * cancelled, or its deadline passed); `snapshot` is the copy main posts on change.
 */
export interface GrpcContext extends GrpcCallContext {
  route: (request: InferRequest, respond: Respond) => () => void;
  /** --log-access: how an inference this thread refuses itself is reported (absent: the log is off). */
  access?: (r: RefusedRequest) => void;
  arena: Arena;
  serverName: string;
  serverVersion: string;
  extensions: readonly string[];
  /** True once stop() began: new inferences are refused. */
  stopping(): boolean;
  /** --grpc-header-forward-pattern (core/forward-pattern.ts); absent: no metadata is forwarded. */
  forward?: RegExp;
  /** A line for the server's log at warning level (the gRPC thread posts it to main). */
  warn: (line: string) => void;
}

/** The main thread's context for the control rpcs the gRPC thread forwards (control-answer.ts). */
export interface GrpcControlContext extends GrpcCallContext {
  /** Statistics, log and trace settings; absent = admin-handlers.ts answers. */
  control?: GrpcControl;
  /** The model repository extension; absent = admin-handlers.ts answers. */
  repository?: RepositoryApiContext;
  /** Client system shared memory; absent = no region can be registered. */
  shm?: ShmRegistry;
}

export const SHUTTING_DOWN = 'GRPC server is shutting down and has stopped accepting new requests.';

/**
 * A grpc-js status for any thrown error (protocol.md §2.2). A full server's
 * RESOURCE_EXHAUSTED carries its retry hint as the trailing metadata entry
 * `retry-after` (seconds, as HTTP's header).
 */
export function toStatus(err: unknown): Partial<grpc.StatusObject> {
  const info = toErrorInfo(err);
  const status: Partial<grpc.StatusObject> = { code: GRPC_STATUS[info.code], details: info.message };
  if (info.code === 'RESOURCE_EXHAUSTED') {
    status.metadata = new grpc.Metadata();
    status.metadata.set('retry-after', String(RETRY_AFTER_SECONDS));
  }
  return status;
}

/** Throws UNAVAILABLE when `category` is restricted and the call lacks the metadata key and value. */
export function checkRestricted(ctx: GrpcCallContext, category: RestrictedCategory, metadata: grpc.Metadata): void {
  for (const group of ctx.options.grpcRestrictedProtocol) {
    if (!group.apis.includes(category)) continue;
    const key = `triton-grpc-protocol-${group.key}`;
    const values = metadata.get(key.toLowerCase());
    if (!values.some((v) => String(v) === group.value)) {
      throw new ServerError('UNAVAILABLE', `This protocol is restricted, expecting header '${key}'`);
    }
  }
}

/** A unary handler: `fn` returns the response (or a promise of it) or throws a ServerError. */
export function unary<Req, Res>(
  ctx: GrpcCallContext,
  category: RestrictedCategory,
  fn: (request: Req, call: grpc.ServerUnaryCall<Req, Res>) => Res | Promise<Res>,
): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    try {
      checkRestricted(ctx, category, call.metadata);
      const result = fn(call.request, call);
      if (result instanceof Promise) {
        result.then(
          (r) => callback(null, r),
          (err: unknown) => callback(toStatus(err)),
        );
      } else {
        callback(null, result);
      }
    } catch (err) {
      callback(toStatus(err));
    }
  };
}
