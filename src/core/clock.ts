/**
 * One clock for every thread: wall-clock nanoseconds as a JS number
 * (performance.timeOrigin differs per thread, so timeOrigin + now() is the
 * value comparable across threads). Precision is about a microsecond.
 */
import { performance } from 'node:perf_hooks';

export function nowNs(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1e6);
}

export function nowUs(): number {
  return (performance.timeOrigin + performance.now()) * 1e3;
}
