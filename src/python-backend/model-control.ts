/**
 * pb_utils.load_model, unload_model and is_model_ready on the host side of
 * a stub: the stub's `call` arguments checked and turned into a call of the
 * server's repository API (ModelControl, on the main thread), and the
 * failure texts worded as python_backend words them ("Failed to load model:
 * <the server's error>").
 */
import { ServerError } from '../core/errors';
import type { CallMsg } from './ipc-protocol';

/** What crosses from the host thread to main (structured clone: file bytes as Uint8Array). */
export type ModelControlCall =
  | { op: 'load'; model: string; config?: string; files: { path: string; data: Uint8Array }[] }
  | { op: 'unload'; model: string; unloadDependents: boolean }
  | { op: 'ready'; model: string; version: number };

const FAILED: Record<CallMsg['name'], string> = {
  load_model: 'Failed to load model: ',
  unload_model: 'Failed to unload model: ',
  is_model_ready: 'Failed to check model readiness: ',
};

/** python_backend's prefix on the server's error text. */
export function controlFailure(name: CallMsg['name'], message: string): string {
  return (FAILED[name] ?? `${String(name)} failed: `) + message;
}

/**
 * The stub's arguments (from _nt_model_control.py) as a call; throws
 * ServerError with the text the model sees (before its prefix).
 *   load_model:     [model, config ('' = none), {parameter name: base64 bytes}]
 *   unload_model:   [model, unload_dependents]
 *   is_model_ready: [model, version text ('' = the policy's)]
 */
export function modelControlCall(name: string, args: unknown[]): ModelControlCall {
  const model = args[0];
  if (typeof model !== 'string') throw new ServerError('INVALID_ARG', `${name}: the model name must be a string`);
  switch (name) {
    case 'load_model': {
      const config = args[1];
      const files = args[2] ?? {};
      if (typeof config !== 'string') throw new ServerError('INVALID_ARG', 'load_model: config must be a JSON string');
      if (typeof files !== 'object' || files === null || Array.isArray(files)) {
        throw new ServerError('INVALID_ARG', `failed to load model '${model}', files should be a dictionary of file paths and file contents`);
      }
      const call: ModelControlCall = { op: 'load', model, files: [] };
      if (config !== '') call.config = config;
      for (const [key, value] of Object.entries(files as Record<string, unknown>)) {
        // The keys are load parameters, as over HTTP: "file:<path in the model folder>".
        if (!key.startsWith('file:')) throw new ServerError('INVALID_ARG', `Unrecognized load parameter '${key}'.`);
        if (typeof value !== 'string') throw new ServerError('INVALID_ARG', `load_model: the content of '${key}' must be bytes`);
        call.files.push({ path: key.slice('file:'.length), data: new Uint8Array(Buffer.from(value, 'base64')) });
      }
      return call;
    }
    case 'unload_model':
      return { op: 'unload', model, unloadDependents: args[1] === true };
    case 'is_model_ready':
      return { op: 'ready', model, version: readinessVersion(String(args[1] ?? '')) };
    default:
      throw new ServerError('UNSUPPORTED', `unknown model control call '${name}'`);
  }
}

/** is_model_ready's version text: '' is -1 (the policy's); python_backend's texts otherwise. */
export function readinessVersion(text: string): number {
  if (text === '') return -1;
  const m = /^\s*([+-]?\d+)/.exec(text);
  if (m === null || !Number.isSafeInteger(Number(m[1]))) {
    throw new ServerError(
      'INVALID_ARG',
      `failed to get model version from specified version string '${text}' (details: stol), version should be an integral value > 0`,
    );
  }
  const version = Number(m[1]);
  if (version < 0) {
    throw new ServerError('INVALID_ARG', `failed to get model version from specified version string '${text}', version should be an integral value > 0`);
  }
  return version;
}
