/**
 * What the host side of one stub (python-stub-instance.ts, stub-process.ts,
 * bls-client.ts) needs from wherever it runs. In the server it runs in the
 * instance's host thread (python-host-thread.ts), where these forward to the
 * main thread over the thread's port; a bench or test may run it anywhere
 * with local ones (the server's Logger is a HostLog).
 */
import type { InferGateway } from '../backends/backend';
import type { ModelControlCall } from './model-control';
import type { Arena } from '../dataplane/arena';
import type { MetricMsg } from './ipc-protocol';

export interface HostLog {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
  verbose(level: number, msg: string): void;
  child(bindings: { source: string }): HostLog;
}

/** The answer to a custom-metric operation that asked for one (it has an id). */
export type MetricReply = (value: number | undefined, error: string | undefined) => void;

export interface StubHostServices {
  /** This thread's view of the tensor arena. */
  arena: Arena;
  log: HostLog;
  /** Where the stub's BLS requests enter the server; absent: BLS fails with UNSUPPORTED. */
  gateway?: InferGateway;
  /**
   * Applies a custom-metric operation of the stub (`reply` set when the stub
   * waits for the answer); absent: every operation fails with "custom
   * metrics are not available in this server".
   */
  metric?: (op: MetricMsg, reply: MetricReply | undefined) => void;
  /**
   * Runs a model-control call of the stub (load_model, unload_model,
   * is_model_ready) on the server's repository; resolves with is_model_ready's
   * answer, rejects with the repository's error text. Absent: those calls
   * fail with "model control is not available in this server".
   */
  modelControl?: (call: ModelControlCall) => Promise<boolean | undefined>;
}
