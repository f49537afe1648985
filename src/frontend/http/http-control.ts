/**
 * Control-plane messages between the main thread and an HTTP thread
 * (postMessage: rare and small). Data-plane messages (infer/response) go over
 * the SharedArrayBuffer rings declared in src/instances/protocol.ts.
 */
import type { ArenaHandle } from '../../instances/arena';
import type { RingHandle } from '../../instances/ring';
import type { ServerSnapshot } from '../server-snapshot';

export interface HttpThreadData {
  index: number;
  arena: ArenaHandle;
  /** Requests to the main thread. */
  toMain: RingHandle;
  /** Responses from the main thread (this thread's own doorbell). */
  fromMain: RingHandle;
  maxInputSize: number;
  serverName: string;
  serverVersion: string;
  extensions: readonly string[];
}

export type MainToHttp =
  | { t: 'snapshot'; snapshot: ServerSnapshot }
  | { t: 'listen'; address: string; port: number }
  | { t: 'close' };

export type HttpToMain =
  | { t: 'listening'; port: number }
  | { t: 'listen_failed'; message: string }
  | { t: 'closed' };
