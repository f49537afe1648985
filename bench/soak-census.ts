/**
 * One look at what the soak's server holds (bench/soak.ts), from /proc,
 * /dev/shm and its metrics: RSS of the process tree (server + stubs) and of
 * the server alone, threads, fds by kind, stub processes (children), its
 * `nodetron_<pid>_*` shared-memory files and the tensor arena's used bytes.
 */
import { rssMb, treeRssMb } from './bench-procs';
import { childPids, fdKinds, shmFiles, type FdKinds } from './proc-census';
import { threadCount } from '../test/integration/repo-kit';

export interface Census {
  rssTreeMb: number;
  rssMainMb: number;
  threads: number;
  fds: FdKinds;
  stubs: number;
  shmFiles: number;
  arenaBytes: number;
}

export async function takeCensus(pid: number, arenaUsedBytes: () => Promise<number>): Promise<Census> {
  return {
    rssTreeMb: treeRssMb(pid),
    rssMainMb: rssMb(pid),
    threads: threadCount(pid),
    fds: fdKinds(pid),
    stubs: childPids(pid).length,
    shmFiles: shmFiles(pid).length,
    arenaBytes: await arenaUsedBytes(),
  };
}

/** The counts that must come back to the baseline once the soak's load and churn stopped (RSS is judged on its own). */
export function leftOver(c: Census): Record<string, number> {
  return {
    threads: c.threads,
    fds: c.fds.total,
    'fds on /dev/shm': c.fds.shm,
    'stub processes': c.stubs,
    '/dev/shm files': c.shmFiles,
    'arena bytes': c.arenaBytes,
  };
}
