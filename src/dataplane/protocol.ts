/**
 * Every message that crosses a thread boundary on the data plane, in one
 * place (STYLE.md item 6). They travel over the SAB rings
 * (src/dataplane/ring.ts): `infer`, `execute`, `executed` and `response` as
 * fixed-layout binary descriptors (descriptor-codec.ts), and `cancel`
 * too (it names a request by its key); the rest as JSON;
 * tensor bytes never do: TensorRefs point into the shared arena
 * (src/dataplane/arena.ts).
 *
 * Pairs and correlation:
 *   frontend → main  `infer`   (key)     ⇄  main → frontend  `response` (same key;
 *                                           several for decoupled models, the last has response.final)
 *   frontend → main  `cancel`  (same key: the client went away, or cancelled;
 *                                           no reply of its own: the request still ends with its
 *                                           final `response`, after which the frontend frees its blocks)
 *   main → instance  `execute` (batchId) ⇄  instance → main  `executed` | `execute_failed` (same batchId)
 *                                        and, for each request with a replyTo,
 *                                           instance → frontend `response` (the requester's key),
 *                                           before `executed`, on the pair's ring (reply-rings.ts)
 *   main → instance  `peers`             (no reply: read the reply-ring updates on the MessagePort)
 *   main → instance  `stop`              ⇄  instance → main  `stopped`
 *   (thread start)                       ⇄  instance → main  `ready` | `init_failed`
 *                                           | `declined` (a hosted instance whose probe run was too long)
 *   instance → main  `inline`            (no reply: a hosted instance ran one request on its
 *                                           frontend thread; main counts it in the statistics)
 *
 * Arena ownership: every allocated block names the thread that owns it (the
 * one that allocated it, until it changes hands) and a generation that the
 * TensorRef carries (src/dataplane/arena.ts). When a thread ends, the main
 * thread calls Arena.threadDied(threadId), which frees every block that
 * thread still owned. So a block must be owned, at every moment, by a
 * thread that will either free it or die (and have it swept), and moves by
 * one compareExchange of its owner word, on the side of the hop that cannot
 * die first. The main thread never dies alone (the process goes with it):
 *   - From a worker thread to main: main adopts the blocks on receipt
 *     (Arena.adopt). An adopt that fails means the sender died and its sweep
 *     freed them: that response becomes an INTERNAL error ("instance ... died
 *     while its outputs were in flight"). Adopting and sweeping contend for
 *     the same word, so exactly one of them gets each block.
 *   - From main to a worker thread: main gives the blocks to the receiver
 *     before sending (Arena.give). If the receiver dies before it frees them,
 *     its sweep does. give refuses a receiver already reported dead; main
 *     frees the blocks then.
 * Per message:
 *   `infer` (frontend → main): request inputs, allocated by the frontend
 *     thread, stay its own; the scheduler and the instance only read them,
 *     and the frontend frees them after the final `response`. Should the
 *     frontend thread die, its sweep frees them (its client is gone; an
 *     instance still reading them computes a reply nobody gets).
 *   `execute` (main → instance): inputs are lent, never owned: the instance
 *     reads them and frees nothing of the request's.
 *   `executed` (instance → main): outputs, allocated by the instance thread;
 *     main adopts them (worker-instance.ts), so an instance that dies after
 *     sending does not take them with it, and one that dies before has them
 *     swept.
 *   `response` (main → frontend): outputs, given by main to the frontend
 *     thread (http-frontend.ts), which frees them after encoding.
 *   `response` (instance → frontend, the direct path): outputs, given by the
 *     instance thread to the frontend thread before sending (reply-routes.ts;
 *     Arena.give re-checks the receiver after the swap, since main may be
 *     reporting it dead at that moment). `executed` then carries the
 *     response without outputs, marked `delivered`.
 * Blocks main allocates for itself (ensemble copies, the response cache's
 * hits, sequence state and controls) are main's until given as above. The
 * Python host threads follow the same rules; their messages are in
 * python-backend/host-thread-protocol.ts.
 */
import type { ErrorInfo } from '../core/errors';
import type { ExecuteTimings, InferRequest, InferResponse, ReplyAddress } from '../core/request';

// ---- frontend thread (HTTP, gRPC) ⇄ main thread (scheduler) ----

export interface InferMessage {
  t: 'infer';
  /** Unique per frontend thread while the request is in flight; echoed in every `response`. */
  key: number;
  request: InferRequest;
}

export interface ResponseMessage {
  t: 'response';
  key: number;
  /** The version that ran the request: the main thread's choice at enqueue (differs from the request's for a `latest` request across a version swap). */
  version: number;
  response: InferResponse;
}

/**
 * The client of request `key` went away (HTTP) or cancelled it (a gRPC
 * cancel or deadline): main cancels it where it is (Scheduler.cancel). The
 * frontend keeps the request's blocks until its final `response`, as always:
 * an instance may still be reading the inputs.
 */
export interface CancelMessage {
  t: 'cancel';
  key: number;
  /** The frontend has the whole answer (a stop sequence reached): the request ends as a success. */
  answered?: boolean;
}

export type FrontendToMain = InferMessage | CancelMessage;
export type MainToFrontend = ResponseMessage;

// ---- main thread (scheduler) ⇄ instance worker thread ----

export interface ExecuteMessage {
  t: 'execute';
  /** Unique per instance while in flight; echoed in `executed` / `execute_failed`. */
  batchId: number;
  requests: InferRequest[];
  /**
   * Per request, where its frontend thread takes the response directly
   * (Respond.replyTo), or null: through main. Absent: all through main.
   */
  replyTo?: (ReplyAddress | null)[];
  /** The host streams non-final responses back as they come (Python host threads: python-backend/host-thread-protocol.ts). */
  stream?: boolean;
}

/** The reply-ring table changed: apply what main posted on the instance's MessagePort (reply-rings.ts). */
export interface PeersMessage {
  t: 'peers';
}

export interface StopMessage {
  t: 'stop';
}

/**
 * Request `index` of batch `batchId`, sent and not yet answered, was
 * cancelled: if the batch has not started, that request is answered
 * CANCELLED without running (InferResponse.skipped), as Triton checks
 * cancellation again just before it hands a batch to the backend.
 */
export interface CancelInBatchMessage {
  t: 'cancel_in_batch';
  batchId: number;
  index: number;
}

export interface ReadyMessage {
  t: 'ready';
  /** A hosted instance's probe run, µs (hosted-instance.ts logs where it runs). */
  probeUs?: number;
}

export interface InitFailedMessage {
  t: 'init_failed';
  error: ErrorInfo;
}

export interface ExecutedMessage {
  t: 'executed';
  batchId: number;
  /** One per request, in the order of the `execute` message's requests. */
  responses: InferResponse[];
  timings: ExecuteTimings;
}

export interface ExecuteFailedMessage {
  t: 'execute_failed';
  batchId: number;
  error: ErrorInfo;
  timings?: ExecuteTimings;
}

export interface StoppedMessage {
  t: 'stopped';
}

/**
 * A hosted instance (instances/hosted-instance.ts) will not run on its
 * frontend thread: its probe run took longer than --inline-execution-max-us.
 * The backend is finalized there; main starts the instance on a thread of its own.
 */
export interface DeclinedMessage {
  t: 'declined';
  /** The probe's run, µs (the shortest of its runs). */
  probeUs: number;
}

/**
 * One request a hosted instance ran inline on its frontend thread (never
 * queued on main): what the statistics hooks need of it (request-accounting.ts).
 * The frontend answered it already.
 */
export interface InlineMessage {
  t: 'inline';
  id: string;
  batchSize: number;
  /** Its arrival on the frontend thread, which stands for its admission (queue time ~0). */
  queueStartNs: number;
  endNs: number;
  /** False: the backend failed it (the response was an error). */
  ok: boolean;
  timings: ExecuteTimings;
}

export type MainToInstance = ExecuteMessage | PeersMessage | StopMessage | CancelInBatchMessage;
export type InstanceToMain = ReadyMessage | InitFailedMessage | ExecutedMessage | ExecuteFailedMessage | StoppedMessage | DeclinedMessage | InlineMessage;
