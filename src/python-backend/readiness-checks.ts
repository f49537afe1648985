/**
 * A model.py's is_ready(self) (Triton 2.67), asked from the instance's host
 * thread. Triton calls it on each /v2/models/<m>/ready with a 5 s timeout;
 * here the frontends answer ready probes from their snapshot without asking
 * the main thread, so the check runs about once a second and its verdict goes
 * into the snapshot (ModelInstance.unready → VersionView.unready). True is
 * ready; False, an exception, a non-bool, or no answer within 5 s is not
 * ready, with Triton's "Model '<instance>' is not ready (user-defined check
 * failed)" and what happened. As in Triton one check is in flight at a
 * time: a slow one is waited for (and counted as not ready after 5 s), not
 * asked again. Inference is not affected.
 */
import type { ReadyCheckResult } from './ipc-protocol';

/** How often the check runs once the last one answered. */
export const READY_CHECK_EVERY_MS = 1000;
/** Triton's wait for is_ready() (kUserModelReadinessTimeoutMs). */
export const READY_CHECK_TIMEOUT_MS = 5000;

/** The stub end the checks need: send one, hear the result. */
export interface ReadyCheckChannel {
  send(check: { t: 'ready_check'; id: number }): void;
}

/** The verdict of one check as an `unready` reason (undefined: ready). Pure, table-tested. */
export function readyCheckVerdict(instance: string, result: { ready?: boolean; error?: string } | 'timeout'): string | undefined {
  const failed = `Model '${instance}' is not ready (user-defined check failed)`;
  if (result === 'timeout') return `${failed}: is_ready() did not return within ${READY_CHECK_TIMEOUT_MS / 1000} s`;
  if (result.error !== undefined) return `${failed}: ${result.error.trimEnd()}`;
  if (result.ready === true) return undefined;
  return `${failed}: is_ready() returned False`;
}

export class ReadinessChecks {
  private reason: string | undefined;
  private nextId = 1;
  private inFlight: { id: number; timeout: NodeJS.Timeout; first?: () => void } | undefined;
  private ticker: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly channel: ReadyCheckChannel,
    private readonly instance: string,
    private readonly onChange: (reason: string | undefined) => void,
  ) {}

  get unready(): string | undefined {
    return this.reason;
  }

  /** The first check: resolves once it answered (or timed out), so the instance starts with its verdict. */
  start(): Promise<void> {
    return new Promise((resolve) => this.ask(resolve));
  }

  /** A `ready_check_result` from the stub. */
  onResult(m: ReadyCheckResult): void {
    const f = this.inFlight;
    if (f === undefined || f.id !== m.id) return;
    clearTimeout(f.timeout);
    this.inFlight = undefined;
    this.set(readyCheckVerdict(this.instance, m));
    f.first?.();
    this.schedule();
  }

  /** The stub is gone or finalizing: no more checks (the instance's death speaks for it). */
  stop(): void {
    this.stopped = true;
    if (this.ticker !== undefined) clearTimeout(this.ticker);
    if (this.inFlight !== undefined) {
      clearTimeout(this.inFlight.timeout);
      this.inFlight.first?.();
      this.inFlight = undefined;
    }
  }

  private ask(first?: () => void): void {
    if (this.stopped) {
      first?.();
      return;
    }
    const id = this.nextId++;
    const timeout = setTimeout(() => {
      // Still in flight: not ready until it answers; no second check meanwhile.
      this.set(readyCheckVerdict(this.instance, 'timeout'));
      const f = this.inFlight;
      if (f !== undefined) {
        f.first?.();
        f.first = undefined;
      }
    }, READY_CHECK_TIMEOUT_MS);
    this.inFlight = { id, timeout, first };
    this.channel.send({ t: 'ready_check', id });
  }

  private schedule(): void {
    if (this.stopped) return;
    this.ticker = setTimeout(() => {
      this.ticker = undefined;
      this.ask();
    }, READY_CHECK_EVERY_MS);
  }

  private set(reason: string | undefined): void {
    if (reason === this.reason) return;
    this.reason = reason;
    this.onChange(reason);
  }
}
