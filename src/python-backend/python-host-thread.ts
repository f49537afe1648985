/**
 * Entry of a Python instance's host thread (`nt:py-<instance>`): spawns the
 * instance's stub process and does, off the main thread, everything an
 * execution needs on the host side: framing over the stub's pipe, copying
 * inputs from the arena into the stub's /dev/shm region and outputs back
 * into the arena, release bookkeeping (python-stub-instance.ts). Batches
 * come and results go over the SAB rings; the stub's BLS requests, metric
 * operations and log records go to the main thread over the thread's port
 * (host-thread-protocol.ts). One stub per thread: when the stub dies the
 * thread reports it and the main thread ends the thread (python-host.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { toErrorInfo } from '../core/errors';
import type { InferRequest, StreamResponse } from '../core/request';
import { Arena } from '../dataplane/arena';
import { ReplyRoutes } from '../dataplane/reply-routes';
import { Inbox, RingWriter } from '../dataplane/ring';
import { nameThisThread } from '../dataplane/thread-name';
import type { MainToPyHost, PyHostThreadData, PyHostToMain } from './host-thread-protocol';
import { HostThreadPort } from './host-thread-port';
import { PythonStubInstance } from './python-stub-instance';

const data = workerData as PyHostThreadData;
nameThisThread(`nt:py-${data.args.instanceName}`);
const arena = Arena.attach(data.arena);
const toMain = RingWriter.attach(data.toMain);
// An idle host thread waits in its event loop (the stub's pipe is a libuv
// handle); the rings' safety poll runs once a second, as in instance threads.
const inbox = new Inbox(data.toHost.bell, { safetyPollMs: 1000 });
const port = new HostThreadPort(parentPort!, arena);
// Final responses whose requester offered a reply address go straight to its frontend thread.
const replies = new ReplyRoutes(arena, data.peers, data.peersPort);

function send(msg: PyHostToMain): void {
  toMain.send(msg);
}

/** The requests of each batch main sent that has not finished, by main's batchId: what a `cancel` names. */
const running = new Map<number, InferRequest[]>();

function onRing(instance: PythonStubInstance, msg: MainToPyHost): void {
  if (msg.t === 'stop') {
    void instance.stop().finally(() => {
      send({ t: 'stopped' });
      inbox.stop();
    });
    return;
  }
  if (msg.t === 'peers') {
    replies.refresh();
    return;
  }
  if (msg.t === 'cancel_in_batch') {
    const requests = running.get(msg.batchId);
    if (requests !== undefined) instance.cancel(requests, msg.index);
    return;
  }
  const { batchId, replyTo } = msg;
  const stream: StreamResponse | undefined = msg.stream ? (index, response) => send({ t: 'streamed', batchId, index, response }) : undefined;
  running.set(batchId, msg.requests);
  void instance.execute(msg.requests, stream).then((result) => {
    running.delete(batchId);
    if (replyTo !== undefined) replies.deliverAll(msg.requests, result.responses, replyTo);
    send({ t: 'executed', batchId, responses: result.responses, timings: result.timings });
  });
}

async function main(): Promise<void> {
  let instance: PythonStubInstance;
  try {
    instance = await PythonStubInstance.start(data.args, port.services, data.builtin);
  } catch (err) {
    send({ t: 'init_failed', error: toErrorInfo(err) });
    return;
  }
  // The batches the stub had are failed by then; their results resolve in
  // microtasks, so the death goes after them on the ring.
  instance.onDeath((why) => setImmediate(() => send({ t: 'stub_exited', why })));
  instance.onUnreadyChange((reason) => send(reason === undefined ? { t: 'unready' } : { t: 'unready', reason }));
  inbox.add(data.toHost, (msg: MainToPyHost) => onRing(instance, msg));
  inbox.start();
  const unready = instance.unready;
  send(unready === undefined ? { t: 'ready', pid: instance.pid } : { t: 'ready', pid: instance.pid, unready });
}

void main();
