/**
 * The shared-memory filesystem the Python stubs' tensors travel through, and
 * what to tell a user when it is too small (Docker gives a container 64 MiB
 * of /dev/shm unless `--shm-size` says otherwise). Checked once when the
 * first Python instance starts (a warning) and whenever a region must grow
 * (shm-region.ts: the grow is refused before the kernel would answer ENOSPC
 * on a write, or SIGBUS in the stub on a mapped page). A tensor that does
 * not fit takes the slower path through the stub's pipe where the frame
 * allows it (request-wire.ts, stub/_nt_response.py).
 *
 * NODETRON_SHM_DIR moves the stubs' regions to another tmpfs mount
 * (nodetron's own; default /dev/shm, or the OS temp dir without one).
 */
import fs from 'node:fs';
import os from 'node:os';
import { ServerError } from '../core/errors';

export const SHM_DIR = process.env.NODETRON_SHM_DIR ?? (fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir());

/** Below this, the first Python instance's start warns. */
export const SMALL_SHM_BYTES = 256 * 1024 * 1024;

export interface ShmSpace {
  mount: string;
  totalBytes: number;
  freeBytes: number;
}

/** The mount's size and free bytes now; undefined where statfs fails. */
export function shmSpace(dir = SHM_DIR): ShmSpace | undefined {
  try {
    const s = fs.statfsSync(dir);
    return { mount: dir, totalBytes: s.blocks * s.bsize, freeBytes: s.bavail * s.bsize };
  } catch {
    return undefined;
  }
}

export function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** What to do about it, the same sentence everywhere. */
export const SHM_FIX =
  "Give the server more shared memory: `docker run --shm-size=1g ...` (Docker's default is 64 MiB), " +
  'or in Kubernetes mount an emptyDir with `medium: Memory` (and a sizeLimit) at /dev/shm; ' +
  "or keep Python tensors smaller (the python backend's shm-default-byte-size and shm-growth-byte-size, " +
  '--backend-config=python,shm-growth-byte-size=<bytes>, set how much each instance takes at a time).';

/** The start-up warning, or undefined when the mount is big enough (or unknown). */
export function smallShmWarning(space: ShmSpace | undefined): string | undefined {
  if (space === undefined || space.totalBytes >= SMALL_SHM_BYTES) return undefined;
  return (
    `${space.mount} is ${mib(space.totalBytes)} (${mib(space.freeBytes)} free): tensors to and from Python models ` +
    `travel through it, so a larger request or response takes the slower path through the stub's pipe, or fails. ${SHM_FIX}`
  );
}

/** A region of `file` cannot grow by `askedBytes`: Triton's text, then which mount, how big, and the fix. */
export class ShmSpaceError extends ServerError {
  constructor(file: string, newSize: number, askedBytes: number, space: ShmSpace | undefined, cause?: string) {
    const where = space === undefined ? `${SHM_DIR}` : `${space.mount} (${mib(space.totalBytes)}, ${mib(space.freeBytes)} free)`;
    super(
      'UNAVAILABLE',
      `Failed to increase the shared memory pool size for key '${file}' to ${newSize} bytes. ` +
        `It needs ${askedBytes} bytes more of ${where}${cause === undefined ? '' : ` (${cause})`}. ${SHM_FIX}`,
    );
  }
}

let warned = false;

/** Logs the small-/dev/shm warning once per server process (the first Python instance to start). */
export function warnIfSmallShm(warn: (msg: string) => void): void {
  if (warned) return;
  warned = true;
  const text = smallShmWarning(shmSpace());
  if (text !== undefined) warn(text);
}
