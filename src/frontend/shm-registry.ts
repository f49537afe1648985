/**
 * The main thread's registry of client system shared-memory regions
 * (protocol.md §1.11, §2.6): register / status / unregister (one or all),
 * with Triton's texts, refused unless `--allow-client-shm=true`. CUDA
 * shared memory is answered as a server without GPU support does.
 * `onChange` lets server.ts re-broadcast the snapshot (which carries
 * `table()`) to the HTTP threads; `http()` answers the HTTP routes.
 */
import fs from 'node:fs';
import { HTTP_STATUS, ServerError, toErrorInfo } from '../errors';
import type { ControlReply, ControlRequest } from './http/http-control';
import { parseRequestJson } from './http/request-json';
import { shmPath, type ShmRegionInfo, type ShmRegionTable } from './shm-regions';

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

  constructor(private readonly allowed: boolean, private readonly onChange: () => void = () => {}) {}

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
    const bare = key.replace(/^\/+/, '');
    if (bare === '') throw new ServerError('INVALID_ARG', `cannot register shared memory region '${name}' - invalid shm key '${key}'`);
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

  /** The `/v2/systemsharedmemory…` and `/v2/cudasharedmemory…` routes. */
  http(req: ControlRequest): ControlReply {
    const reply = (status: number, body: string): ControlReply => ({ t: 'control_reply', id: req.id, status, body });
    try {
      const r = req.route;
      if (r.kind !== 'shm') throw new ServerError('UNSUPPORTED', 'unknown control route');
      if (r.flavor === 'cuda') return reply(200, cudaHttp(this, r.action, r.region, req.body));
      switch (r.action) {
        case 'status':
          return reply(200, JSON.stringify(this.status(r.region)));
        case 'unregister':
          this.unregister(r.region);
          return reply(200, '');
        case 'register': {
          this.requireAllowed();
          if (r.region === undefined) {
            throw new ServerError('INVALID_ARG', "'region name' is necessary to register system shared memory region");
          }
          const b = registerBody(req.body);
          this.register(r.region, b.key, b.offset, b.byteSize);
          return reply(200, '');
        }
      }
    } catch (err) {
      const info = toErrorInfo(err);
      return reply(HTTP_STATUS[info.code], JSON.stringify({ error: info.message }));
    }
  }
}

function cudaHttp(reg: ShmRegistry, action: 'status' | 'register' | 'unregister', region: string | undefined, body: string): string {
  switch (action) {
    case 'status':
      if (region !== undefined) throw new ServerError('NOT_FOUND', `Unable to find cuda shared memory region: '${region}'`);
      return '[]';
    case 'unregister':
      reg.requireAllowed();
      return '';
    case 'register': {
      reg.requireAllowed();
      const doc = parseBody(body);
      if (doc.raw_handle === undefined) throw new ServerError('INVALID_ARG', "Shared memory register request has no 'raw_handle' field");
      throw new ServerError('INVALID_ARG', `failed to register CUDA shared memory region: '${region ?? ''}', GPUs not supported`);
    }
  }
}

function parseBody(body: string): Record<string, unknown> {
  const buf = Buffer.from(body, 'utf8');
  const doc = parseRequestJson(buf, buf.length);
  return typeof doc === 'object' && doc !== null && !Array.isArray(doc) ? (doc as Record<string, unknown>) : {};
}

function isUInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0;
}

/** `{"key", "offset"?, "byte_size"}` of an HTTP register call. */
function registerBody(body: string): { key: string; offset: number; byteSize: number } {
  const doc = parseBody(body);
  if (doc.key === undefined) throw new ServerError('INVALID_ARG', "Shared memory register request has no 'key' field");
  if (typeof doc.key !== 'string') throw new ServerError('INTERNAL', "Unable to parse 'key': attempt to access JSON non-string as string");
  let offset = 0;
  if (doc.offset !== undefined) {
    if (!isUInt(doc.offset)) throw new ServerError('INTERNAL', "Unable to parse 'offset': attempt to access JSON non-unsigned-integer as unsigned-integer");
    offset = doc.offset;
  }
  if (doc.byte_size === undefined) throw new ServerError('INVALID_ARG', "Shared memory register request has no 'byte_size' field");
  if (!isUInt(doc.byte_size)) {
    throw new ServerError('INTERNAL', "Unable to parse 'byte_size': attempt to access JSON non-unsigned-integer as unsigned-integer");
  }
  return { key: doc.key, offset, byteSize: doc.byte_size };
}
