/**
 * The frontend threads that can host model instances (inline execution,
 * hosted-instance.ts): each HTTP thread registers here when it starts and
 * leaves when it dies or closes. A hosted instance watches its host: when
 * the host goes (`gone`), the instance fails what it had queued there and
 * goes on as a worker-thread instance, unless the host closed because the
 * server stops (`closing`).
 */
import type { MessagePort } from 'node:worker_threads';
import type { ReplyPeer } from './reply-rings';
import type { DoorbellHandle, RingHandle } from './ring';

/**
 * main → host thread (postMessage): load this instance and run it on your
 * event loop. Its `execute` and `stop` come on `toInstance` (made on the
 * host's bell); everything it says goes on `toMain` (protocol.ts
 * InstanceToMain, `inline` among them).
 */
export interface HostInstanceMessage {
  t: 'host_instance';
  toInstance: RingHandle;
  toMain: RingHandle;
  /** Int32 word 0: 1 while requests may run inline (main writes it). */
  gate: SharedArrayBuffer;
  /** The backend's instance module (Backend.instanceModule) and its BackendInstanceArgs. */
  backendModule: string;
  args: { config: { name: string }; version: number; instanceName: string; hosted?: boolean };
  /** --inline-execution-max-us: the probe run's limit. */
  maxUs: number;
  /** Its rings to the frontend threads (responses straight to them, reply-rings.ts), and where changes wait (read on a `peers` ring message). */
  peers: ReplyPeer[];
  peersPort: MessagePort;
  /**
   * The version has instances on threads of their own too: the host runs at
   * most one request inline per event-loop turn, and the turn's others go
   * to them through main, so a burst spreads over the cores.
   */
  oneATurn: boolean;
}

/** One frontend thread that can run instances on its event loop. */
export interface InstanceHost {
  /** Its index among the HTTP threads: instance k of a model goes to host k. */
  readonly index: number;
  readonly threadId: number;
  /** Its inbox's doorbell: rings to the instances it hosts are made on it. */
  readonly bell: DoorbellHandle;
  /** Sends a control message (the instance to start) by postMessage, with what it transfers. */
  post(msg: unknown, transfer?: MessagePort[]): void;
}

export type HostGone = (closing: boolean) => void;

interface Entry {
  host: InstanceHost;
  listeners: Set<HostGone>;
}

export class InstanceHosts {
  private readonly byIndex = new Map<number, Entry>();

  add(host: InstanceHost): void {
    this.byIndex.set(host.index, { host, listeners: new Set() });
  }

  /** The host of that index, when it is up. */
  get(index: number): InstanceHost | undefined {
    return this.byIndex.get(index)?.host;
  }

  get count(): number {
    return this.byIndex.size;
  }

  /** `listener` hears once when this host leaves; returns its removal. */
  watch(host: InstanceHost, listener: HostGone): () => void {
    const e = this.byIndex.get(host.index);
    if (e === undefined || e.host !== host) {
      queueMicrotask(() => listener(false));
      return () => undefined;
    }
    e.listeners.add(listener);
    return () => e.listeners.delete(listener);
  }

  /** True while some instance runs on this host (it watches it). */
  hosting(host: InstanceHost): boolean {
    const e = this.byIndex.get(host.index);
    return e !== undefined && e.host === host && e.listeners.size > 0;
  }

  /** The host thread died (`closing` false) or closes for the server's stop (true). */
  remove(host: InstanceHost, closing: boolean): void {
    const e = this.byIndex.get(host.index);
    if (e === undefined || e.host !== host) return;
    this.byIndex.delete(host.index);
    for (const l of e.listeners) l(closing);
  }
}
