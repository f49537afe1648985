/**
 * Every message between the server (host) and a Python stub process, in one
 * place (STYLE.md item 6). The Python side mirrors this in stub/_nt_ipc.py.
 * A tensor is described by its offset and size in one of the two
 * shared-memory regions of the stub:
 *   h2s: written by the host (request inputs, BLS outputs), mapped by the stub;
 *   s2h: written by the stub (response outputs, BLS inputs), read by the host;
 * or, for the small tensors of `execute` and `response` messages (`inline`),
 * in the blob of the message's own frame (ipc-framing.ts): no region block
 * to allocate, copy through a syscall, or release afterwards.
 */
import type { ErrorCode } from '../core/errors';
import type { MetricOp } from '../metrics/custom-metrics';
import type { WireBigInt, WireValue } from './wire-int';

export interface ShmTensor {
  name: string;
  /** Protocol datatype string (FP32, BYTES, ...). */
  datatype: string;
  shape: number[];
  /** Offset and byte size in the region named by the message's direction (in the frame's blob when `inline`). */
  offset: number;
  size: number;
  inline?: true;
  /**
   * Response outputs only: the bytes are in h2s, not s2h: the output is a
   * view of an input of the same batch (an identity), so the stub did not
   * copy it. The block is the host's (released with the batch's inputs,
   * after its last final response); the stub releases nothing.
   */
  region?: 'h2s';
  /**
   * BYTES inputs in shared memory: where the host put the byte offset of each
   * element's length prefix (little-endian u32, `elements` of them, same
   * region), so the stub slices instead of scanning the prefixes in Python.
   */
  starts?: number;
  elements?: number;
}

/** Tensors up to this size travel inline in execute/response frames... */
export const INLINE_TENSOR_MAX_BYTES = 64 * 1024;
/** ...while the frame's blob stays under this; the rest go through shared memory. */
export const INLINE_FRAME_MAX_BYTES = 1024 * 1024;

export interface StubRequest {
  /** Client request id ('' when none). */
  id: string;
  /** int (tagged past 2^53, wire-int.ts), or a string sequence id. */
  correlation_id: number | string | WireBigInt;
  flags: number;
  /** Microseconds, 0 = none. */
  timeout: number;
  /** JSON text of the request's custom parameters ("{}" when none). */
  parameters: string;
  /** What the client asked for, expanded to every config output when it asked for none. */
  requested_outputs: string[];
  inputs: ShmTensor[];
}

export interface WireError {
  code: ErrorCode;
  message: string;
}

// ---- host → stub ----
export interface AutoCompleteRequest {
  t: 'auto_complete';
  config: string;
}
/** `reschedulable`: the model's scheduler takes a request released with RESCHEDULE back (iterative sequence batching). */
export interface InitRequest {
  t: 'init';
  args: Record<string, string>;
  decoupled: boolean;
  reschedulable: boolean;
}
export interface ExecuteRequest {
  t: 'execute';
  batch: number;
  requests: StubRequest[];
}
export interface FinalizeRequest {
  t: 'finalize';
}
/** The host has read these s2h blocks; the stub may reuse them. */
export interface ReleaseS2h {
  t: 'release';
  offsets: number[];
}
/** One response of a BLS call the stub made (tensors in h2s, owned by the stub until it releases them). */
export interface BlsResponse {
  t: 'bls_response';
  id: number;
  final: boolean;
  outputs: ShmTensor[];
  error?: WireError;
  parameters?: string;
}
/** The answer to a synchronous stub call (model control). */
export interface CallResult {
  t: 'call_result';
  id: number;
  value?: unknown;
  error?: string;
}
/** Run the model's is_ready() (only sent when init_done said it has one; one at a time). */
export interface ReadyCheck {
  t: 'ready_check';
  id: number;
}

/**
 * Request `index` of `batch` was cancelled: if the batch has not begun (it
 * waits in the pipe behind the one running), the stub answers the request
 * `skipped` and leaves it out of execute(). A batch that began ignores it
 * (its model asks `is_cancelled`). The stub reads it at once when its
 * reader thread is on (a model that uses is_cancelled, BLS, or is
 * decoupled), else just before the next batch begins.
 */
export interface CancelRequest {
  t: 'cancel';
  batch: number;
  index: number;
}

export type HostToStub =
  AutoCompleteRequest | InitRequest | ExecuteRequest | FinalizeRequest | ReleaseS2h | BlsResponse | CallResult | ReadyCheck | CancelRequest;

// ---- stub → host ----
export interface Alive {
  t: 'alive';
  pid: number;
  python: string;
}
export interface AutoCompleteDone {
  t: 'auto_complete_done';
  config?: string;
  error?: string;
}
/** `is_ready`: the model defines is_ready() (readiness-checks.ts polls it). */
export interface InitDone {
  t: 'init_done';
  error?: string;
  is_ready?: boolean;
}
/**
 * One response for request `index` of `batch` (tensors in s2h). `skipped`:
 * a `cancel` came before the request's batch began: the stub answers this
 * at once and leaves the request out of execute(); the host answers it
 * CANCELLED.
 */
export interface ResponseMsg {
  t: 'response';
  batch: number;
  index: number;
  final: boolean;
  outputs: ShmTensor[];
  error?: WireError;
  /** Integers past 2^53 tagged (wire-int.ts). */
  parameters?: Record<string, WireValue>;
  /**
   * The model released the request with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE:
   * this slot ends (final, no outputs) without answering it; the scheduler
   * runs the request again.
   */
  rescheduled?: true;
  /** Answered without running: cancelled while its batch waited in the stub's pipe. */
  skipped?: true;
}
/**
 * execute() returned (or raised: `error` fails every request of the batch
 * still open). `responses`: those of the list execute() returned, handled
 * before `error`; their inline outputs are in this message's frame blob.
 */
export interface ExecuteDone {
  t: 'execute_done';
  batch: number;
  error?: string;
  responses?: ResponseMsg[];
}
export interface FinalizeDone {
  t: 'finalize_done';
}
/** What is_ready() returned (`ready`), or why it gave no bool (`error`: its exception, or the wrong type). */
export interface ReadyCheckResult {
  t: 'ready_check_result';
  id: number;
  ready?: boolean;
  error?: string;
}
export interface LogMsg {
  t: 'log';
  level: 'INFO' | 'WARNING' | 'ERROR' | 'VERBOSE';
  file: string;
  line: number;
  message: string;
}
/** A BLS request (inputs in s2h; the host releases them once copied). */
export interface BlsRequest {
  t: 'bls';
  id: number;
  model: string;
  version: number;
  decoupled: boolean;
  request: StubRequest;
}
/** The h2s blocks of BLS outputs the stub no longer needs. */
export interface ReleaseH2s {
  t: 'release_h2s';
  offsets: number[];
}
export interface CallMsg {
  t: 'call';
  id: number;
  name: 'load_model' | 'unload_model' | 'is_model_ready';
  args: unknown[];
}
/**
 * `request.is_cancelled()` / `sender.is_cancelled()` of request `index` of
 * `batch`: answered by a call_result whose value is the boolean (Triton's
 * stub asks its parent the same way).
 */
export interface IsCancelledMsg {
  t: 'is_cancelled';
  id: number;
  batch: number;
  index: number;
}
/** `.cancel()` on the response iterator of BLS call `id`: the server cancels that request; its responses still come. */
export interface BlsCancel {
  t: 'bls_cancel';
  id: number;
}

/** A custom-metric operation (pb_utils.MetricFamily/Metric); with `id`, answered by a call_result. */
export type MetricMsg = { t: 'metric'; id?: number } & MetricOp;

export type StubToHost =
  | Alive
  | AutoCompleteDone
  | InitDone
  | ResponseMsg
  | ExecuteDone
  | FinalizeDone
  | ReadyCheckResult
  | LogMsg
  | BlsRequest
  | ReleaseH2s
  | CallMsg
  | MetricMsg
  | IsCancelledMsg
  | BlsCancel;
