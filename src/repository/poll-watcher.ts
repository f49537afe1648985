/**
 * Poll mode (--model-control-mode=poll): chokidar notices changes under the
 * repositories, and every --repository-poll-secs the registry polls. A model
 * folder still being written is not read: it must have been quiet for the
 * settle time (no change for max(1 s, half the poll interval, at most 5 s)),
 * and a folder whose config does not parse keeps its last good load serving
 * (repository-manager.ts) until the files change again.
 */
import path from 'node:path';
import { watch } from 'chokidar';
import type { FSWatcher } from 'chokidar';
import type { Logger } from '../logging/logger';
import type { RepositoryManager } from './repository-manager';

export function settleMs(pollSecs: number): number {
  return Math.max(1000, Math.min(5000, (pollSecs * 1000) / 2));
}

export class PollWatcher {
  private watcher?: FSWatcher;
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  /** Last change seen per model folder (ms since epoch). */
  private readonly lastChange = new Map<string, number>();
  private readonly settle: number;

  constructor(
    private readonly repo: RepositoryManager,
    private readonly repositories: readonly string[],
    private readonly pollSecs: number,
    private readonly log: Logger,
  ) {
    this.settle = settleMs(pollSecs);
  }

  start(): void {
    const roots = this.repositories.map((r) => path.resolve(r));
    this.watcher = watch(roots, { ignoreInitial: true, depth: 8 });
    this.watcher.on('all', (_event, file) => this.noticed(roots, path.resolve(file)));
    this.watcher.on('error', (err) => this.log.warn(`model repository watcher: ${(err as Error).message}`));
    if (this.pollSecs > 0) this.timer = setInterval(() => this.tick(), this.pollSecs * 1000);
  }

  /** Stop watching and wait for a poll in progress. Idempotent. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const w = this.watcher;
    this.watcher = undefined;
    await w?.close();
    await this.running;
  }

  private noticed(roots: string[], file: string): void {
    for (const root of roots) {
      const rel = path.relative(root, file);
      if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) continue;
      this.lastChange.set(path.join(root, rel.split(path.sep)[0]), Date.now());
      return;
    }
  }

  private tick(): void {
    if (this.running) return; // a slow load: the next tick picks up what is left
    const now = Date.now();
    const settled = (dir: string): boolean => now - (this.lastChange.get(path.resolve(dir)) ?? 0) >= this.settle;
    this.running = this.repo
      .poll(settled)
      .catch((err: unknown) => this.log.error(`model repository poll failed: ${(err as Error).message}`))
      .finally(() => (this.running = undefined));
  }
}
