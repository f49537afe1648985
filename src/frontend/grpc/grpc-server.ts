/**
 * The grpc-js server of the gRPC thread (grpc-thread.ts): Triton's
 * GRPCInferenceService and grpc.health.v1 Health from our protos, bound per
 * the --grpc-* flags (protocol.md §2.1, §6.3). Health, metadata, config and
 * inference are answered here; the control rpcs come in as `forwarded`
 * handlers (control-forward.ts) that the main thread answers.
 *
 * Stop is two verbs: graceful (refuse new inferences, end idle streams,
 * tryShutdown waits for calls in flight) and, after a timeout, forced.
 */
import fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import type { ServerOptions } from '../../cli-options';
import { ServerError, socketInUseText } from '../../core/errors';
import { MAX_METADATA_BYTES, callGuard } from './call-guard';
import { AcceptedEncodings } from './response-compression';
import type { GrpcContext } from './grpc-context';
import { loadProtos } from './grpc-protos';
import { grpcHealthHandlers, healthHandlers } from './health-handlers';
import { modelInferHandler, modelStreamInferHandler } from './infer-handlers';
import type { StreamRegistry } from './infer-handlers';
import { reportRefused } from './infer-runner';
import { BearerTokens } from '../../core/bearer-tokens';
import { GrpcListener, type ListenerTls } from './grpc-listener';

const INT32_MAX = 2147483647;
/** The health rpcs --auth-exempt-health lets through without a token (a load balancer's probes). */
const HEALTH_PATHS: ReadonlySet<string> = new Set([
  '/inference.GRPCInferenceService/ServerLive',
  '/inference.GRPCInferenceService/ServerReady',
  '/grpc.health.v1.Health/Check',
  '/grpc.health.v1.Health/Watch',
]);
const INFER_PATHS = new Set(['/inference.GRPCInferenceService/ModelInfer', '/inference.GRPCInferenceService/ModelStreamInfer']);

/** Channel arguments from the flags. grpc-js servers honour keepalive time/timeout and connection age; the rest are passed as Triton sets them. */
export function channelOptions(o: ServerOptions): grpc.ChannelOptions {
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
  if (o.grpcMaxConcurrentStreams > 0) opts['grpc.max_concurrent_streams'] = o.grpcMaxConcurrentStreams;
  if (o.grpcMaxConnectionIdleMs > 0) opts['grpc.max_connection_idle_ms'] = o.grpcMaxConnectionIdleMs;
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

/** The port's TLS files (--grpc-use-ssl), read; undefined without TLS. */
export function serverTls(o: ServerOptions): ListenerTls | undefined {
  if (!o.grpcUseSsl) return undefined;
  const cert = readPem('grpc-server-cert', o.grpcServerCert);
  const key = readPem('grpc-server-key', o.grpcServerKey);
  const ca = o.grpcUseSslMutual || (o.grpcRootCert ?? '') !== '' ? readPem('grpc-root-cert', o.grpcRootCert) : null;
  return { cert, key, ca, mutual: o.grpcUseSslMutual };
}

export function serverCredentials(tls: ListenerTls | undefined): grpc.ServerCredentials {
  if (tls === undefined) return grpc.ServerCredentials.createInsecure();
  return grpc.ServerCredentials.createSsl(tls.ca, [{ private_key: tls.key, cert_chain: tls.cert }], tls.mutual);
}

/** `host:port`, with IPv6 literals bracketed. */
export function bindAddress(address: string, port: number): string {
  const host = address.includes(':') && !address.startsWith('[') ? `[${address}]` : address;
  return `${host}:${port}`;
}

export class GrpcServer {
  private readonly server: grpc.Server;
  private readonly ctx: GrpcContext;
  private readonly streams = new Set<{ endIfIdle(): void }>();
  private stopping = false;
  private stopped: Promise<boolean> | undefined;
  private settleStop: ((forced: boolean) => void) | undefined;
  private forceTimer: NodeJS.Timeout | undefined;
  private forceAt = Infinity;
  /** Each request stream's grpc-accept-encoding, for response compression. */
  private readonly accepted = new AcceptedEncodings();
  /** The port's socket and its connection count (--grpc-max-connections). */
  private readonly listener: GrpcListener;

  /** `testCrash`: the `grpc-crash` fault (GrpcThreadData.faults). */
  constructor(deps: Omit<GrpcContext, 'stopping'>, forwarded: grpc.UntypedServiceImplementation, testCrash = false) {
    const protos = loadProtos();
    this.ctx = { ...deps, stopping: () => this.stopping };
    const listener = new GrpcListener(deps.options.grpcMaxConnections, deps.warn);
    this.listener = listener;
    const level = deps.options.grpcInferResponseCompressionLevel;
    const guard = callGuard({
      maxMetadataBytes: MAX_METADATA_BYTES,
      responseCompression: level === 'none' ? undefined : { level, paths: INFER_PATHS, accepted: this.accepted },
      requestTypes: protos.requestTypes,
      ...(deps.options.grpcAuthTokens !== undefined
        ? { auth: { tokens: new BearerTokens(deps.options.grpcAuthTokens), exempt: deps.options.authExemptHealth ? HEALTH_PATHS : new Set<string>() } }
        : {}),
      // --log-access: an inference the guard refuses is logged like one the handlers refuse.
      onRefused: (path, status, call, malformed) => {
        if (this.ctx.access === undefined || !INFER_PATHS.has(path)) return;
        reportRefused(this.ctx, call.getPeer(), malformed, undefined, status.code);
      },
    });
    this.server = new grpc.Server({ ...channelOptions(deps.options), interceptors: [guard] });
    const registry: StreamRegistry = { add: (s) => this.streams.add(s), remove: (s) => this.streams.delete(s) };
    const health = healthHandlers(this.ctx);
    if (testCrash) health.ServerLive = crashOnMetadata(health.ServerLive as grpc.handleUnaryCall<unknown, unknown>);
    this.server.addService(protos.inference, {
      ...forwarded,
      ...health,
      ModelInfer: modelInferHandler(this.ctx),
      ModelStreamInfer: modelStreamInferHandler(this.ctx, registry),
    });
    this.server.addService(protos.health, grpcHealthHandlers(this.ctx));
    // grpcurl list / describe without the proto files; the guard's bearer tokens cover it as any other call.
    if (deps.options.grpcReflection) new ReflectionService(protos.definition).addToServer(this.server);
  }

  /** Binds `address:port` (0 = any free port) and resolves with the bound port. */
  bind(address: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      let tls: ListenerTls | undefined;
      let credentials: grpc.ServerCredentials;
      try {
        tls = serverTls(this.ctx.options);
        credentials = serverCredentials(tls);
      } catch (err) {
        reject(err);
        return;
      }
      this.listener.listen(this.server, credentials, tls, address, port).then(
        (bound) => {
          const level = this.ctx.options.grpcInferResponseCompressionLevel;
          if (level !== 'none' && !this.accepted.watch(this.server)) {
            process.emitWarning(
              `--grpc-infer-response-compression-level=${level}: this @grpc/grpc-js does not keep its http2 servers ` +
                "where nodetron reads the clients' grpc-accept-encoding, so inference responses go uncompressed",
            );
          }
          resolve(bound);
        },
        (err: NodeJS.ErrnoException) => reject(listenError(err, address, port)),
      );
    });
  }

  /**
   * Graceful stop, forced after `timeoutMs`; resolves with whether it had to
   * be forced (calls still open were cut). Idempotent; a later call with a
   * sooner end (a forced stop: 0) brings the force forward.
   */
  stop(timeoutMs: number): Promise<boolean> {
    const forceAt = Date.now() + Math.max(0, timeoutMs);
    if (this.stopped !== undefined) {
      if (forceAt < this.forceAt) this.armForce(forceAt);
      return this.stopped;
    }
    this.stopped = new Promise<boolean>((resolve) => {
      this.stopping = true;
      this.settleStop = resolve;
      this.listener.stopListening();
      for (const s of [...this.streams]) s.endIfIdle();
      this.armForce(forceAt);
      this.server.tryShutdown(() => {
        if (this.forceTimer !== undefined) clearTimeout(this.forceTimer);
        resolve(false);
      });
    });
    return this.stopped;
  }

  private armForce(at: number): void {
    this.forceAt = at;
    if (this.forceTimer !== undefined) clearTimeout(this.forceTimer);
    this.forceTimer = setTimeout(
      () => {
        this.server.forceShutdown();
        this.settleStop?.(true);
      },
      Math.max(0, at - Date.now()),
    );
  }

  /** Closes the port and every connection now (a dying thread). */
  forceShutdown(): void {
    this.stopping = true;
    this.listener.stopListening();
    this.server.forceShutdown();
  }
}

/** Triton's text for a port in use (as HTTP's, listen-socket.ts), else node's. */
function listenError(err: NodeJS.ErrnoException, address: string, port: number): Error {
  if (err.code === 'EADDRINUSE') return new ServerError('UNAVAILABLE', socketInUseText(bindAddress(address, port)));
  return err;
}

function crashOnMetadata(handler: grpc.handleUnaryCall<unknown, unknown>): grpc.handleUnaryCall<unknown, unknown> {
  return (call, callback) => {
    if (call.metadata.get('nodetron-test-crash').length === 0) return handler(call, callback);
    setImmediate(() => {
      throw new Error('fault injected: ServerLive with nodetron-test-crash (NODETRON_TEST_FAULTS=grpc-crash)');
    });
  };
}
