/**
 * `GET /v2/nodetron/status` (main thread): what the console shows of the
 * server that no KServe route says: when it started, its options table as
 * the startup log prints it, which metric families exist (so the console
 * knows whether percentiles can be drawn), and each loaded version's
 * instances with why they cannot serve and how often they were restarted.
 */
import type { ServerOptions } from '../../cli-options';
import { optionsTableRows } from '../../logging/table';
import type { InstanceHealth } from '../../repository/model-lifecycle';

export interface StatusSource {
  options: ServerOptions;
  startedMs: number;
  instances: () => { model: string; version: number; instances: InstanceHealth[] }[];
  /** Latency families of /metrics (metrics-config.ts): summaries give the console p50/p99. */
  metrics: { enabled: boolean; summaries: boolean };
}

export function consoleStatus(s: StatusSource, nowMs = Date.now()): unknown {
  return {
    started: new Date(s.startedMs).toISOString(),
    uptime_s: Math.max(0, Math.round((nowMs - s.startedMs) / 1000)),
    model_control_mode: s.options.modelControlMode,
    options: optionsTableRows(s.options),
    metrics: s.metrics,
    instances: s.instances(),
  };
}
