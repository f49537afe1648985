/**
 * A model instance that lives in a child process (the Python backend's
 * stubs). The backend starts and talks to the process (Backend.startProcess);
 * this class supervises it: when the process dies on its own, the requests it
 * was running have already failed (the backend fails them), the death is
 * logged and a new process is started and initialized, while new batches
 * wait for it. If the restart fails, batches fail with that reason, and the
 * next batch, or a timer (1 s, doubling up to 30 s), tries again.
 *
 * From the death until a restart succeeds the instance is not ready
 * (`unready`: the backend's text, Triton's "Stub process '<instance>' is not
 * healthy.", and what is being done about it), so the model's ready probe and
 * strict server readiness say so; a live process may report itself not
 * ready too (ProcessChild.unready: a model.py is_ready()).
 */
import type { BackendInstanceArgs, ProcessChild, ProcessHostServices, StartProcessChild } from '../backends/backend';
import { ServerError, toErrorInfo } from '../core/errors';
import type { ExecuteResult, InferRequest, ReplyAddress, StreamResponse } from '../core/request';
import { failedResult } from './failed-result';
import type { ModelInstance } from './instance';

/**
 * Batches a (non-decoupled) process instance holds at once. The round trip
 * from a batch's result to the next batch reaching the stub crosses two
 * thread hand-offs (the Python host thread, then the main thread's
 * scheduler, and back), 13-100 µs each on this VM and far more when the two
 * cores are loaded; with 2 the stub sat idle between batches: add_vectors
 * JSON c=16 2109/2183/2842 req/s at depth 2, 4774/3433/4080 at 3,
 * 6667/5114/2649 at 4, alternated (bench/README.md, Python host thread).
 */
export const PROCESS_PIPELINE_DEPTH = 4;

/** The first wait before another restart after a failed one; it doubles up to RESTART_RETRY_MAX_MS. */
const RESTART_RETRY_FIRST_MS = 1000;
const RESTART_RETRY_MAX_MS = 30_000;

export class ProcessInstance implements ModelInstance {
  readonly name: string;
  /**
   * The next batches may wait in the process's pipe while one runs, so the
   * stub reads one as soon as it is done instead of after a round trip to
   * the scheduler (PROCESS_PIPELINE_DEPTH). Not for decoupled models: their
   * responses may still stream after execute() returned, and the instance
   * stays theirs until the last.
   */
  readonly pipelineDepth: number;
  /** Deaths of the process that began a restart (ModelInstance.restarts). */
  restarts = 0;
  private readonly decoupled: boolean;
  private child: ProcessChild | undefined;
  /** Set while a restart runs; batches wait on it. */
  private restarting: Promise<ProcessChild> | undefined;
  private stopped = false;
  private stopping: Promise<void> | undefined;
  /**
   * Requests cancelled before their batch reached the child (it waited for a
   * restart): told to the child as soon as the batch is given to it. Weak: a request that never comes is not kept.
   */
  private readonly cancelledEarly = new WeakSet<InferRequest>();
  private anyCancelledEarly = false;
  /** Set from a death until a restart succeeds: why the instance cannot serve. */
  private deadReason: string | undefined;
  /** The backend's words for a dead process of this instance (from the last death). */
  private deadText = '';
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelayMs = RESTART_RETRY_FIRST_MS;
  private readonly unreadyListeners: (() => void)[] = [];
  private killing: Promise<void> | undefined;

  private constructor(
    private readonly start: StartProcessChild,
    private readonly args: BackendInstanceArgs,
    private readonly services: ProcessHostServices,
  ) {
    this.name = args.instanceName;
    this.decoupled = args.config.model_transaction_policy?.decoupled === true;
    this.pipelineDepth = this.decoupled ? 1 : PROCESS_PIPELINE_DEPTH;
  }

  /** Start the process and wait until the model is initialized (or failed: the load fails). */
  static async create(start: StartProcessChild, args: BackendInstanceArgs, services: ProcessHostServices): Promise<ProcessInstance> {
    const instance = new ProcessInstance(start, args, services);
    instance.adopt(await start(args, services));
    return instance;
  }

  /**
   * `replyTo` (the pool's direct path): the host thread sends those final
   * responses straight to their frontend threads. Not for decoupled models,
   * whose non-final responses go through main and must not be overtaken.
   */
  async execute(requests: InferRequest[], stream?: StreamResponse, replyTo?: (ReplyAddress | null)[]): Promise<ExecuteResult> {
    let child = this.child;
    if (child === undefined) {
      try {
        child = await this.restart();
      } catch (err) {
        return failedResult(requests, err);
      }
    }
    const result = child.execute(requests, stream, this.decoupled ? undefined : replyTo);
    if (this.anyCancelledEarly) {
      for (const r of requests) if (this.cancelledEarly.has(r)) child.cancel?.(r);
    }
    return result;
  }

  cancel(request: InferRequest): void {
    if (this.child?.cancel?.(request) === true) return;
    this.cancelledEarly.add(request);
    this.anyCancelledEarly = true;
  }

  get unready(): string | undefined {
    if (this.stopped) return undefined;
    return this.deadReason ?? this.child?.unready;
  }

  onUnreadyChange(listener: () => void): void {
    this.unreadyListeners.push(listener);
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.stopped = true;
      if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
      if (this.restarting) await this.restarting.catch(() => undefined);
      const child = this.child;
      this.child = undefined;
      await child?.stop();
    })();
    return this.stopping;
  }

  kill(): Promise<void> {
    this.killing ??= (async () => {
      this.stopped = true;
      const child = this.child;
      this.child = undefined;
      await child?.kill();
      // A restart under way ends in stop() (this.stopped): its new process is stopped there.
    })();
    return this.killing;
  }

  private adopt(child: ProcessChild): void {
    this.child = child;
    child.onUnreadyChange?.(() => {
      if (this.child === child) this.unreadyChanged();
    });
    child.onDeath((why) => {
      if (this.child !== child) return;
      this.child = undefined;
      if (this.stopped) return;
      this.restarts++;
      this.services.log.error(`instance ${this.name} of model '${this.args.config.name}': process ${child.pid} ${why}; restarting it`);
      this.deadText = child.deadText ?? `The process of instance '${this.name}' is gone.`;
      this.setDead(`${this.deadText} (process ${child.pid} ${why}; restarting it)`);
      void this.restart().catch(() => undefined);
    });
  }

  private setDead(reason: string | undefined): void {
    if (this.deadReason === reason) return;
    this.deadReason = reason;
    this.unreadyChanged();
  }

  private unreadyChanged(): void {
    for (const l of this.unreadyListeners) l();
  }

  /** After a failed restart: try again later, unless a batch does first. */
  private retryLater(err: unknown): void {
    if (this.stopped) return;
    const delay = this.retryDelayMs;
    this.retryDelayMs = Math.min(delay * 2, RESTART_RETRY_MAX_MS);
    this.setDead(`${this.deadText} (its restart failed: ${toErrorInfo(err).message}; trying again in ${delay / 1000} s)`);
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (this.child === undefined) void this.restart().catch(() => undefined);
    }, delay);
  }

  private restart(): Promise<ProcessChild> {
    if (this.stopped) return Promise.reject(new ServerError('UNAVAILABLE', `instance ${this.name} is stopped`));
    this.restarting ??= (async () => {
      try {
        const child = await this.start(this.args, this.services);
        if (this.stopped) {
          await child.stop();
          throw new ServerError('UNAVAILABLE', `instance ${this.name} is stopped`);
        }
        this.adopt(child);
        this.services.log.info(`instance ${this.name} of model '${this.args.config.name}' restarted (pid ${child.pid})`);
        this.retryDelayMs = RESTART_RETRY_FIRST_MS;
        if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
        this.retryTimer = undefined;
        this.setDead(undefined);
        return child;
      } catch (err) {
        this.services.log.error(`instance ${this.name} of model '${this.args.config.name}' failed to restart: ${toErrorInfo(err).message}`);
        this.retryLater(err);
        throw err;
      } finally {
        this.restarting = undefined;
      }
    })();
    return this.restarting;
  }
}
