/**
 * Control-plane messages between the main thread and an HTTP thread
 * (postMessage: rare and small). Data-plane messages (infer/response) go over
 * the SharedArrayBuffer rings declared in src/dataplane/protocol.ts.
 */
import type { RefusedRequest } from '../../core/request';
import type { HttpEdgeLimits } from '../../server-options';
import type { ReplyRingNotice } from '../../dataplane/reply-rings';
import type { HostInstanceMessage } from '../../dataplane/instance-hosts';
import type { RestrictedGroup } from '../../cli-values';
import type { ArenaHandle } from '../../dataplane/arena';
import type { RingHandle } from '../../dataplane/ring';
import type { ServerSnapshot } from '../../request/server-snapshot';
import type { Route } from './routes';

export interface HttpThreadData {
  index: number;
  arena: ArenaHandle;
  /** Requests to the main thread. */
  toMain: RingHandle;
  /** Responses from the main thread (this thread's own doorbell). */
  fromMain: RingHandle;
  maxInputSize: number;
  /** Deadlines and caps of the edge (http-server.ts). */
  edge: HttpEdgeLimits;
  /** One Int32 shared by every HTTP thread: the client connections open now (--http-max-connections). */
  connections: SharedArrayBuffer;
  /** --http-max-json-response-size. */
  maxJsonResponseSize: number;
  /** --http-codec-offload-bytes: bodies from this size are decoded/encoded in the codec pool; 0 = never. */
  codecOffloadBytes: number;
  serverName: string;
  serverVersion: string;
  extensions: readonly string[];
  /** --http-restricted-api groups (restricted-api.ts). */
  restrictedApi?: RestrictedGroup[];
  /** --openai-restricted-api groups, checked on --openai-port (http-thread.ts routeOpenAI). */
  openaiRestrictedApi?: RestrictedGroup[];
  /**
   * Test-only fault injection (NODETRON_TEST_FAULTS, read on the main
   * thread): `http-crash` makes `POST /nodetron-test/crash` throw an uncaught
   * exception in this thread, so a test can watch a real thread die.
   */
  faults?: readonly string[];
  /** --log-access: read each inference's client address and report the requests this thread refuses. */
  accessLog?: boolean;
  /** --http-header-forward-pattern: headers matching it become request parameters (request/header-forward.ts). */
  headerForwardPattern?: string;
  /** --http-cors-origin: origins allowed to call the routes from a browser (cors.ts); empty = CORS off. */
  corsOrigins?: readonly string[];
  /** --http-console: where the console's files are served (console-assets.ts); absent = no console. */
  consolePath?: string;
  /** --http-auth-token-file's tokens (bearer-auth.ts); absent = none asked. */
  authTokens?: string[];
  /** The tokens of --openai-port, and the flag that gave them (its refusals name it). */
  openaiAuthTokens?: string[];
  openaiAuthFlag?: string;
  /** --auth-exempt-health. */
  authExemptHealth?: boolean;
}

/** Non-data-plane routes an HTTP thread forwards to the main thread (control-api.ts). */
export type ControlRoute = Extract<
  Route,
  {
    kind:
      | 'model_stats'
      | 'logging'
      | 'trace'
      | 'model_trace'
      | 'repository_index'
      | 'repository_load'
      | 'repository_unload'
      | 'shm'
      | 'nodetron_metrics'
      | 'nodetron_status'
      | 'nodetron_model_log';
  }
>;

/** Request of the control channel; answered by a ControlReply with the same id. */
export interface ControlRequest {
  t: 'control';
  id: number;
  method: string;
  route: ControlRoute;
  /** Request body (POST), '' when none. */
  body: string;
}

export interface ControlReply {
  t: 'control_reply';
  id: number;
  status: number;
  /** JSON text, unless contentType says otherwise. */
  body: string;
  /** Absent: application/json. */
  contentType?: string;
}

export type MainToHttp =
  | { t: 'snapshot'; snapshot: ServerSnapshot }
  /** A ring from an instance thread, for responses sent straight here (dataplane/reply-rings.ts). */
  | ReplyRingNotice
  | ControlReply
  /** Host this model instance on the thread's event loop (hosted-instances.ts). */
  | HostInstanceMessage
  /** Listen on this descriptor of the HTTP port (listen-socket.ts), or of --openai-port's when `openai`: the thread's server owns and closes it. */
  | { t: 'listen'; fd: number; openai?: boolean }
  /**
   * Stop taking requests (the listen socket closes, new requests get 503
   * "Server exiting" and their connection closed), answer the received ones,
   * then close every connection: once they are answered, or after graceMs.
   * Answered by `closed`; a second `close` can only shorten the time.
   */
  | { t: 'close'; graceMs: number };

export type HttpToMain =
  | { t: 'listening'; port: number }
  | { t: 'listen_failed'; message: string }
  /** Every connection is closed; `cut`: requests still unanswered when graceMs ran out. */
  | { t: 'closed'; cut: number }
  /** An uncaught error: the thread closed its sockets and is about to exit (http-frontend.ts restarts it). */
  | { t: 'fatal'; reason: string }
  /** --log-access: an inference request the thread refused itself (metrics/access-log.ts). */
  | { t: 'access'; entry: RefusedRequest }
  /** A line for the server's log at warning level (a streaming client dropped: http-connection.ts). */
  | { t: 'warn'; message: string }
  | ControlRequest;
