/**
 * Client system shared memory as a frontend uses it during inference
 * (protocol.md §1.8.10, §2.3): the registered-region table (built by the
 * main thread's registry, shm-registry.ts, and carried in the server
 * snapshot so HTTP threads see it), resolving a tensor's
 * region/offset/byte_size with Triton's texts, and reading inputs from /
 * writing outputs to the region's /dev/shm file. Node cannot mmap, so bytes
 * move with positioned read/write on the file opened by its key; this works
 * on any thread (worker threads included).
 */
import fs from 'node:fs';
import path from 'node:path';
import { ServerError } from '../core/errors';

export interface ShmRegionInfo {
  name: string;
  /** The shm_open key as registered, e.g. "/input_data". */
  key: string;
  /** Offset of the region inside the shm object. */
  offset: number;
  byteSize: number;
}

/** Registered system regions by name. */
export type ShmRegionTable = Record<string, ShmRegionInfo>;

/** A tensor's place inside a registered region. */
export interface ShmRef {
  region: ShmRegionInfo;
  /** Offset inside the region (not the file). */
  offset: number;
  byteSize: number;
}

const SHM_DIR = '/dev/shm';

/**
 * Why `key` names no shm object, or undefined when it names one: shm_open
 * takes one name in /dev/shm after the leading slashes, so an empty name, a
 * name with a `/` (`/../../etc/passwd`), `.`, `..` or a NUL byte is refused,
 * as glibc's shm_open refuses it, before any file is opened. The empty case
 * has Triton's text (protocol.md §1.11).
 */
export function shmKeyProblem(region: string, key: string): ServerError | undefined {
  const bare = key.replace(/^\/+/, '');
  const invalid = `cannot register shared memory region '${region}' - invalid shm key '${key}'`;
  if (bare === '') return new ServerError('INVALID_ARG', invalid);
  if (bare.includes('/') || bare === '.' || bare === '..' || bare.includes('\0')) {
    return new ServerError(
      'INVALID_ARG',
      `${invalid}: a key names one object in /dev/shm, so after its leading '/' it must not contain '/', be '.' or '..', or hold a NUL byte`,
    );
  }
  return undefined;
}

/** The file behind an shm_open key: the name after its leading slashes, under /dev/shm. */
export function shmPath(key: string): string {
  const file = path.join(SHM_DIR, key.replace(/^\/+/, ''));
  // Registration refuses other keys (shmKeyProblem); never open a file outside /dev/shm.
  if (path.dirname(file) !== SHM_DIR || file === SHM_DIR) {
    throw new ServerError('INVALID_ARG', `invalid shm key '${key}': it names no object in ${SHM_DIR}`);
  }
  return file;
}

/** Region lookup and bounds, with Triton's texts (404 / 400). */
export function resolveShm(table: ShmRegionTable | undefined, name: string, offset: number, byteSize: number): ShmRef {
  const region = table !== undefined && Object.prototype.hasOwnProperty.call(table, name) ? table[name] : undefined;
  if (region === undefined) throw new ServerError('NOT_FOUND', `Unable to find shared memory region: '${name}'`);
  if (offset < 0 || (offset >= region.byteSize && !(offset === 0 && byteSize === 0))) {
    throw new ServerError('INVALID_ARG', `Invalid offset for shared memory region: '${name}'`);
  }
  if (byteSize < 0 || byteSize > region.byteSize - offset) {
    throw new ServerError('INVALID_ARG', `Invalid offset + byte size for shared memory region: '${name}'`);
  }
  return { region, offset, byteSize };
}

function withFile<T>(ref: ShmRef, flags: string, use: (fd: number) => T): T {
  let fd: number;
  try {
    fd = fs.openSync(shmPath(ref.region.key), flags);
  } catch {
    throw new ServerError('INTERNAL', `Unable to open shared memory region: '${ref.region.key}'`);
  }
  try {
    return use(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** The input bytes a tensor names (a fresh buffer). */
export function readShm(ref: ShmRef): Uint8Array {
  const out = Buffer.alloc(ref.byteSize);
  if (ref.byteSize === 0) return out;
  return withFile(ref, 'r', (fd) => {
    let done = 0;
    while (done < out.length) {
      const n = fs.readSync(fd, out, done, out.length - done, ref.region.offset + ref.offset + done);
      if (n === 0) {
        throw new ServerError('INTERNAL', `shared memory region '${ref.region.name}' is shorter than its registered size`);
      }
      done += n;
    }
    return out;
  });
}

/** Writes an output into its region; the region must hold it (500, Triton's text). */
export function writeShm(ref: ShmRef, output: string, data: Uint8Array): void {
  if (data.byteLength > ref.byteSize) {
    throw new ServerError(
      'INTERNAL',
      `shared memory size specified with the request for output '${output}' (${ref.byteSize} bytes) should be at least ${data.byteLength} bytes to hold the results`,
    );
  }
  if (data.byteLength === 0) return;
  withFile(ref, 'r+', (fd) => {
    let done = 0;
    while (done < data.byteLength) {
      done += fs.writeSync(fd, data, done, data.byteLength - done, ref.region.offset + ref.offset + done);
    }
  });
}

/** Writes every response output the request sent into shared memory (both frontends, before encoding). */
export function writeShmOutputs(outputs: readonly { name: string; data: Uint8Array }[], requested: readonly { name: string; shm?: ShmRef }[] | null): void {
  if (requested === null) return;
  for (const req of requested) {
    if (req.shm === undefined) continue;
    const out = outputs.find((o) => o.name === req.name);
    if (out !== undefined) writeShm(req.shm, out.name, out.data);
  }
}
