/**
 * Every message between the main thread and a Python instance's host thread
 * (`nt:py-<instance>`, python-host-thread.ts), in one place (STYLE.md item
 * 6). The host thread owns one stub process (stub-process.ts) and does the
 * per-execution work for it: framing, /dev/shm reads and writes, release
 * bookkeeping. Messages to and from the stub itself are in ipc-protocol.ts.
 *
 * Two channels:
 *   - the SAB rings (dataplane/ring.ts), for everything on an execution's
 *     path and everything that must stay in order with it (results before
 *     the stub's death, the stop after the last result);
 *   - the Worker's message port (postMessage), for the control traffic the
 *     stub starts on its own: log records, BLS requests and their
 *     responses, custom-metric operations.
 *
 * Pairs and correlation:
 *   ring  main → host `execute` (batchId)   ⇄ host → main `streamed`* (same batchId,
 *                                              non-final responses), then `executed` (same batchId)
 *   ring  main → host `cancel_in_batch` (batchId, index: a request of that batch was
 *                                              cancelled; no reply, the batch answers as usual)
 *   ring  main → host `peers` (no reply: read the reply-ring updates on peersPort)
 *   ring  main → host `stop`                ⇄ host → main `stopped`
 *   ring  (thread start)                    ⇄ host → main `ready` | `init_failed`
 *   ring  host → main `stub_exited` (the stub died on its own; after it, nothing more)
 *   ring  host → main `unready` (what the model's is_ready() says changed; `ready` carries the first)
 *   port  host → main `bls` (id)            ⇄ main → host `bls_response`* (same id; the last has final)
 *   port  host → main `bls_cancel` (same id: the stub cancelled that BLS call; its
 *                                              responses still come, up to the final one)
 *   port  host → main `metric` (with id)    ⇄ main → host `metric_result` (same id); without id, no answer
 *   port  host → main `model_control` (id) ⇄ main → host `model_control_result` (same id)
 *   port  host → main `log`
 *
 * Arena ownership (the rules of dataplane/protocol.ts):
 *   `execute`: inputs lent, read by the host thread (copied into the stub's region).
 *   `streamed`, `executed`: outputs allocated by the host thread; main adopts them.
 *   `executed` after a direct reply: the response went to its frontend thread
 *     (`execute`'s replyTo, ReplyRoutes.deliverAll: the outputs given to that
 *     thread), and main gets it without outputs, `delivered`.
 *   `bls`: the BLS inputs, allocated by the host thread (copied out of the
 *     stub's region), lent to main as a frontend lends a request's inputs:
 *     the host thread frees them after the final `bls_response` (or its
 *     sweep does, should the thread end first; the reply then has nobody).
 *   `bls_response`: outputs given by main to the host thread (Arena.give),
 *     which copies them into the stub's region and frees them.
 */
import type { BackendInstanceArgs, GatewayRequest } from '../backends/backend';
import type { ErrorInfo } from '../core/errors';
import type { ExecuteTimings, InferResponse } from '../core/request';
import type { ArenaHandle } from '../dataplane/arena';
import type { MessagePort } from 'node:worker_threads';
import type { RingHandle } from '../dataplane/ring';
import type { ReplyPeer } from '../dataplane/reply-rings';
import type { ExecuteMessage } from '../dataplane/protocol';
import type { MetricMsg } from './ipc-protocol';
import type { ModelControlCall } from './model-control';
import type { BuiltinModel } from './stub-process';

/** workerData of a host thread. */
export interface PyHostThreadData {
  arena: ArenaHandle;
  toHost: RingHandle;
  toMain: RingHandle;
  args: BackendInstanceArgs;
  /** Its rings to the frontend threads there are now (dataplane/reply-rings.ts) ... */
  peers: ReplyPeer[];
  /** ... and where later changes wait (read on a `peers` ring message). */
  peersPort: MessagePort;
  /** The stub runs this model nodetron ships (stub-process.ts BuiltinModel) on args.modelPath, not a model.py. */
  builtin?: BuiltinModel;
}

// ---- ring, main → host ----
/** `stream`: main takes non-final responses (`streamed`); otherwise the host thread frees them. */
/**
 * Travels as the data plane's `execute` descriptor (dataplane/descriptor-codec.ts),
 * which carries ExecuteMessage's fields and nothing else: a field added here
 * must be added there.
 */
export type PyExecute = ExecuteMessage & { stream: boolean };
export interface PyStop {
  t: 'stop';
}
/**
 * Request `index` of batch `batchId` was cancelled: its `is_cancelled()`
 * answers true from now on. JSON, like stop (the data plane's `cancel`
 * descriptor is the frontends' message, by request key).
 */
export interface PyCancel {
  t: 'cancel_in_batch';
  batchId: number;
  index: number;
}
/** Reply-ring changes wait on the thread's peersPort: read them before the next execute. */
export interface PyPeers {
  t: 'peers';
}
export type MainToPyHost = PyExecute | PyStop | PyCancel | PyPeers;

// ---- ring, host → main ----
/** `unready`: the model's is_ready() said no at start (readiness-checks.ts); absent: ready. */
export interface PyReady {
  t: 'ready';
  pid: number;
  unready?: string;
}
export interface PyInitFailed {
  t: 'init_failed';
  error: ErrorInfo;
}
/** A non-final response of request `index` of the batch (decoupled models). */
export interface PyStreamed {
  t: 'streamed';
  batchId: number;
  index: number;
  response: InferResponse;
}
/** Every request's final response, in the order of `execute`'s requests. */
export interface PyExecuted {
  t: 'executed';
  batchId: number;
  responses: InferResponse[];
  timings: ExecuteTimings;
}
/** The stub ended without being asked to: the batches it had are already answered (failed). */
export interface PyStubExited {
  t: 'stub_exited';
  why: string;
}
export interface PyStopped {
  t: 'stopped';
}
/** The model's is_ready() verdict changed: the reason it is not ready, or none (ready again). */
export interface PyUnready {
  t: 'unready';
  reason?: string;
}
export type PyHostToMain = PyReady | PyInitFailed | PyStreamed | PyExecuted | PyStubExited | PyStopped | PyUnready;

// ---- port, host → main ----
export interface PyLog {
  t: 'log';
  level: 'info' | 'warn' | 'error' | 'verbose';
  verbose?: number;
  source?: string;
  message: string;
}
export interface PyBls {
  t: 'bls';
  id: number;
  request: GatewayRequest;
}
export interface PyMetric {
  t: 'metric';
  op: MetricMsg;
}
/** The stub called `.cancel()` on the response iterator of BLS call `id`. */
export interface PyBlsCancel {
  t: 'bls_cancel';
  id: number;
}
/** pb_utils.load_model, unload_model, is_model_ready: for the server's repository. */
export interface PyModelControl {
  t: 'model_control';
  id: number;
  call: ModelControlCall;
}
export type PyHostPortOut = PyLog | PyBls | PyMetric | PyBlsCancel | PyModelControl;

// ---- port, main → host ----
export interface PyBlsResponse {
  t: 'bls_response';
  id: number;
  response: InferResponse;
}
/** The answer to a `metric` whose operation had an id (it goes on to the stub as its call_result). */
export interface PyMetricResult {
  t: 'metric_result';
  id: number;
  value?: number;
  error?: string;
}
/** The repository's answer: is_model_ready's value, or the error text. */
export interface PyModelControlResult {
  t: 'model_control_result';
  id: number;
  value?: boolean;
  error?: string;
}
export type PyHostPortIn = PyBlsResponse | PyMetricResult | PyModelControlResult;
