/**
 * nodetron's families for the dashboard and the alerts (deploy/grafana/,
 * deploy/prometheus/), read only when scraped (collect callbacks):
 *  - nodetron_model_ready{model,version}: 1 while the version is READY, 0
 *    while it loads, failed or unloads (a model whose load failed before it
 *    had a version has version=""); a version unloaded on purpose has none.
 *  - nodetron_model_instances{model,version}: instances of the serving build.
 *  - nodetron_instance_restarts_total{model,version}: deaths of its instances
 *    that began a restart (a Python stub that crashed, an instance thread).
 *  - nodetron_thread_cpu_seconds_total{thread}: CPU of this process's
 *    threads by name (nt:http-0, nt:grpc, nt:<model>..., node's own), from
 *    /proc/self/task; Linux only.
 * The composition root hands over the repository's view (ModelStateSource);
 * metrics/ does not import the repository.
 */
import fs from 'node:fs';
import { Counter, Gauge, type Registry } from 'prom-client';
import { parseProcStat } from '../core/proc-stat';

export interface ModelStateSource {
  versions(): { model: string; version: string; ready: boolean; instances: number; restarts: number }[];
}

export function registerModelStateMetrics(registry: Registry, source: ModelStateSource): void {
  const registers = [registry];
  const labelNames = ['model', 'version'] as const;
  new Gauge({
    name: 'nodetron_model_ready',
    help: 'Whether the model version is READY (1) or not (0: loading, failed, unloading)',
    labelNames,
    registers,
    collect() {
      this.reset();
      for (const v of source.versions()) this.set({ model: v.model, version: v.version }, v.ready ? 1 : 0);
    },
  });
  new Gauge({
    name: 'nodetron_model_instances',
    help: 'Instances of the model version that serve (its instance_group counts)',
    labelNames,
    registers,
    collect() {
      this.reset();
      for (const v of source.versions()) if (v.version !== '') this.set({ model: v.model, version: v.version }, v.instances);
    },
  });
  new Counter({
    name: 'nodetron_instance_restarts_total',
    help: "Deaths of the model version's instances that began a restart (Python stubs, instance threads)",
    labelNames,
    registers,
    collect() {
      this.reset();
      for (const v of source.versions()) if (v.version !== '') this.inc({ model: v.model, version: v.version }, v.restarts);
    },
  });
}

/** CPU seconds of each thread of this process, summed by thread name; empty where /proc is not there. */
export function threadCpuSeconds(taskDir = '/proc/self/task'): Map<string, number> {
  const out = new Map<string, number>();
  let tids: string[];
  try {
    tids = fs.readdirSync(taskDir);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const { name, cpuSeconds } = parseProcStat(fs.readFileSync(`${taskDir}/${tid}/stat`, 'utf8'));
      out.set(name, (out.get(name) ?? 0) + cpuSeconds);
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

export function registerThreadCpuMetrics(registry: Registry): void {
  new Counter({
    name: 'nodetron_thread_cpu_seconds_total',
    help: 'CPU seconds (user + system) used by the threads of the server process, by thread name',
    labelNames: ['thread'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [thread, seconds] of threadCpuSeconds()) this.inc({ thread }, seconds);
    },
  });
}
