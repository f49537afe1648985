/**
 * Builds the instances and scheduler of one model version with every
 * server-wide collaborator a scheduler needs (telemetry, the route ensemble
 * steps take, the response cache, the rate limiter), within the load-thread
 * and retry limits. The repository manager decides what to build and when;
 * this is the one place versions are built.
 */
import type { InstanceGroupContext } from '../instances/instance-group';
import type { Logger } from '../logging/logger';
import type { VersionObserver } from '../metrics/version-observer';
import type { EnsembleServices } from '../scheduler/ensemble-scheduler';
import type { RateLimiter } from '../scheduler/rate-limiter';
import type { InferRequest, Respond } from '../core/request';
import type { ResponseCache } from '../scheduler/response-cache';
import { ensembleServices } from './ensemble-services';
import type { LoadSlots } from './load-slots';
import { loadVersion } from './model-loader';
import type { LoadedVersion, PreparedModel } from './model-loader';
import type { ModelRecord } from './model-record';
import type { ModelLocation } from './scan';

export type Route = (request: InferRequest, respond: Respond) => void;

export class VersionBuilder {
  /** Telemetry (statistics, metrics, tracing) of every version built from now on. */
  observer: VersionObserver | undefined;
  /** The route requests made inside the server (ensemble steps) take: the frontends' own. */
  route: Route | undefined;
  /** The server's response cache (--cache-config), for models with `response_cache { enable: true }`. */
  responseCache: ResponseCache | undefined;
  /** --rate-limit=execution_count (scheduler/rate-limiter.ts); absent when off. */
  rateLimiter: RateLimiter | undefined;
  private ensembles: EnsembleServices | undefined;

  constructor(
    private readonly models: Map<string, ModelRecord>,
    private readonly instanceCtx: Omit<InstanceGroupContext, 'backendConfig'>,
    private readonly log: Logger,
    /** Used for ensemble steps until setRoute is called (tests build managers without a server). */
    private readonly fallbackRoute: Route,
    private readonly reasonOf: (err: unknown) => string,
    /** The server's load slots, shared with config completion (prepareModel). */
    private readonly slots: LoadSlots,
  ) {}

  async build(prepared: PreparedModel, location: ModelLocation, version: number): Promise<LoadedVersion> {
    const started = performance.now();
    if (this.log.isVerbose(1)) {
      const groups = prepared.config.instance_group.map((g) => `${g.count} x ${g.kind}`).join(', ') || 'no instances';
      this.log.verbose(
        1,
        `model '${location.name}' version ${version}: building ${groups} with backend '${prepared.backend.name || prepared.config.platform}' from ${location.dir}/${version}/`,
      );
    }
    const hooks = this.observer?.loading(location.name, version, prepared.config.model_transaction_policy?.decoupled === true);
    const loaded = await this.slots.run(
      () =>
        loadVersion(prepared, location, version, this.instanceCtx, hooks, {
          ensemble: this.ensembleServices(),
          responseCache: this.responseCache,
          rateLimiter: this.rateLimiter,
        }),
      (n, err) => this.log.warn(`retrying load of '${location.name}' version ${version} (${n}): ${this.reasonOf(err)}`),
    );
    if (hooks) this.observer?.loaded(location.name, version, hooks, (performance.now() - started) / 1000, () => loaded.scheduler.inflightCount());
    return loaded;
  }

  /** A version's telemetry ends with it. */
  gone(model: string, version: number): void {
    this.observer?.gone(model, version);
  }

  private ensembleServices(): EnsembleServices {
    this.ensembles ??= ensembleServices(this.models, this.instanceCtx.arena, (request, respond) => (this.route ?? this.fallbackRoute)(request, respond));
    return this.ensembles;
  }
}
