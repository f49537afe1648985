/**
 * Composition root: build the parts, start them in order, stop them in the
 * reverse order. Start: arena and main inbox → repository (load models) →
 * frontends. Stop (server-stop.ts, timeline in stop-plan.ts): readiness
 * non-200 while requests are still served → frontends stop accepting and
 * answer what they received → models unload (schedulers drain, instances
 * finalize) → inbox; or, forced, frontends closed and instances killed now.
 */
import { QueueBound } from './scheduler/queue-bound';
import { RateLimiter } from './scheduler/rate-limiter';
import { responseCacheFromOptions } from './scheduler/response-cache';
import { backendSettings, type ServerOptions } from './cli-options';
import { ModelLogBook } from './logging/model-log-book';
import { ServerError, toErrorInfo } from './core/errors';
import { ControlApi } from './frontend/http/control-api';
import { consoleStatus } from './frontend/http/console-status';
import { GrpcFrontend } from './frontend/grpc/grpc-frontend';
import { HttpFrontend } from './frontend/http/http-frontend';
import type { ServerSnapshot } from './request/server-snapshot';
import { ShmRegistry } from './frontend/shm-registry';
import { Arena } from './dataplane/arena';
import { detectGpuIds } from './instances/gpus';
import { MainPort } from './dataplane/main-port';
import { createLogger } from './logging/logger';
import type { Logger } from './logging/logger';
import { backendTable, formatTable, modelTable, optionsTableRows } from './logging/table';
import { abortPreparations, backendNames } from './backends/registry';
import { AccessLog } from './metrics/access-log';
import { CustomMetrics } from './metrics/custom-metrics';
import { Observability } from './metrics/observability';
import { startRepository } from './repository/control-mode';
import type { RepositoryStartup } from './repository/control-mode';
import { BlsGateway } from './python-backend/bls-gateway';
import { RepositoryManager } from './repository/repository-manager';
import { repositoryLoad, repositoryModelReady, repositoryUnload, type RepositoryApiContext } from './repository/repository-api';
import type { ModelControl } from './backends/backend';
import { checkRepositoryPaths } from './repository/repository-paths';
import { RepositoryRoots } from './repository/repository-roots';
import type { InferRequest, RefusedRequest, Respond } from './core/request';
import { SERVER_EXTENSIONS, SERVER_VERSION } from './server-info';
import { ServerStop, type StopOutcome } from './server-stop';

export interface RunningServer {
  /** Bound HTTP port (useful with --http-port=0), or 0 when HTTP is off. */
  httpPort: number;
  log: Logger;
  /**
   * Graceful stop within --exit-timeout-secs (server-stop.ts): readiness
   * non-200 at once, requests served until quiet or the grace period ends,
   * then the endpoints close and the models unload. Idempotent.
   */
  stop(): Promise<StopOutcome>;
  /** Forced stop (a second signal): endpoints closed and instances killed now. Idempotent. */
  forceStop(): Promise<void>;
}

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const log = createLogger({
    verbose: options.logVerbose,
    info: options.logInfo,
    warning: options.logWarning,
    error: options.logError,
    format: options.logFormat,
    file: options.logFile,
  });
  for (const w of options.warnings) log.warn(w);
  // A repository that cannot be read stops the server before anything starts;
  // a cloud root is read (mirrored, or its names listed in explicit mode) now.
  checkRepositoryPaths(options.modelRepositories);
  const roots = new RepositoryRoots(options.modelRepositories, options.modelCacheDir, log);
  try {
    await roots.start(options.modelControlMode, options.loadModels.includes('*'));
  } catch (err) {
    roots.close();
    throw err;
  }

  const arena = Arena.create();
  const port = new MainPort();
  port.start();
  const gpuIds = detectGpuIds();
  // BLS requests from Python models enter through `route` like client requests.
  const customMetrics = new CustomMetrics(); // pb_utils.MetricFamily of Python models
  const gateway: BlsGateway = new BlsGateway(
    arena,
    () => repo.snapshotModels(),
    (r, respond) => route(r, respond),
    (r) => cancel(r),
  );
  // pb_utils.load_model / unload_model / is_model_ready: the repository API the frontends use.
  const repositoryApi = (): RepositoryApiContext => ({ repo, mode: options.modelControlMode });
  const modelControl: ModelControl = {
    load: (model, req) => repositoryLoad(repositoryApi(), model, req),
    unload: (model, unloadDependents) => repositoryUnload(repositoryApi(), model, { unloadDependents }),
    isReady: (model, version) => repositoryModelReady(repositoryApi(), model, version),
  };
  const repo: RepositoryManager = new RepositoryManager(
    roots,
    {
      modelConfigName: options.modelConfigName,
      autoComplete: !options.disableAutoCompleteConfig,
      backendConfig: backendSettings(options),
      gpuIds,
      loadThreads: options.modelLoadThreadCount,
      loadRetries: options.modelLoadRetryCount,
    },
    { port, arena, gpuIds, processServices: { log, gateway, customMetrics, modelControl }, inlineMaxUs: options.inlineExecutionMaxUs },
    log,
  );
  repo.setResponseCache(responseCacheFromOptions(options.cacheConfig));
  if (options.rateLimit === 'execution_count') repo.setRateLimiter(new RateLimiter(options.rateLimitResources, gpuIds));
  repo.onChange(() => gateway.invalidate());
  const observability = new Observability(options, log, {
    wakeups: () => port.bells.totals(),
    arenaUsedBytes: () => arena.usedBytes(),
    directResponses: () => port.replies.delivered,
    settle: () => port.settle(),
  });
  observability.watchModels({ versions: () => repo.versionStates() });
  observability.addExposition(() => customMetrics.text());
  // --log-access: one line per client request, from the frontends' route and the scheduler hooks.
  const access = options.logAccess ? new AccessLog(log) : undefined;
  repo.setVersionObserver(access ? access.observer(observability.telemetry) : observability.telemetry);

  const state = { live: false, exiting: false };
  let http: HttpFrontend | undefined;
  let grpc: GrpcFrontend | undefined;
  // Built once per change, not per request, and posted to the frontend threads
  // (HTTP, gRPC). Every input of it invalidates it: model states
  // (repo.onChange), shm regions, live/exiting.
  let cachedSnapshot: ServerSnapshot | undefined;
  const invalidateSnapshot = (): void => {
    cachedSnapshot = undefined;
  };
  repo.onChange(invalidateSnapshot);
  const snapshot = (): ServerSnapshot =>
    (cachedSnapshot ??= {
      live: state.live,
      ready: state.live && !state.exiting && (!options.strictReadiness || repo.allReady()),
      exiting: state.exiting,
      models: repo.snapshotModels(),
      shmRegions: shm.table(),
    });
  // Region changes reach the HTTP and gRPC threads before the register/unregister reply does.
  const shm = new ShmRegistry(options.allowClientShm, () => {
    invalidateSnapshot();
    broadcast();
  });
  const broadcast = (): void => {
    if (!http && !grpc) return;
    const s = snapshot();
    http?.broadcast(s);
    grpc?.broadcast(s);
  };
  // Coalesce bursts of state changes (a load touches many versions) into one broadcast.
  let broadcastQueued = false;
  repo.onChange(() => {
    if (broadcastQueued || (!http && !grpc)) return;
    broadcastQueued = true;
    setImmediate(() => {
      broadcastQueued = false;
      broadcast();
    });
  });

  const startedMs = Date.now();
  // Every line logged about a model, kept (the last 200 each) for the console's model page.
  const modelLog = new ModelLogBook();
  log.tapModelLines((model, line) => modelLog.add(model, line));
  const control = new ControlApi({
    snapshot,
    telemetry: observability.telemetry,
    tracer: observability.tracer,
    log,
    repository: { repo, mode: options.modelControlMode },
    shm,
    ...(options.allowMetrics ? { metricsText: () => observability.exposition() } : {}),
    status: () =>
      consoleStatus({
        options,
        startedMs,
        instances: () => repo.instanceHealth(),
        metrics: { enabled: options.allowMetrics, summaries: observability.summaries },
      }),
    modelLog: (model, after) => modelLog.lines(model, after),
  });

  // Every request's version is chosen here, at enqueue, and its gate admits or refuses it.
  const route = (request: InferRequest, respond: Respond): void => repo.route(request, respond);
  repo.setRoute(route); // ensemble steps enter like client requests
  // A request `route` took is cancelled here: its client went away or cancelled it, or its BLS caller did.
  const cancel = (request: InferRequest): void => repo.cancel(request);
  // Client requests (not ensemble steps or BLS) count against --max-queued-requests,
  // and their arrivals tell a stop when the traffic has gone (server-stop.ts).
  const bounded = new QueueBound(options.maxQueuedRequests).route(route);
  let lastArrivalMs = 0;
  const clientRoute = (request: InferRequest, respond: Respond): void => {
    lastArrivalMs = Date.now();
    bounded(request, respond);
  };

  let repoStartup: RepositoryStartup | undefined;
  const serverStop = new ServerStop({
    log,
    timeoutSecs: options.exitTimeoutSecs,
    quietMs: options.exitQuietMs,
    announce: () => {
      state.exiting = true;
      invalidateSnapshot();
      broadcast();
    },
    inflight: () => repo.inflightVersions(),
    // Requests run inline on an HTTP thread never pass clientRoute (MainPort.lastInlineMs).
    lastArrivalMs: () => Math.max(lastArrivalMs, port.lastInlineMs),
    closeFrontends: async (graceMs) => {
      const [g, h] = await Promise.all([grpc?.stop(graceMs) ?? 0, http?.stop(graceMs) ?? 0]);
      return g + h;
    },
    unload: async () => {
      abortPreparations(); // a requirements.txt build in progress would hold its model's load, and the stop, for its whole time
      await repoStartup?.stop();
      await repo.unloadAll();
      repo.close();
    },
    liveModels: () => repo.liveCount(),
    killModels: () => repo.killAll(),
    finish: async () => {
      await observability.stop();
      port.stop();
      log.flush();
    },
  });
  // A start that fails stops what it started: nothing is serving yet.
  const stop = (): Promise<StopOutcome> => serverStop.stop(false);

  // The HTTP threads start before the models load, so that instances can be
  // placed on them (instances/hosted-instance.ts); they listen once the models are in.
  if (options.allowHttp) {
    http = new HttpFrontend(
      {
        threadCount: options.httpThreadCount,
        spareThreads: options.httpSpareThreads,
        address: options.httpAddress,
        port: options.httpPort,
        maxInputSize: options.httpMaxInputSize,
        edge: options.httpEdge,
        auth: {
          ...(options.httpAuthTokens !== undefined ? { http: options.httpAuthTokens } : {}),
          ...(options.openaiAuthTokens !== undefined ? { openai: options.openaiAuthTokens } : {}),
          openaiFlag:
            options.openaiAuthTokens !== undefined && options.openaiAuthTokens !== options.httpAuthTokens
              ? '--openai-auth-token-file'
              : '--http-auth-token-file',
          exemptHealth: options.authExemptHealth,
        },
        maxJsonResponseSize: options.httpMaxJsonResponseSize,
        codecOffloadBytes: options.httpCodecOffloadBytes,
        serverName: options.id,
        serverVersion: SERVER_VERSION,
        extensions: SERVER_EXTENSIONS,
        restrictedApi: options.httpRestrictedApi,
        ...(options.httpHeaderForwardPattern !== undefined ? { headerForwardPattern: options.httpHeaderForwardPattern } : {}),
        corsOrigins: options.httpCorsOrigins,
        ...(options.httpConsolePath !== undefined ? { consolePath: options.httpConsolePath } : {}),
        ...(options.openaiPort !== undefined ? { openaiPort: options.openaiPort, openaiRestrictedApi: options.openaiRestrictedApi } : {}),
        faults: testFaults(),
        log,
        control: (m) => control.http(m),
        ...(access ? { onRefused: (r: RefusedRequest) => access.refused(r) } : {}),
      },
      port,
      arena,
      access ? access.route('HTTP', clientRoute) : clientRoute,
      cancel,
    );
    http.spawnThreads(snapshot());
  }

  try {
    repoStartup = await startRepository(repo, options, log);
  } catch (err) {
    await stop(); // the HTTP threads would keep the process alive
    throw err;
  }
  log.table(
    backendTable(
      backendNames().map((name) => ({
        name,
        path: `built in (${name === 'python' ? 'src/python-backend' : `src/backends/${name}`})`,
        config: JSON.stringify({ cmdline: backendCmdline(options, name) }).replace(/,"/g, ', "'),
      })),
    ),
  );
  const modelRows = repoStartup.tableRows();
  log.table(modelTable(modelRows.map((r) => ({ name: r.model, version: r.version, status: r.status }))));
  // A reason's first line is in the table; the rest of it (a Python traceback)
  // was logged once, with the load-failure line above the tables.
  log.table(formatTable(['Option', 'Value'], optionsTableRows(options)));
  const failed = repoStartup.failed;
  if (failed.length > 0) {
    if (options.exitOnError) {
      await stop();
      throw new ServerError('INTERNAL', 'failed to load all models');
    }
    log.error('Internal: failed to load all models');
  }
  state.live = true;
  invalidateSnapshot();

  if (options.allowGrpc) {
    // Started before HTTP, as Triton does. Its thread routes over its ring to
    // this thread; the control rpcs it forwards are answered here.
    grpc = new GrpcFrontend(
      {
        options,
        log,
        serverName: options.id,
        serverVersion: SERVER_VERSION,
        extensions: SERVER_EXTENSIONS,
        control,
        repository: { repo, mode: options.modelControlMode },
        shm,
        faults: testFaults(),
        ...(access ? { onRefused: (r: RefusedRequest) => access.refused(r) } : {}),
      },
      port,
      arena,
      access ? access.route('GRPC', clientRoute) : clientRoute,
      cancel,
      snapshot,
    );
    try {
      const grpcPort = await grpc.start(snapshot());
      log.info(`Started GRPCInferenceService at ${options.grpcAddress}:${grpcPort}`);
    } catch (err) {
      await stop();
      throw new ServerError('UNAVAILABLE', `failed to start GRPC service: ${toErrorInfo(err).message}`);
    }
  }

  let httpPort = 0;
  if (http !== undefined) {
    try {
      httpPort = await http.start(snapshot());
    } catch (err) {
      await stop();
      throw new ServerError('UNAVAILABLE', `failed to start HTTP service: ${toErrorInfo(err).message}`);
    }
    log.info(`Started HTTPService at ${options.httpAddress}:${httpPort}`);
    if (options.openaiPort !== undefined) log.info(`Started OpenAI-compatible frontend at ${options.httpAddress}:${http.openaiPort}`);
  }
  try {
    await observability.startMetrics();
  } catch (err) {
    await stop();
    throw err;
  }
  return { httpPort, log, stop: () => serverStop.stop(), forceStop: () => serverStop.force() };
}

/** The backends table's Config column: Triton's cmdline settings, then --backend-config for it (and for all). */
function backendCmdline(o: ServerOptions, backend: string): Record<string, string> {
  return {
    'auto-complete-config': o.disableAutoCompleteConfig ? 'false' : 'true',
    'backend-directory': o.backendDirectory,
    'min-compute-capability': o.minSupportedComputeCapability.toFixed(6),
    'default-max-batch-size': '4',
    ...(o.backendConfig[''] ?? {}),
    ...(o.backendConfig[backend] ?? {}),
  };
}

/** NODETRON_TEST_FAULTS: comma-separated fault injections for tests (http-control.ts HttpThreadData.faults, grpc-thread-protocol.ts GrpcThreadData.faults). */
function testFaults(): string[] {
  return (process.env.NODETRON_TEST_FAULTS ?? '')
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean);
}
