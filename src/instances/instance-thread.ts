/**
 * Entry of an instance worker thread: load the backend instance, then run
 * batches one at a time as they arrive on the ring (a request of a batch
 * cancelled before the batch starts is answered CANCELLED, not run). Between executions the
 * thread sleeps on its doorbell (it has nothing else to do).
 */
import { workerData } from 'node:worker_threads';
import { toErrorInfo } from '../core/errors';
import type { BackendInstance, CreateBackendInstance } from '../backends/backend';
import { Arena } from '../dataplane/arena';
import type { ExecuteMessage, InstanceToMain, MainToInstance } from '../dataplane/protocol';
import { ReplyRoutes } from '../dataplane/reply-routes';
import { Inbox, RingWriter } from '../dataplane/ring';
import { nameThisThread } from '../dataplane/thread-name';
import { runBatchWithout, takeCancels } from './instance-runner';
import type { InstanceThreadData } from './worker-instance';

const data = workerData as InstanceThreadData;
nameThisThread(`nt:${data.args.instanceName}`);
const arena = Arena.attach(data.arena);
const toMain = RingWriter.attach(data.toMain);
// Responses whose requester offered a reply address go straight to its frontend thread.
const replies = new ReplyRoutes(arena, data.peers, data.peersPort);
// An idle instance thread sleeps in drainOrWait; its safety poll wakes it once a
// second, not every 50 ms: with 50 models loaded, 20 wake-ups a second per thread
// cost 11% of a core at idle (4.2% -> 15.3%), and a lost wake-up is still recovered.
const inbox = new Inbox(data.toInstance.bell, { safetyPollMs: 1000 });
const queue: MainToInstance[] = [];
inbox.add(data.toInstance, (msg: MainToInstance) => queue.push(msg));

function send(msg: InstanceToMain): void {
  toMain.send(msg);
}

async function main(): Promise<void> {
  let backend: BackendInstance;
  try {
    const mod = require(data.backendModule) as { createBackendInstance: CreateBackendInstance };
    backend = await mod.createBackendInstance(data.args);
  } catch (err) {
    send({ t: 'init_failed', error: toErrorInfo(err) });
    inbox.stop();
    return;
  }
  send({ t: 'ready' });
  for (;;) {
    if (queue.length === 0) inbox.drainOrWait(1000);
    let msg: MainToInstance | undefined;
    while ((msg = queue.shift()) !== undefined) {
      if (msg.t === 'stop') {
        try {
          await backend.finalize();
        } finally {
          send({ t: 'stopped' });
          inbox.stop();
        }
        return;
      }
      if (msg.t === 'peers') {
        replies.refresh();
        continue;
      }
      if (msg.t === 'cancel_in_batch') continue; // its batch already ran
      // Cancels that came while the previous batch ran are in the ring: read them before this one starts.
      inbox.drain();
      await execute(backend, msg, takeCancels(queue, msg.batchId));
    }
  }
}

async function execute(backend: BackendInstance, msg: ExecuteMessage, cancelled: ReadonlySet<number>): Promise<void> {
  const { batchId, requests, replyTo } = msg;
  const outcome = await runBatchWithout(backend, requests, cancelled, arena);
  if (outcome.responses === undefined) {
    send({ t: 'execute_failed', batchId, error: outcome.error!, timings: outcome.timings });
    return;
  }
  if (replyTo !== undefined) replies.deliverAll(requests, outcome.responses, replyTo);
  send({ t: 'executed', batchId, responses: outcome.responses, timings: outcome.timings });
}

void main();
