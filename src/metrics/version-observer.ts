/**
 * How the repository tells telemetry (statistics, metrics, tracing) about a
 * model version's lifecycle. Kept free of prom-client so the repository
 * depends only on this shape. A reload builds the new version beside the
 * serving one, so `loading` only prepares hooks; `loaded` makes them the
 * version's current telemetry (replacing the old one's), and a load that
 * fails simply never calls `loaded`.
 */
import type { SchedulerHooks } from '../scheduler/scheduler-hooks';

export interface VersionObserver {
  /** A version starts loading: the hooks its scheduler will report to (`decoupled`: its model_transaction_policy). */
  loading(model: string, version: number, decoupled?: boolean): SchedulerHooks;
  /** The version built with `hooks` serves now; `inflight` counts its admitted, unanswered requests. */
  loaded(model: string, version: number, hooks: SchedulerHooks, loadSecs: number, inflight: () => number): void;
  /** The version was unloaded: its statistics and series go. */
  gone(model: string, version: number): void;
}
