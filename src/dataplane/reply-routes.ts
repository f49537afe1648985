/**
 * Instance-thread side of the direct response path (reply-rings.ts): the
 * instance's ring to every frontend thread, by reply port, and the delivery
 * of one response on it.
 *
 * Arena ownership (protocol.ts): the outputs are this thread's (it allocated
 * them); deliver gives them to the frontend thread before sending, which frees
 * them after encoding. A frontend reported dead refuses the give: then this
 * thread frees them and the client, whose connection died with that thread,
 * gets nothing. Either way the main thread hears only a `delivered` response
 * without outputs, in `executed`, for its bookkeeping.
 */
import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import type { InferRequest, InferResponse, ReplyAddress } from '../core/request';
import type { Arena } from './arena';
import type { ResponseMessage } from './protocol';
import type { PeersUpdate, ReplyPeer } from './reply-rings';
import { RingWriter } from './ring';

interface Route {
  threadId: number;
  out: RingWriter;
}

export class ReplyRoutes {
  private readonly routes = new Map<number, Route>();

  constructor(
    private readonly arena: Arena,
    peers: readonly ReplyPeer[],
    private readonly updates: MessagePort | undefined,
  ) {
    for (const p of peers) this.add(p);
  }

  /** Applies every update main has posted (on a `peers` ring message). */
  refresh(): void {
    if (this.updates === undefined) return;
    for (let m = receiveMessageOnPort(this.updates); m !== undefined; m = receiveMessageOnPort(this.updates)) {
      const u = m.message as PeersUpdate;
      for (const port of u.remove) {
        this.routes.get(port)?.out.close();
        this.routes.delete(port);
      }
      for (const p of u.add) this.add(p);
    }
  }

  /**
   * Sends `response` to the frontend thread at `to` and returns what main
   * gets instead (no outputs, `delivered`); undefined when this thread has no
   * ring to that port, and then main gets the response as it is and sends it.
   */
  deliver(to: ReplyAddress, version: number, response: InferResponse): InferResponse | undefined {
    const route = this.routes.get(to.port);
    if (route === undefined) return undefined;
    const lean: InferResponse = { outputs: [], final: response.final, delivered: true };
    if (response.error !== undefined) lean.error = response.error;
    for (let i = 0; i < response.outputs.length; i++) {
      if (this.arena.give(response.outputs[i]!, route.threadId)) continue;
      // The frontend died: what was given is swept with it; free the rest here.
      for (let j = i; j < response.outputs.length; j++) this.arena.free(response.outputs[j]!);
      return lean;
    }
    const msg: ResponseMessage = { t: 'response', key: to.key, version, response };
    route.out.send(msg);
    return lean;
  }

  /**
   * Sends each final response whose request offered a reply address straight
   * to its frontend thread, replacing it in `responses` with what main gets
   * (deliver). A rescheduled request's response stays: main runs it again.
   */
  deliverAll(requests: readonly InferRequest[], responses: InferResponse[], replyTo: readonly (ReplyAddress | null)[]): void {
    for (let i = 0; i < responses.length; i++) {
      const to = replyTo[i];
      const r = responses[i];
      if (to === null || to === undefined || r === undefined || r.rescheduled === true) continue;
      const lean = this.deliver(to, requests[i]!.version, r);
      if (lean !== undefined) responses[i] = lean;
    }
  }

  private add(p: ReplyPeer): void {
    this.routes.get(p.port)?.out.close();
    this.routes.set(p.port, { threadId: p.threadId, out: RingWriter.attach(p.ring) });
  }
}
