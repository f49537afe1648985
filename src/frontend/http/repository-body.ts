/**
 * HTTP bodies of the repository extension (protocol.md §1.10) into the
 * transport-neutral requests of repository-api.ts, with Triton's HTTP texts:
 * every load parameter must be a JSON string, `file:` values are base64,
 * other keys are refused; `ready` and `unload_dependents` are booleans.
 */
import { ServerError } from '../../core/errors';
import type { LoadRequest, UnloadRequest } from '../../repository/load-request';
import { parseControlJson } from './request-json';

function parseBody(body: string): Record<string, unknown> | undefined {
  if (body.trim() === '') return undefined;
  const doc = parseControlJson(body);
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw new ServerError('INVALID_ARG', 'the request body must be a JSON object');
  }
  return doc as Record<string, unknown>;
}

function parameters(doc: Record<string, unknown> | undefined): Record<string, unknown> {
  const p = doc?.parameters;
  if (p === undefined) return {};
  if (p === null || typeof p !== 'object' || Array.isArray(p)) {
    throw new ServerError('INVALID_ARG', "Expected 'parameters' to be a JSON object");
  }
  return p as Record<string, unknown>;
}

/** `{"ready": <bool>}` (optional). */
export function parseIndexBody(body: string): { ready: boolean } {
  const doc = parseBody(body);
  const ready = doc?.ready;
  if (ready === undefined) return { ready: false };
  if (typeof ready !== 'boolean') throw new ServerError('INVALID_ARG', "Invalid value for 'ready': expected a boolean");
  return { ready };
}

/** `{"parameters": {"config": "<json>", "file:<path>": "<base64>"}}` (optional). */
export function parseLoadBody(body: string): LoadRequest {
  const req: LoadRequest = { files: [] };
  for (const [key, value] of Object.entries(parameters(parseBody(body)))) {
    if (typeof value !== 'string') throw new ServerError('INTERNAL', 'attempt to access JSON non-string as string');
    if (key === 'config') {
      req.config = value;
    } else if (key.startsWith('file:')) {
      req.files.push({ path: key.slice('file:'.length), data: Buffer.from(value, 'base64') });
    } else {
      throw new ServerError('INTERNAL', 'unexpected error on creating Triton parameter');
    }
  }
  return req;
}

/**
 * `{"parameters": {"unload_dependents": <bool>}}` (optional). Triton ignores a
 * non-bool value (the model is unloaded without dependents); so do we.
 */
export function parseUnloadBody(body: string): UnloadRequest {
  const v = parameters(parseBody(body)).unload_dependents;
  return { unloadDependents: v === true };
}
