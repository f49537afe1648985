/**
 * A lock file that keeps two builders (threads of one server, or servers
 * sharing a cache folder) from building the same Python environment at
 * once. The file is created exclusively and holds the owner's host and pid;
 * the owner touches it every few seconds while it works. A lock is stale,
 * and taken over, when its owner is a dead process on this host, or when it
 * has not been touched for STALE_MS (an owner on another host that died).
 */
import fs from 'node:fs';
import os from 'node:os';
import { pidAlive } from '../core/pid-alive';

const TOUCH_MS = 5_000;
const STALE_MS = 60_000;
const WAIT_MS = 250;

export interface HeldLock {
  release(): void;
}

/**
 * Wait for the lock at `file`, calling `waiting` once if another owner holds
 * it (the caller's chance to say so), then hold it until release().
 * `ready()` is asked after every wait: true means the other owner finished
 * the work, and acquire resolves undefined instead of taking the lock.
 */
export async function acquireLock(file: string, ready: () => boolean, waiting: (owner: string) => void): Promise<HeldLock | undefined> {
  let told = false;
  for (;;) {
    const held = tryCreate(file);
    if (held !== undefined) return held;
    if (ready()) return undefined;
    const owner = readOwner(file);
    if (owner !== undefined && isStale(file, owner)) {
      fs.rmSync(file, { force: true });
      continue;
    }
    if (!told) {
      told = true;
      waiting(owner === undefined ? 'another builder' : `${owner.host} pid ${owner.pid}`);
    }
    await new Promise((r) => setTimeout(r, WAIT_MS));
    if (ready()) return undefined;
  }
}

function tryCreate(file: string): HeldLock | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, 'wx');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw err;
  }
  fs.writeSync(fd, JSON.stringify({ host: os.hostname(), pid: process.pid }));
  fs.closeSync(fd);
  const timer = setInterval(() => {
    const now = new Date();
    try {
      fs.utimesSync(file, now, now);
    } catch {
      // Removed under us (taken as stale): the build goes on; its ready marker is what counts.
    }
  }, TOUCH_MS);
  timer.unref();
  return {
    release: () => {
      clearInterval(timer);
      fs.rmSync(file, { force: true });
    },
  };
}

interface Owner {
  host: string;
  pid: number;
}

function readOwner(file: string): Owner | undefined {
  try {
    const o = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<Owner>;
    if (typeof o.host === 'string' && typeof o.pid === 'number') return { host: o.host, pid: o.pid };
  } catch {
    // Just created and not yet written, or removed: ask again after the wait.
  }
  return undefined;
}

function isStale(file: string, owner: Owner): boolean {
  if (owner.host === os.hostname() && !pidAlive(owner.pid)) return true;
  try {
    return Date.now() - fs.statSync(file).mtimeMs > STALE_MS;
  } catch {
    return false;
  }
}
