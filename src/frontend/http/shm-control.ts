/**
 * The HTTP side of the client shared-memory extension: the control channel's
 * `shm` routes answered on the main thread against the registry
 * (../shm-registry.ts, shared with gRPC), errors as Triton's bodies.
 */
import { HTTP_STATUS, ServerError, toErrorInfo } from '../../core/errors';
import type { ShmRegistry } from '../shm-registry';
import type { ControlReply, ControlRequest } from './http-control';
import { parseControlJson } from './request-json';

/** The `/v2/systemsharedmemory…` and `/v2/cudasharedmemory…` routes, on the main thread. */
export function shmHttp(reg: ShmRegistry, req: ControlRequest): ControlReply {
  const reply = (status: number, body: string): ControlReply => ({ t: 'control_reply', id: req.id, status, body });
  try {
    const r = req.route;
    if (r.kind !== 'shm') throw new ServerError('UNSUPPORTED', 'unknown control route');
    if (r.flavor === 'cuda') return reply(200, cudaHttp(reg, r.action, r.region, req.body));
    switch (r.action) {
      case 'status':
        return reply(200, JSON.stringify(reg.status(r.region)));
      case 'unregister':
        reg.unregister(r.region);
        return reply(200, '');
      case 'register': {
        reg.requireAllowed();
        if (r.region === undefined) {
          throw new ServerError('INVALID_ARG', "'region name' is necessary to register system shared memory region");
        }
        const b = registerBody(req.body);
        reg.register(r.region, b.key, b.offset, b.byteSize);
        return reply(200, '');
      }
    }
  } catch (err) {
    const info = toErrorInfo(err);
    return reply(HTTP_STATUS[info.code], JSON.stringify({ error: info.message }));
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
  const doc = parseControlJson(body);
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
