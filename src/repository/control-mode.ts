/**
 * What the repository loads at startup in each --model-control-mode, and what
 * keeps running afterwards (protocol.md §6.1): `none` loads every model and
 * never changes; `poll` loads every model and then polls; `explicit` loads
 * only --load-model names (`*` = all) and waits for the repository API.
 */
import type { ServerOptions } from '../cli-options';
import type { Logger } from '../logging/logger';
import { PollWatcher } from './poll-watcher';
import type { RepositoryManager, TableRow } from './repository-manager';

export interface RepositoryStartup {
  /** Models that failed to load at startup (sorted); non-empty fails startup. */
  failed: string[];
  /** Stop background work (the poll watcher). Idempotent. */
  stop(): Promise<void>;
  /** The startup model table as Triton prints it in this mode. */
  tableRows(): TableRow[];
}

export async function startRepository(repo: RepositoryManager, options: ServerOptions, log: Logger): Promise<RepositoryStartup> {
  const mode = options.modelControlMode;
  if (mode !== 'explicit' || options.loadModels.includes('*')) {
    await repo.loadAll();
    const failed = repo.failedModels();
    const tableRows = (): TableRow[] => repo.tableRows();
    if (mode !== 'poll') return { failed, stop: async () => undefined, tableRows };
    const watcher = new PollWatcher(repo, repo.localPaths(), options.repositoryPollSecs, log);
    watcher.start();
    return { failed, stop: () => watcher.stop(), tableRows };
  }
  const failed = new Set<string>();
  await Promise.all(
    [...new Set(options.loadModels)].map(async (name) => {
      try {
        const outcome = await repo.load(name);
        if (outcome.errors.length > 0) failed.add(name);
      } catch {
        failed.add(name); // logged by the registry (failed to poll ...)
      }
    }),
  );
  return { failed: [...failed].sort(), stop: async () => undefined, tableRows: () => repo.tableRows(false) };
}
