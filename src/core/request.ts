/**
 * What flows through the data path once a frontend has decoded and validated
 * a request: tensors are references into the shared tensor arena
 * (src/dataplane/arena.ts), never copies. These objects are small and cross
 * threads as ring messages (src/dataplane/protocol.ts).
 */
import type { DataType } from './datatypes';
import { requestIdPrefix, type ErrorInfo } from './errors';

/** A tensor whose bytes live in the shared tensor arena. */
export interface TensorRef {
  name: string;
  datatype: DataType;
  /** Full shape, including the batch dimension for batching models. */
  shape: number[];
  /** Byte offset of the data in the arena (as returned by Arena.alloc). */
  offset: number;
  /**
   * Generation of the arena allocation (as returned by Arena.alloc with the
   * offset): free and adopt refuse a handle whose generation is not the
   * block's, so a stale TensorRef can never free someone else's block.
   */
  gen: number;
  /** Bytes of data; BYTES tensors hold Triton's 4-byte-length-prefixed elements. */
  byteSize: number;
}

/**
 * A request or response parameter. Integers are numbers while they are safe
 * (|v| < 2^53); a larger 64-bit integer (a JSON literal or a gRPC int64 past
 * 2^53, such as a numeric sequence_id) is a bigint, so it stays exact.
 */
export type ParamValue = string | number | boolean | bigint;

/** A request's correlation id (`sequence_id`): a uint64 (a bigint past 2^53) or a string. */
export type CorrelationId = number | bigint | string;

/** A parameter value as JSON text: bigints as their integer literal, which JSON.stringify refuses. */
export function paramJson(v: ParamValue): string {
  return typeof v === 'bigint' ? v.toString() : JSON.stringify(v);
}

/** `{"k":v,...}` of flat parameters, bigints exact. */
export function paramsJson(params: Record<string, ParamValue>): string {
  let s = '{';
  let first = true;
  for (const k of Object.keys(params)) {
    s += `${first ? '' : ','}${JSON.stringify(k)}:${paramJson(params[k]!)}`;
    first = false;
  }
  return `${s}}`;
}

export interface InferRequest {
  /** Client request id; '' when the request had none. */
  id: string;
  model: string;
  /**
   * The version that runs it (never -1). For a `latest` request this is the
   * frontend's pick from its snapshot until the main thread resolves it again
   * at enqueue and writes its choice here (repository/version-resolution.ts).
   */
  version: number;
  /** The client named no version: the newest READY version at enqueue time runs it (Triton's -1). */
  latest: boolean;
  /** Leading batch dimension; 1 for models with max_batch_size 0. */
  batchSize: number;
  inputs: TensorRef[];
  /** Output names the client asked for, in request order; null = every output of the config. */
  requestedOutputs: string[] | null;
  /** Custom and reserved request parameters (sequence_id, priority, timeout, ...). */
  parameters: Record<string, ParamValue>;
  /** Wall-clock ns (see clock.ts) when the frontend received the request. */
  arrivalNs: number;
  /** The client's address (`ip:port`), set by the frontend only when --log-access is on. */
  client?: string;
  /**
   * Set on main when the frontend cancels the request because it has the
   * whole answer (an OpenAI `stop` sequence reached): the CANCELLED final
   * that follows is counted a success, as Triton counts a stop the model
   * itself reached (dataplane/frontend-requests.ts, execution-pool.ts).
   */
  answered?: boolean;
}

/**
 * What a frontend thread reports, for --log-access, of an inference request
 * it refused itself before any scheduler saw it (bad body, unknown model or
 * version, validation): the access log's line with no times.
 */
export interface RefusedRequest {
  protocol: 'HTTP' | 'GRPC';
  client: string;
  model: string;
  /** As the client asked ('' for none). */
  version: string;
  /** The HTTP status, or the gRPC status number. */
  status: number;
  inBytes: number;
  id: string;
}

export interface InferResponse {
  /** Outputs in the arena, in the order the backend produced them. The receiver frees them. */
  outputs: TensorRef[];
  parameters?: Record<string, ParamValue>;
  error?: ErrorInfo;
  /** False only for non-final responses of decoupled models. */
  final: boolean;
  /**
   * The instance thread already sent this response, outputs and all, to the
   * frontend thread that owns the client's connection (the requester's
   * Respond.replyTo); what reaches the requester here carries no outputs,
   * only `final` and `error`, for its bookkeeping and the statistics.
   */
  delivered?: true;
  /**
   * The backend released the request with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE
   * (a Python model's `request.set_release_flags`): this final response of
   * its execution is no answer and goes to no client; the scheduler runs the
   * request again (scheduler/execution-pool.ts `reschedule`).
   */
  rescheduled?: true;
  /**
   * The instance answered this request without running it: it was cancelled
   * before its execution began (while it waited for the rate limiter's
   * resources, or in a Python stub's pipe). It counts as a request cancelled
   * in the queue (failure CANCELED) and not in its batch's execution.
   */
  skipped?: true;
}

/**
 * The answer to a request cancelled while it waited (its client went away
 * or cancelled it, or its BLS caller did): Triton answers it with the
 * CANCELLED status; the text says which request and that it never ran.
 */
export function cancelledMessage(request: InferRequest, when = 'before it ran'): string {
  return (
    `${requestIdPrefix(request.id)}request for model '${request.model}' version ${request.version} was cancelled ${when} ` +
    '(its client cancelled it or went away)'
  );
}

/** The INTERNAL text of a request whose batch failed on `instance` (the execution pool's, and an inline run's on a frontend thread). */
export function executionFailedMessage(request: InferRequest, instance: string, why: string): string {
  return `${requestIdPrefix(request.id)}instance '${instance}' of model '${request.model}' version ${request.version} failed to execute the batch: ${why}`;
}

/** A request cancelled before its execution began, answered by the instance that held it. */
export function skippedResponse(request: InferRequest): InferResponse {
  return { outputs: [], error: { code: 'CANCELLED', message: cancelledMessage(request) }, final: true, skipped: true };
}

/**
 * Where a frontend thread wants a request's responses: its reply port (one
 * per frontend thread, dataplane/reply-rings.ts) and its key for the request.
 */
export interface ReplyAddress {
  port: number;
  key: number;
}

/**
 * How a requester receives its responses. A frontend thread's Respond carries
 * `replyTo`: an offer that an instance thread may send the response there
 * itself, off the main thread (DESIGN.md "Hand-offs"). Whoever wraps a Respond
 * (response cache, ensemble, BLS) makes a new function without it, and so
 * turns the offer down: it sees every response with its outputs.
 */
export type Respond = ((response: InferResponse) => void) & { replyTo?: ReplyAddress };

/** When an execution passed each stage, stamped by the instance (clock.ts). */
export interface ExecuteTimings {
  /** Wall-clock ns (clock.ts): execution started in the instance. */
  computeStartNs: number;
  /** Inputs gathered, backend about to run. */
  computeInputEndNs: number;
  /** Backend run finished. */
  computeInferEndNs: number;
  /** Outputs written to the arena. */
  computeEndNs: number;
}

export interface ExecuteResult {
  /** One response per request, in the order of the requests. */
  responses: InferResponse[];
  timings: ExecuteTimings;
}

/**
 * Receives the non-final responses of request `index` of a batch while it
 * runs (decoupled models); final responses come back in the ExecuteResult.
 */
export type StreamResponse = (index: number, response: InferResponse) => void;
