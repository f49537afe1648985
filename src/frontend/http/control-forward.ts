/**
 * HTTP-thread side of the control channel (http-control.ts): statistics,
 * logging and trace routes live on the main thread, so the thread forwards
 * them (method, route, body) by postMessage and answers when the reply with
 * the same id comes back. Low volume, so structured clone is fine.
 */
import type { ControlReply, ControlRequest, ControlRoute } from './http-control';
import { bodyTooLarge, readBody, type Reply, type RequestHead } from './http-reply';

export class ControlForwarder {
  private nextId = 1;
  private readonly waiting = new Map<number, Reply>();

  constructor(
    private readonly post: (msg: ControlRequest) => void,
    private readonly maxInputSize: number,
  ) {}

  handle(reply: Reply, head: RequestHead, route: ControlRoute): void {
    if (head.method !== 'POST') {
      // GET ignores any body.
      this.forward(reply, head.method, route, '');
      return;
    }
    readBody(reply, head, this.maxInputSize, (r) => {
      if (!r.ok) {
        bodyTooLarge(reply, r.size, this.maxInputSize);
        return;
      }
      this.forward(reply, head.method, route, r.body.toString('utf8'));
    });
  }

  onReply(msg: ControlReply): void {
    const reply = this.waiting.get(msg.id);
    if (reply === undefined) return;
    this.waiting.delete(msg.id);
    if (msg.contentType === undefined) reply.json(msg.status, msg.body);
    else reply.send(msg.status, { 'Content-Type': msg.contentType }, msg.body);
  }

  private forward(reply: Reply, method: string, route: ControlRoute, body: string): void {
    const id = this.nextId++;
    this.waiting.set(id, reply);
    this.post({ t: 'control', id, method, route, body });
  }
}
