/**
 * What a server process holds, read from Linux /proc and /dev/shm: its child
 * processes (Python stubs), its `nodetron_<pid>_*` shared-memory files, and
 * its open fds on such files (including files already unlinked), and all its
 * fds by kind. Used to show model churn leaves nothing behind
 * (bench/model-churn.ts, bench/soak.ts).
 */
import fs from 'node:fs';

/** PIDs whose parent is `pid` (scan of /proc/<n>/stat: the field after the state). */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // "<pid> (<comm>) <state> <ppid> ...": comm may hold spaces and parentheses.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(rest[1]) === pid) out.push(Number(name));
  }
  return out;
}

/** /dev/shm files the server named after itself (`nodetron_<pid>_...`). */
export function shmFiles(pid: number): string[] {
  try {
    return fs.readdirSync('/dev/shm').filter((f) => f.startsWith(`nodetron_${pid}_`));
  } catch {
    return [];
  }
}

/** The server's fds open on /dev/shm/nodetron_* files (a "(deleted)" suffix when unlinked). */
export function shmFds(pid: number): string[] {
  const out: string[] = [];
  let fds: string[];
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return [];
  }
  for (const fd of fds) {
    try {
      const target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (target.startsWith('/dev/shm/nodetron_')) out.push(target);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

/** The server's open fds, by what they point at. */
export interface FdKinds {
  total: number;
  /** TCP connections and listening sockets (clients' keep-alive connections count here). */
  sockets: number;
  pipes: number;
  /** anon_inode: eventfd, epoll, timerfd (libuv, V8, ORT). */
  anon: number;
  /** /dev/shm/nodetron_* (unlinked ones included). */
  shm: number;
  /** Everything else: files, /dev nodes. */
  files: number;
}

export function fdKinds(pid: number): FdKinds {
  const out: FdKinds = { total: 0, sockets: 0, pipes: 0, anon: 0, shm: 0, files: 0 };
  let fds: string[];
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return out;
  }
  for (const fd of fds) {
    let target: string;
    try {
      target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed meanwhile (the readdir's own fd among them)
    }
    out.total++;
    if (target.startsWith('socket:')) out.sockets++;
    else if (target.startsWith('pipe:')) out.pipes++;
    else if (target.startsWith('anon_inode:')) out.anon++;
    else if (target.startsWith('/dev/shm/nodetron_')) out.shm++;
    else out.files++;
  }
  return out;
}
