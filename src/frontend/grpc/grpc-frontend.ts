/**
 * The gRPC endpoint (@grpc/grpc-js) on the main thread: Triton's
 * GRPCInferenceService and grpc.health.v1 Health from our protos, bound per
 * the --grpc-* flags (protocol.md §2.1, §6.3). Inferences enter the same
 * central scheduler as HTTP ones (GrpcDeps.route).
 *
 * Stop is two verbs: graceful (refuse new inferences, end idle streams,
 * tryShutdown waits for calls in flight) and, after a timeout, forced.
 */
import fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { ServerError } from '../../core/errors';
import { adminHandlers } from './admin-handlers';
import { controlHandlers } from './control-handlers';
import type { GrpcContext, GrpcDeps } from './grpc-context';
import { loadProtos } from './grpc-protos';
import { grpcHealthHandlers, healthHandlers } from './health-handlers';
import { modelInferHandler, modelStreamInferHandler } from './infer-handlers';
import type { StreamRegistry } from './infer-handlers';

const INT32_MAX = 2147483647;

/** Channel arguments from the flags. grpc-js servers honour keepalive time/timeout and connection age; the rest are passed as Triton sets them. */
export function channelOptions(o: GrpcDeps['options']): grpc.ChannelOptions {
  const opts: grpc.ChannelOptions = {
    'grpc.max_receive_message_length': INT32_MAX,
    'grpc.max_send_message_length': INT32_MAX,
    'grpc.keepalive_time_ms': o.grpcKeepaliveTimeMs,
    'grpc.keepalive_timeout_ms': o.grpcKeepaliveTimeoutMs,
    'grpc.keepalive_permit_without_calls': o.grpcKeepalivePermitWithoutCalls ? 1 : 0,
    'grpc.http2.max_pings_without_data': o.grpcHttp2MaxPingsWithoutData,
    'grpc.http2.min_ping_interval_without_data_ms': o.grpcHttp2MinRecvPingIntervalWithoutDataMs,
    'grpc.http2.max_ping_strikes': o.grpcHttp2MaxPingStrikes,
    // No channelz service is exposed (Triton has none); its per-call bookkeeping is pure cost.
    'grpc.enable_channelz': 0,
  };
  if (o.grpcMaxConnectionAgeMs > 0) opts['grpc.max_connection_age_ms'] = o.grpcMaxConnectionAgeMs;
  if (o.grpcMaxConnectionAgeGraceMs > 0) opts['grpc.max_connection_age_grace_ms'] = o.grpcMaxConnectionAgeGraceMs;
  return opts;
}

function readPem(flag: string, file: string | undefined): Buffer {
  if (file === undefined || file === '') throw new ServerError('INVALID_ARG', `--${flag} must be set when --grpc-use-ssl is true`);
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new ServerError('INVALID_ARG', `unable to read --${flag} file '${file}': ${(err as Error).message}`);
  }
}

export function serverCredentials(o: GrpcDeps['options']): grpc.ServerCredentials {
  if (!o.grpcUseSsl) return grpc.ServerCredentials.createInsecure();
  const cert = readPem('grpc-server-cert', o.grpcServerCert);
  const key = readPem('grpc-server-key', o.grpcServerKey);
  const root = o.grpcUseSslMutual || (o.grpcRootCert ?? '') !== '' ? readPem('grpc-root-cert', o.grpcRootCert) : null;
  return grpc.ServerCredentials.createSsl(root, [{ private_key: key, cert_chain: cert }], o.grpcUseSslMutual);
}

/** `host:port`, with IPv6 literals bracketed. */
export function bindAddress(address: string, port: number): string {
  const host = address.includes(':') && !address.startsWith('[') ? `[${address}]` : address;
  return `${host}:${port}`;
}

export class GrpcFrontend {
  private readonly server: grpc.Server;
  private readonly ctx: GrpcContext;
  private readonly streams = new Set<{ endIfIdle(): void }>();
  private stopping = false;
  private stopped: Promise<void> | undefined;

  constructor(deps: GrpcDeps) {
    const protos = loadProtos();
    this.ctx = { ...deps, protos, stopping: () => this.stopping };
    this.server = new grpc.Server(channelOptions(deps.options));
    const registry: StreamRegistry = { add: (s) => this.streams.add(s), remove: (s) => this.streams.delete(s) };
    this.server.addService(protos.inference, {
      ...healthHandlers(this.ctx),
      ...adminHandlers(this.ctx),
      ...controlHandlers(this.ctx),
      ModelInfer: modelInferHandler(this.ctx),
      ModelStreamInfer: modelStreamInferHandler(this.ctx, registry),
    });
    this.server.addService(protos.health, grpcHealthHandlers(this.ctx));
    if (deps.options.grpcInferResponseCompressionLevel !== 'none') {
      deps.log.warn(
        `--grpc-infer-response-compression-level=${deps.options.grpcInferResponseCompressionLevel} is ignored: ` +
          '@grpc/grpc-js servers do not compress responses (request compression from clients is supported)',
      );
    }
  }

  /** Binds the port (0 = any free port) and resolves with the bound port. */
  start(): Promise<number> {
    const o = this.ctx.options;
    const credentials = serverCredentials(o);
    return new Promise((resolve, reject) => {
      this.server.bindAsync(bindAddress(o.grpcAddress, o.grpcPort), credentials, (err, port) => {
        if (err) reject(err);
        else resolve(port);
      });
    });
  }

  /** Graceful stop, forced after `timeoutMs`. Idempotent. */
  stop(timeoutMs: number): Promise<void> {
    this.stopped ??= new Promise<void>((resolve) => {
      this.stopping = true;
      for (const s of [...this.streams]) s.endIfIdle();
      const timer = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, timeoutMs);
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    return this.stopped;
  }
}
