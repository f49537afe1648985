/**
 * The main thread's registry of client system shared-memory regions
 * (protocol.md §1.11, §2.6): register / status / unregister (one or all),
 * with Triton's texts, refused unless `--allow-client-shm=true`. CUDA
 * shared memory is answered as a server without GPU support does.
 * `onChange` lets server.ts re-broadcast the snapshot (which carries
 * `table()`) to the HTTP threads; http/shm-control.ts answers the HTTP routes.
 */
import fs from 'node:fs';
import { ServerError } from '../core/errors';
import { shmKeyProblem, shmPath, type ShmRegionInfo, type ShmRegionTable } from '../request/shm-regions';

export const SHM_DISABLED = "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.";
const RESERVED_PREFIX = 'triton_python_backend_shm_region_';

export interface ShmRegionJson {
  name: string;
  key: string;
  offset: number;
  byte_size: number;
}

export class ShmRegistry {
  private regions: ShmRegionTable = {};

  constructor(
    private readonly allowed: boolean,
    private readonly onChange: () => void = () => {},
  ) {}

  /** A copy for the snapshot. */
  table(): ShmRegionTable {
    return { ...this.regions };
  }

  /** All system regions, or the named one (404 when unknown). */
  status(name?: string): ShmRegionJson[] {
    const list = name === undefined || name === '' ? Object.values(this.regions) : [this.find(name)];
    return list.map((r) => ({ name: r.name, key: r.key, offset: r.offset, byte_size: r.byteSize }));
  }

  register(name: string, key: string, offset: number, byteSize: number): void {
    this.requireAllowed();
    if (name === '') throw new ServerError('INVALID_ARG', "'region name' is necessary to register system shared memory region");
    const problem = shmKeyProblem(name, key);
    if (problem !== undefined) throw problem;
    const bare = key.replace(/^\/+/, '');
    if (bare.startsWith(RESERVED_PREFIX)) {
      throw new ServerError(
        'INVALID_ARG',
        `cannot register shared memory region '${name}' with key '${key}' as the key contains the reserved prefix '${RESERVED_PREFIX}'`,
      );
    }
    if (Object.prototype.hasOwnProperty.call(this.regions, name)) {
      throw new ServerError('ALREADY_EXISTS', `shared memory region '${name}' already in manager`);
    }
    let size: number;
    try {
      const fd = fs.openSync(shmPath(key), 'r+'); // shm_open(key, O_RDWR)
      try {
        size = fs.fstatSync(fd).size;
      } finally {
        fs.closeSync(fd);
      }
    } catch {
      throw new ServerError('INTERNAL', `Unable to open shared memory region: '${key}'`);
    }
    if (offset + byteSize > size) throw new ServerError('INVALID_ARG', `failed to register shared memory region '${name}': invalid args`);
    this.regions[name] = { name, key, offset, byteSize };
    this.onChange();
  }

  /** One region ('' = all); an unknown name succeeds. */
  unregister(name?: string): void {
    this.requireAllowed();
    if (name === undefined || name === '') {
      if (Object.keys(this.regions).length === 0) return;
      this.regions = {};
    } else {
      if (!Object.prototype.hasOwnProperty.call(this.regions, name)) return;
      delete this.regions[name];
    }
    this.onChange();
  }

  requireAllowed(): void {
    if (!this.allowed) throw new ServerError('UNSUPPORTED', SHM_DISABLED);
  }

  private find(name: string): ShmRegionInfo {
    if (!Object.prototype.hasOwnProperty.call(this.regions, name)) {
      throw new ServerError('NOT_FOUND', `Unable to find system shared memory region: '${name}'`);
    }
    return this.regions[name];
  }
}
