/**
 * Server-wide CPU families (protocol.md §5.3): utilisation from /proc/stat
 * (busy share of the jiffies since the previous sample) and RAM from
 * /proc/meminfo (used = MemTotal - MemAvailable), refreshed every
 * --metrics-interval-ms. Parsing is pure and table-tested; off Linux the
 * readers return undefined and the gauges stay at 0.
 */
import fs from 'node:fs';
import type { ServerFamilies } from './metric-families';

export interface CpuTimes {
  busy: number;
  total: number;
}

/** The aggregate `cpu` line of /proc/stat. */
export function parseProcStat(text: string): CpuTimes | undefined {
  const line = text.split('\n').find((l) => l.startsWith('cpu '));
  if (line === undefined) return undefined;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  if (v.length < 4 || v.some((x) => !Number.isFinite(x))) return undefined;
  // user nice system idle iowait irq softirq steal [guest guest_nice]; guest
  // time is already inside user/nice, so only the first eight count.
  const fields = v.slice(0, 8);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { busy: total - idle, total };
}

export function utilization(prev: CpuTimes, next: CpuTimes): number {
  const dt = next.total - prev.total;
  if (dt <= 0) return 0;
  return Math.min(1, Math.max(0, (next.busy - prev.busy) / dt));
}

/** Bytes from /proc/meminfo's kB values. */
export function parseMeminfo(text: string): { total: number; used: number } | undefined {
  const kb = (key: string): number | undefined => {
    const m = new RegExp(`^${key}:\\s+(\\d+)\\s*kB`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : undefined;
  };
  const total = kb('MemTotal');
  const available = kb('MemAvailable') ?? kb('MemFree');
  if (total === undefined || available === undefined) return undefined;
  return { total, used: Math.max(0, total - available) };
}

function read(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** Samples now and every `intervalMs`; stop() ends the timer. */
export class CpuMetricsPoller {
  private prev: CpuTimes | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly families: ServerFamilies,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.sample();
    if (this.intervalMs > 0) {
      this.timer = setInterval(() => this.sample(), this.intervalMs);
      this.timer.unref();
    }
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private sample(): void {
    const stat = read('/proc/stat');
    const times = stat === undefined ? undefined : parseProcStat(stat);
    if (times !== undefined) {
      if (this.prev !== undefined) this.families.cpuUtilization.set(utilization(this.prev, times));
      this.prev = times;
    }
    const info = read('/proc/meminfo');
    const mem = info === undefined ? undefined : parseMeminfo(info);
    if (mem !== undefined) {
      this.families.cpuMemoryTotal.set(mem.total);
      this.families.cpuMemoryUsed.set(mem.used);
    }
  }
}
