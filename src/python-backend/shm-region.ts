/**
 * The two shared-memory files of one stub (see ipc-protocol.ts for who writes
 * which). Node cannot mmap, so the host side uses positioned reads and writes
 * on the file descriptors; the stub mmaps the same files and builds numpy
 * views over them.
 *
 * Lifetime: the files are created under /dev/shm, handed to the stub as
 * inherited descriptors, and unlinked as soon as the stub is spawned. Both
 * processes keep the memory through their descriptors, and no name is left
 * behind by an unload, a server exit, or a SIGKILL of either process.
 */
import fs from 'node:fs';
import path from 'node:path';
import { threadId } from 'node:worker_threads';
import { ServerError } from '../core/errors';
import { ShmAllocator } from './shm-allocator';
import { SHM_DIR, ShmSpaceError, shmSpace } from './shm-space';

let sequence = 0;

/**
 * `nodetron_<pid>_<thread>_<instance>_<n>`: unique per server process and
 * stub start (each host thread counts its own starts, and two versions of a
 * model have instances of the same name).
 */
export function regionBaseName(instanceName: string): string {
  return `nodetron_${process.pid}_${threadId}_${instanceName.replace(/[^A-Za-z0-9_.-]/g, '_')}_${sequence++}`;
}

function createFile(file: string, bytes: number): number {
  let fd: number;
  try {
    fd = fs.openSync(file, 'wx+', 0o600);
  } catch (err) {
    throw new ServerError('INTERNAL', `Unable to create shared memory region '${file}': ${(err as Error).message}`);
  }
  try {
    fs.ftruncateSync(fd, bytes);
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(file, { force: true });
    throw new ServerError(
      'INTERNAL',
      `Unable to initialize shared memory key '${file}' to requested size (${bytes} bytes). ` +
        `Each Python backend model instance requires at least 1 MB of shared memory. (${(err as Error).message})`,
    );
  }
  return fd;
}

/** One /dev/shm file and its descriptor: created at construction, unlinked and closed once. */
abstract class ShmFile {
  readonly fd: number;
  readonly file: string;
  protected closed = false;

  constructor(baseName: string, suffix: string, initialBytes: number) {
    this.file = path.join(SHM_DIR, `${baseName}_${suffix}`);
    this.fd = createFile(this.file, initialBytes);
  }

  unlink(): void {
    fs.rmSync(this.file, { force: true });
  }

  /** Copies `dst.byteLength` bytes at `offset` into `dst`. */
  read(offset: number, dst: Uint8Array): void {
    let done = 0;
    while (done < dst.byteLength) {
      const n = fs.readSync(this.fd, dst, done, dst.byteLength - done, offset + done);
      if (n === 0) throw new ServerError('INTERNAL', `python stub referenced bytes ${offset}..${offset + dst.byteLength} beyond its shared memory region`);
      done += n;
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.unlink();
    fs.closeSync(this.fd);
  }
}

/** Host-written region: request inputs and BLS outputs, allocated here (read back for outputs that are views of inputs). */
export class HostRegion extends ShmFile {
  private readonly alloc: ShmAllocator;

  constructor(baseName: string, initialBytes: number, growthBytes: number) {
    super(baseName, 'h2s', initialBytes);
    this.alloc = new ShmAllocator(initialBytes, growthBytes);
  }

  /** Copies `data` into a new block; returns its offset. */
  /**
   * Copies `data` into a new block; returns its offset. Throws ShmSpaceError
   * (UNAVAILABLE, naming the mount, its size and the fix) when the region
   * must grow and the mount has not the room: checked before the grow, since
   * tmpfs grows a file sparsely and fails only later, on the write.
   */
  write(data: Uint8Array): number {
    const before = this.alloc.size();
    const { offset, grew } = this.alloc.alloc(data.byteLength);
    if (grew) {
      const size = this.alloc.size();
      const space = shmSpace();
      const fail = (cause?: string): ShmSpaceError => {
        this.alloc.release(offset);
        return new ShmSpaceError(this.file, size, size - before, space, cause);
      };
      if (space !== undefined && size - before > space.freeBytes) throw fail();
      try {
        fs.ftruncateSync(this.fd, size);
      } catch (err) {
        throw fail((err as Error).message);
      }
    }
    let done = 0;
    try {
      while (done < data.byteLength) done += fs.writeSync(this.fd, data, done, data.byteLength - done, offset + done);
    } catch (err) {
      this.alloc.release(offset);
      if ((err as NodeJS.ErrnoException).code === 'ENOSPC')
        throw new ShmSpaceError(this.file, this.alloc.size(), data.byteLength - done, shmSpace(), 'ENOSPC on write');
      throw err;
    }
    return offset;
  }

  release(offset: number): void {
    if (!this.closed) this.alloc.release(offset);
  }

  size(): number {
    return this.alloc.size();
  }

  usedBytes(): number {
    return this.alloc.usedBytes();
  }
}

/** Stub-written region: the stub allocates and grows it; the host only reads. */
export class StubRegion extends ShmFile {
  constructor(baseName: string, initialBytes: number) {
    super(baseName, 's2h', initialBytes);
  }
}
