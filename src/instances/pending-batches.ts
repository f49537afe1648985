/**
 * The batches main sent to an instance's thread and waits for, by batchId,
 * shared by the worker-thread and the hosted instance: each ends once, with
 * the thread's `executed` (outputs adopted by main, protocol.ts) or
 * `execute_failed`, or failed whole when the thread is gone.
 */
import { fromErrorInfo, type ServerError } from '../core/errors';
import type { ExecuteResult, InferRequest } from '../core/request';
import { adoptOutputs } from '../dataplane/adopt-outputs';
import type { Arena } from '../dataplane/arena';
import type { ExecuteFailedMessage, ExecutedMessage } from '../dataplane/protocol';
import { failedResult } from './failed-result';

interface Pending {
  requests: InferRequest[];
  resolve: (r: ExecuteResult) => void;
}

export class PendingBatches {
  private readonly pending = new Map<number, Pending>();
  private nextBatchId = 1;

  constructor(
    private readonly arena: Arena,
    private readonly instanceName: string,
  ) {}

  /** A new batch; `send` writes its `execute` with the batchId. */
  add(requests: InferRequest[], send: (batchId: number) => void): Promise<ExecuteResult> {
    const batchId = this.nextBatchId++;
    return new Promise((resolve) => {
      this.pending.set(batchId, { requests, resolve });
      send(batchId);
    });
  }

  /** The thread's answer for one batch (a batch already ended is ignored). */
  settle(msg: ExecutedMessage | ExecuteFailedMessage): void {
    const p = this.pending.get(msg.batchId);
    if (p === undefined) return;
    this.pending.delete(msg.batchId);
    if (msg.t === 'executed') {
      p.resolve({ responses: adoptOutputs(this.arena, msg.responses, this.instanceName), timings: msg.timings });
      return;
    }
    const result = failedResult(p.requests, fromErrorInfo(msg.error));
    if (msg.timings) result.timings = msg.timings;
    p.resolve(result);
  }

  /** Where `request` is among the batches still waiting: its batchId and index, or undefined. */
  locate(request: InferRequest): { batchId: number; index: number } | undefined {
    for (const [batchId, p] of this.pending) {
      const index = p.requests.indexOf(request);
      if (index >= 0) return { batchId, index };
    }
    return undefined;
  }

  /** Every batch still waiting fails with `err`. */
  failAll(err: ServerError): void {
    for (const p of this.pending.values()) p.resolve(failedResult(p.requests, err));
    this.pending.clear();
  }
}
