/**
 * Health, metadata and config rpcs, answered from the server snapshot
 * (protocol.md §2.3, §2.5, §2.8): ServerLive, ServerReady, ModelReady,
 * ServerMetadata, ModelMetadata, ModelConfig and grpc.health.v1 Check.
 * They run on the gRPC thread, against the snapshot main posts to it.
 */
import type * as grpc from '@grpc/grpc-js';
import { ServerError } from '../../core/errors';
import { modelMetadataJson } from '../model-metadata';
import { lookupModel, readyVersions } from '../../request/model-lookup';
import type { LookupFor, Resolved } from '../../request/model-lookup';
import type { ServerSnapshot } from '../../request/server-snapshot';
import { unary } from './grpc-context';
import type { GrpcContext } from './grpc-context';
import type { ModelRefMsg } from './proto-types';

/**
 * Triton parses gRPC version strings with std::stol: leading whitespace and
 * a sign are accepted, trailing garbage is ignored, no digits (or overflow)
 * fails with "stol" as the detail.
 */
export function parseGrpcVersion(text: string): string | undefined {
  if (text === '') return undefined;
  const m = /^\s*([+-]?\d+)/.exec(text);
  if (m === null || !Number.isSafeInteger(Number(m[1]))) {
    throw new ServerError(
      'INVALID_ARG',
      `failed to get model version from specified version string '${text}' (details: stol), version should be an integral value > 0`,
    );
  }
  const n = Number(m[1]);
  if (n < 0) throw new ServerError('INVALID_ARG', `invalid model version specified '${text}' , version should be an integral value > 0`);
  return String(n);
}

/** 'loaded' for inference, metadata and config; 'ready' for ModelReady (model-lookup.ts LookupFor). */
export function resolveModel(snapshot: ServerSnapshot, name: string, versionText: string, lookupFor: LookupFor = 'loaded'): Resolved {
  return lookupModel(snapshot, name, parseGrpcVersion(versionText), lookupFor);
}

export function healthHandlers(ctx: GrpcContext): grpc.UntypedServiceImplementation {
  const notExiting = (): ServerSnapshot => {
    const s = ctx.snapshot();
    if (s.exiting) throw new ServerError('UNAVAILABLE', 'Server exiting');
    return s;
  };
  return {
    ServerLive: unary(ctx, 'health', () => ({ live: notExiting().live })),
    ServerReady: unary(ctx, 'health', () => ({ ready: notExiting().ready })),
    ModelReady: unary(ctx, 'health', (req: ModelRefMsg) => {
      const s = ctx.snapshot();
      if (!s.live || s.exiting) throw new ServerError('UNAVAILABLE', 'Server not ready');
      const version = parseGrpcVersion(req.version);
      // Triton's ModelIsReady succeeds whenever the lookup fails (a model
      // never loaded, unloaded, or no READY version): `ready: false`, status OK.
      // A name that tries to leave the repository stays an error (checkModelName).
      try {
        lookupModel(s, req.name, version, 'loaded');
      } catch (err) {
        if (err instanceof ServerError && (err.code === 'NOT_FOUND' || err.code === 'UNAVAILABLE')) return { ready: false };
        throw err;
      }
      // A READY version whose instances cannot serve says why (a model's is_ready(), a stub restarting).
      lookupModel(s, req.name, version, 'ready');
      return { ready: true };
    }),
    ServerMetadata: unary(ctx, 'metadata', () => ({
      name: ctx.serverName,
      version: ctx.serverVersion,
      extensions: [...ctx.extensions],
    })),
    ModelMetadata: unary(ctx, 'metadata', (req: ModelRefMsg) => {
      const { view, version } = resolveModel(ctx.snapshot(), req.name, req.version);
      const versions = req.version !== '' ? [String(version)] : readyVersions(view);
      return JSON.parse(modelMetadataJson(view.config!, versions)) as object;
    }),
    ModelConfig: unary(ctx, 'model-config', (req: ModelRefMsg) => {
      const { view } = resolveModel(ctx.snapshot(), req.name, req.version);
      return { config: view.config };
    }),
  };
}

export function grpcHealthHandlers(ctx: GrpcContext): grpc.UntypedServiceImplementation {
  return {
    Check: unary(ctx, 'health', () => {
      const s = ctx.snapshot();
      if (s.exiting) throw new ServerError('UNAVAILABLE', 'Server exiting');
      return { status: s.ready ? 'SERVING' : 'NOT_SERVING' };
    }),
  };
}
