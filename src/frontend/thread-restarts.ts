/**
 * What the HTTP and gRPC frontends share about their worker threads' lives
 * on the main thread: how long to wait before restarting a thread that died
 * (RestartBackoff), and the listen handshake (whenListening: the thread
 * answers `listening` with its bound port, or `listen_failed`).
 */
import type { Worker } from 'node:worker_threads';
import { ServerError } from '../core/errors';

/** Restart delays after repeated deaths: 0 for the first, then doubling up to the cap. */
export class RestartBackoff {
  private deaths: number[] = [];

  constructor(
    private readonly baseMs = 100,
    private readonly maxMs = 5000,
    private readonly windowMs = 60_000,
  ) {}

  /** Records a death at `now`; returns the delay before the restart (deaths older than the window are forgotten). */
  next(now = Date.now()): number {
    this.deaths = this.deaths.filter((d) => now - d < this.windowMs);
    this.deaths.push(now);
    return this.deaths.length <= 1 ? 0 : Math.min(this.baseMs * 2 ** (this.deaths.length - 2), this.maxMs);
  }
}

type ListenReply = { t: 'listening'; port: number } | { t: 'listen_failed'; message: string } | { t: string };

/**
 * Resolves with the port `worker` says it listens on, rejects with
 * UNAVAILABLE when it says it could not, or (given `exited`) when it ends
 * first. Post the listen request after calling this.
 */
export function whenListening(worker: Worker, exited?: { done: Promise<void>; why: () => string }): Promise<number> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: ListenReply): void => {
      if (m.t === 'listening') {
        worker.off('message', onMessage);
        resolve((m as { port: number }).port);
      } else if (m.t === 'listen_failed') {
        worker.off('message', onMessage);
        reject(new ServerError('UNAVAILABLE', (m as { message: string }).message));
      }
    };
    worker.on('message', onMessage);
    if (exited !== undefined) void exited.done.then(() => reject(new ServerError('UNAVAILABLE', exited.why())));
  });
}
