/**
 * The model instances this HTTP thread hosts (instances/hosted-instance.ts
 * is main's side). Each one runs on this thread's event loop:
 * - `execute` batches the scheduler sends on its ring, one at a time, as an
 *   instance thread runs them (instances/instance-runner.ts);
 * - and, between them, a request that arrives here for its version, run at
 *   once (`tryRun`) while it is idle, nothing it was sent waits, and main
 *   keeps its gate open. The handler answers that request itself; main is
 *   told only what the statistics need (`inline`, on the same ring as
 *   `executed`, rung lazily: RingWriter.sendLazy).
 * Before it serves, probe runs at the model's full batch are timed; one
 * that is over --inline-execution-max-us is `declined` (main starts the
 * instance on a thread of its own), so a long run never holds this event loop.
 */
import type { BackendInstance, BackendInstanceArgs, CreateBackendInstance } from '../../backends/backend';
import { nowNs } from '../../core/clock';
import { fixedByteSize, configTypeToDataType } from '../../core/datatypes';
import { toErrorInfo } from '../../core/errors';
import { executionFailedMessage, type InferRequest, type InferResponse, type TensorRef } from '../../core/request';
import type { Arena } from '../../dataplane/arena';
import type { HostInstanceMessage } from '../../dataplane/instance-hosts';
import type { ExecuteMessage, InlineMessage, InstanceToMain, MainToInstance } from '../../dataplane/protocol';
import { type Inbox, RingWriter } from '../../dataplane/ring';
import { NONE_CANCELLED, runBatch, runBatchWithout, type BatchOutcome } from '../../instances/instance-runner';
import { ReplyRoutes } from '../../dataplane/reply-routes';
import { releaseOutputs } from '../../request/admit-request';

interface Hosted {
  name: string;
  model: string;
  key: string;
  backend: BackendInstance;
  gate: Int32Array;
  toMain: RingWriter;
  ring: HostInstanceMessage['toInstance'];
  /** An execution (inline or sent) is running: its promise has not settled. */
  busy: boolean;
  /** Batches main sent that wait for the running one. */
  queue: ExecuteMessage[];
  /** Requests of waiting batches that were cancelled (`cancel_in_batch`), by batchId: answered CANCELLED, not run. */
  cancels: Map<number, Set<number>>;
  /** `stop` came: finalize once idle. */
  stopping: boolean;
  /** HostInstanceMessage.oneATurn. */
  oneATurn: boolean;
  /** Its rings to the frontend threads: responses of the batches main sent go straight to theirs. */
  routes: ReplyRoutes;
  /** It ran a request inline in this event-loop turn (reset in the turn's check phase). */
  ranThisTurn: boolean;
}

/**
 * Probe runs, PROBE_GAP_MS apart, after one that warms the session up: the model
 * qualifies once PROBE_UNDER runs took at most the limit, and is declined
 * once PROBE_OVER took longer (or after PROBE_MAX runs). Counting runs, not
 * averaging them, keeps a busy moment (other models load on the same cores
 * at start) from deciding either way.
 */
const PROBE_UNDER = 3;
const PROBE_OVER = 10;
const PROBE_MAX = 40;
/** Between probe runs: a busy moment of the cores passes, and the thread serves what came meanwhile. */
const PROBE_GAP_MS = 2;

/**
 * The ring to main for an inline run's statistics rings within this many ms
 * (RingWriter.sendLazy): main wakes once per burst of them, not per request;
 * under main's 50 ms safety poll.
 */
const INLINE_STATS_RING_MS = 10;

export class HostedInstances {
  private readonly byVersion = new Map<string, Hosted[]>();

  constructor(
    private readonly arena: Arena,
    private readonly inbox: Inbox,
  ) {}

  /** main's `host_instance`: load the backend, probe it, then serve (or decline). */
  host(msg: HostInstanceMessage): void {
    const toMain = RingWriter.attach(msg.toMain, { deferBell: true });
    const send = (m: InstanceToMain): void => toMain.send(m);
    void this.load(msg)
      .then((backend) =>
        this.probe(backend, msg).then((probeUs) => {
          if (probeUs > msg.maxUs) {
            send({ t: 'declined', probeUs: Math.round(probeUs) });
            return backend.finalize();
          }
          this.serve(msg, backend, toMain);
          send({ t: 'ready', probeUs: Math.round(probeUs) });
          return undefined;
        }),
      )
      .catch((err: unknown) => send({ t: 'init_failed', error: toErrorInfo(err) }));
  }

  /**
   * Runs `request` (admitted on this thread, inputs in the arena) on an idle
   * open instance of its version, or returns undefined: then it takes the
   * ring to main like any other.
   */
  tryRun(request: InferRequest): Promise<InferResponse> | undefined {
    const list = this.byVersion.get(versionKey(request.model, request.version));
    if (list === undefined) return undefined;
    for (const h of list) {
      if (h.busy || h.stopping || h.ranThisTurn || h.queue.length > 0 || Atomics.load(h.gate, 0) !== 1) continue;
      h.busy = true;
      if (h.oneATurn) {
        h.ranThisTurn = true;
        setImmediate(() => {
          h.ranThisTurn = false;
        });
      }
      return runBatch(h.backend, [request], this.arena).then((outcome) => {
        h.busy = false;
        const response = inlineResponse(h, request, outcome);
        const run: InlineMessage = {
          t: 'inline',
          id: request.id,
          batchSize: request.batchSize,
          queueStartNs: request.arrivalNs,
          endNs: nowNs(),
          ok: response.error === undefined,
          timings: outcome.timings,
        };
        // Main needs it only when it reads statistics, and drains its rings first then (http-frontend.ts answerControl, grpc-frontend.ts, Observability.settle).
        h.toMain.sendLazy(run, INLINE_STATS_RING_MS);
        this.pump(h);
        return response;
      });
    }
    return undefined;
  }

  /** The thread closes (the server stops): every instance finalizes here, none is left running. */
  async closeAll(): Promise<void> {
    const all = [...this.byVersion.values()].flat();
    this.byVersion.clear();
    await Promise.all(
      all.map(async (h) => {
        this.inbox.remove(h.ring);
        try {
          await h.backend.finalize();
        } catch {
          // finalizing at exit: nothing left to tell
        }
      }),
    );
  }

  private load(msg: HostInstanceMessage): Promise<BackendInstance> {
    const mod = require(msg.backendModule) as { createBackendInstance: CreateBackendInstance };
    return mod.createBackendInstance(msg.args as BackendInstanceArgs);
  }

  /** A run over zero-filled inputs at the model's full batch, µs: the shortest, or one over the limit when it is declined. */
  private async probe(backend: BackendInstance, msg: HostInstanceMessage): Promise<number> {
    const config = (msg.args as BackendInstanceArgs).config;
    const batch = config.max_batch_size > 0 ? config.max_batch_size : 0;
    const inputs: TensorRef[] = [];
    try {
      for (const i of config.input) {
        const datatype = configTypeToDataType(i.data_type);
        if (datatype === '<invalid>' || datatype === 'BYTES') return Infinity;
        const shape = batch > 0 ? [batch, ...i.dims] : [...i.dims];
        const byteSize = fixedByteSize(datatype, shape);
        const { offset, gen } = this.arena.alloc(byteSize);
        inputs.push({ name: i.name, datatype, shape, offset, gen, byteSize });
        this.arena.bytes(offset, byteSize).fill(0);
      }
      const request: InferRequest = {
        id: '',
        model: config.name,
        version: msg.args.version,
        latest: false,
        batchSize: Math.max(1, batch),
        inputs,
        requestedOutputs: null,
        parameters: {},
        arrivalNs: nowNs(),
      };
      let under = 0;
      let over = 0;
      let best = Infinity;
      let bestOver = Infinity;
      for (let run = 0; run <= PROBE_MAX && under < PROBE_UNDER && over < PROBE_OVER; run++) {
        const outcome = await runBatch(backend, [request], this.arena);
        if (outcome.responses === undefined) return Infinity;
        for (const r of outcome.responses) releaseOutputs(this.arena, r.outputs);
        const us = (outcome.timings.computeEndNs - outcome.timings.computeStartNs) / 1000;
        if (run > 0) {
          if (us <= msg.maxUs) under++;
          else {
            over++;
            bestOver = Math.min(bestOver, us);
          }
          best = Math.min(best, us);
        }
        await new Promise((r) => setTimeout(r, PROBE_GAP_MS));
      }
      // Declined: the shortest of the runs over the limit (main logs it).
      return under >= PROBE_UNDER ? best : bestOver;
    } finally {
      for (const t of inputs) this.arena.free(t);
    }
  }

  private serve(msg: HostInstanceMessage, backend: BackendInstance, toMain: RingWriter): void {
    const model = msg.args.config.name;
    const h: Hosted = {
      name: msg.args.instanceName,
      model,
      key: versionKey(model, msg.args.version),
      backend,
      gate: new Int32Array(msg.gate),
      toMain,
      ring: msg.toInstance,
      busy: false,
      queue: [],
      cancels: new Map(),
      stopping: false,
      oneATurn: msg.oneATurn,
      ranThisTurn: false,
      routes: new ReplyRoutes(this.arena, msg.peers, msg.peersPort),
    };
    let list = this.byVersion.get(h.key);
    if (list === undefined) this.byVersion.set(h.key, (list = []));
    list.push(h);
    this.inbox.add(msg.toInstance, (m: MainToInstance) => {
      if (m.t === 'execute') h.queue.push(m);
      else if (m.t === 'cancel_in_batch') {
        // Only a batch that has not started yet can leave a request unrun.
        if (h.queue.some((b) => b.batchId === m.batchId)) {
          let set = h.cancels.get(m.batchId);
          if (set === undefined) h.cancels.set(m.batchId, (set = new Set()));
          set.add(m.index);
        }
      } else if (m.t === 'stop') h.stopping = true;
      else if (m.t === 'peers') h.routes.refresh();
      this.pump(h);
    });
  }

  /** Runs the next batch main sent, or finalizes a stopping instance once idle. */
  private pump(h: Hosted): void {
    if (h.busy) return;
    const next = h.queue.shift();
    if (next !== undefined) {
      h.busy = true;
      const cancelled = h.cancels.get(next.batchId) ?? NONE_CANCELLED;
      h.cancels.delete(next.batchId);
      void runBatchWithout(h.backend, next.requests, cancelled, this.arena).then((outcome) => {
        h.busy = false;
        if (outcome.responses !== undefined && next.replyTo !== undefined) h.routes.deliverAll(next.requests, outcome.responses, next.replyTo);
        h.toMain.send(
          outcome.responses === undefined
            ? { t: 'execute_failed', batchId: next.batchId, error: outcome.error!, timings: outcome.timings }
            : { t: 'executed', batchId: next.batchId, responses: outcome.responses, timings: outcome.timings },
        );
        this.pump(h);
      });
      return;
    }
    if (h.stopping) this.finish(h);
  }

  private finish(h: Hosted): void {
    const list = this.byVersion.get(h.key);
    const at = list?.indexOf(h) ?? -1;
    if (at < 0) return;
    list!.splice(at, 1);
    if (list!.length === 0) this.byVersion.delete(h.key);
    this.inbox.remove(h.ring);
    // The writer is not closed: that would drop the bell this turn still owes main.
    void h.backend
      .finalize()
      .catch(() => undefined)
      .then(() => h.toMain.send({ t: 'stopped' }));
  }
}

function versionKey(model: string, version: number): string {
  return `${model}\u0000${version}`;
}

/** The request's response, or the error the execution pool words for a failed batch. */
function inlineResponse(h: Hosted, request: InferRequest, outcome: BatchOutcome): InferResponse {
  const r = outcome.responses?.[0];
  if (r !== undefined) return r;
  const why = outcome.error?.message ?? `returned ${outcome.responses?.length ?? 0} responses for a batch of 1 request`;
  return { outputs: [], error: { code: 'INTERNAL', message: executionFailedMessage(request, h.name, why) }, final: true };
}
