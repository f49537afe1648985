/**
 * Every message that crosses a thread boundary on the data plane, in one
 * place (STYLE.md item 6). They travel as JSON over the SAB rings
 * (src/dataplane/ring.ts); tensor bytes never do: TensorRefs point into the
 * shared arena (src/dataplane/arena.ts).
 *
 * Pairs and correlation:
 *   frontend → main  `infer`   (key)     ⇄  main → frontend  `response` (same key;
 *                                           several for decoupled models, the last has response.final)
 *   main → instance  `execute` (batchId) ⇄  instance → main  `executed` | `execute_failed` (same batchId)
 *   main → instance  `stop`              ⇄  instance → main  `stopped`
 *   (thread start)                       ⇄  instance → main  `ready` | `init_failed`
 *
 * Arena ownership: the frontend allocates request inputs; the instance
 * allocates outputs; the frontend frees both once it has encoded the reply.
 */
import type { ErrorInfo } from '../core/errors';
import type { ExecuteTimings, InferRequest, InferResponse } from '../core/request';

// ---- frontend thread (uWS) ⇄ main thread (scheduler) ----

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

export type FrontendToMain = InferMessage;
export type MainToFrontend = ResponseMessage;

// ---- main thread (scheduler) ⇄ instance worker thread ----

export interface ExecuteMessage {
  t: 'execute';
  /** Unique per instance while in flight; echoed in `executed` / `execute_failed`. */
  batchId: number;
  requests: InferRequest[];
}

export interface StopMessage {
  t: 'stop';
}

export interface ReadyMessage {
  t: 'ready';
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

export type MainToInstance = ExecuteMessage | StopMessage;
export type InstanceToMain =
  | ReadyMessage
  | InitFailedMessage
  | ExecutedMessage
  | ExecuteFailedMessage
  | StoppedMessage;
