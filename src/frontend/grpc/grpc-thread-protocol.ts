/**
 * Control-plane messages between the main thread and the gRPC thread
 * (postMessage: rare and small), in Request/Response pairs. Data-plane
 * messages (`infer` / `response`) go over the SharedArrayBuffer rings
 * declared in src/dataplane/protocol.ts, with the same arena ownership rules
 * as an HTTP thread's.
 *
 * Pairs and correlation:
 *   main → grpc  `listen`                ⇄  grpc → main  `listening` | `listen_failed`
 *   grpc → main  `control_call` (id)     ⇄  main → grpc  `control_answer` (same id)
 *   main → grpc  `stop` (timeoutMs)      ⇄  grpc → main  `stopped` (cut)
 *   main → grpc  `snapshot`                 (on every change; no answer)
 *   grpc → main  `fatal`                    (an uncaught error; the thread exits next)
 */
import type { RefusedRequest } from '../../core/request';
import type { ReplyRingNotice } from '../../dataplane/reply-rings';
import type { ServerOptions } from '../../cli-options';
import type { ArenaHandle } from '../../dataplane/arena';
import type { RingHandle } from '../../dataplane/ring';
import type { ServerSnapshot } from '../../request/server-snapshot';

export interface GrpcThreadData {
  arena: ArenaHandle;
  /** `infer` messages to the main thread. */
  toMain: RingHandle;
  /** `response` messages from the main thread (this thread's own doorbell). */
  fromMain: RingHandle;
  options: ServerOptions;
  serverName: string;
  serverVersion: string;
  extensions: readonly string[];
  /** The rpcs the thread forwards to the main thread (control-answer.ts answers them). */
  forwarded: readonly string[];
  /**
   * Test-only fault injection (NODETRON_TEST_FAULTS, read on the main
   * thread): `grpc-crash` makes a ServerLive call carrying the metadata key
   * `nodetron-test-crash` throw an uncaught exception in this thread, so a
   * test can watch a real thread die.
   */
  faults?: readonly string[];
  /** --log-access: read each inference's client address and report the requests this thread refuses. */
  accessLog?: boolean;
}

/** A unary control rpc, as grpc-js decoded it on the gRPC thread; answered by a ControlAnswer with the same id. */
export interface ControlCall {
  t: 'control_call';
  id: number;
  /** The rpc's name in GRPCInferenceService, e.g. `ModelStatistics`. */
  rpc: string;
  /** The request message (proto-loader's object; `bytes` arrive as Uint8Array). */
  request: unknown;
  /** The call's metadata (grpc.Metadata.toJSON()): every value of every key. */
  metadata: Record<string, (string | Uint8Array)[]>;
}

export type ControlAnswer =
  { t: 'control_answer'; id: number; ok: true; response: unknown } | { t: 'control_answer'; id: number; ok: false; code: number; details: string };

export type MainToGrpc =
  | { t: 'snapshot'; snapshot: ServerSnapshot }
  /** A ring from an instance thread, for responses sent straight here (dataplane/reply-rings.ts). */
  | ReplyRingNotice
  | { t: 'listen'; address: string; port: number }
  | ControlAnswer
  /**
   * Graceful stop (refuse new inferences, end idle streams, wait for calls
   * in flight), forced after timeoutMs; a second `stop` can only bring the
   * force forward.
   */
  | { t: 'stop'; timeoutMs: number };

export type GrpcToMain =
  | { t: 'listening'; port: number }
  | { t: 'listen_failed'; message: string }
  | ControlCall
  /** The server is shut down; `cut`: inferences still unanswered when the stop had to be forced. */
  | { t: 'stopped'; cut: number }
  /** An uncaught error: the thread closed its server and is about to exit (grpc-frontend.ts restarts it). */
  | { t: 'fatal'; reason: string }
  /** --log-access: an inference request the thread refused itself (metrics/access-log.ts). */
  | { t: 'access'; entry: RefusedRequest }
  /** A line for the server's log at warning level (connections refused past --grpc-max-connections). */
  | { t: 'warn'; message: string };
