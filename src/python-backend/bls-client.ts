/**
 * BLS requests of one stub: copy the request's inputs out of the stub's
 * region into the arena, send it into the server through the gateway (so it
 * goes through the target model's scheduler like any client request), and
 * stream each response back into the stub's h2s region.
 */
import type { CancelInfer } from '../backends/backend';
import { toErrorInfo } from '../core/errors';
import { paramsJson, type InferResponse, type ParamValue, type TensorRef } from '../core/request';
import type { StubHostServices } from './host-services';
import type { BlsRequest, ShmTensor } from './ipc-protocol';
import { readTensors } from './request-wire';
import type { StubProcess } from './stub-process';
import { fromWire, paramsFromWire, type WireValue } from './wire-int';

export class BlsClient {
  private gone = false;
  /** The stub's calls still open (by its call id): how to cancel each. */
  private readonly open = new Map<number, CancelInfer>();

  constructor(
    private readonly stub: StubProcess,
    private readonly services: StubHostServices,
  ) {}

  /** The stub died: responses still coming are dropped (their arena blocks freed), and its open calls cancelled. */
  stubGone(): void {
    this.gone = true;
    // Nobody waits for those calls any more: cancel them where they are.
    const open = [...this.open.values()];
    this.open.clear();
    for (const cancel of open) cancel();
  }

  /** The stub called `.cancel()` on call `id`'s response iterator: the request is cancelled where it is. */
  cancel(id: number): void {
    this.open.get(id)?.();
  }

  run(m: BlsRequest): void {
    const arena = this.services.arena;
    let inputs: TensorRef[];
    try {
      inputs = readTensors(m.request.inputs, arena, this.stub.s2h);
    } catch (err) {
      this.reply(m.id, { outputs: [], error: toErrorInfo(err), final: true });
      return;
    } finally {
      this.stub.send({ t: 'release', offsets: m.request.inputs.map((t) => t.offset) });
    }
    const gateway = this.services.gateway;
    if (gateway === undefined) {
      for (const t of inputs) arena.free(t);
      this.reply(m.id, { outputs: [], error: { code: 'UNSUPPORTED', message: 'BLS is not available in this server' }, final: true });
      return;
    }
    const r = m.request;
    let custom: Record<string, ParamValue> = {};
    try {
      custom = paramsFromWire(JSON.parse(r.parameters) as Record<string, WireValue>); // the stub tags ints past 2^53
    } catch {
      custom = {};
    }
    const parameters: Record<string, ParamValue> = { ...custom };
    const correlationId = fromWire(r.correlation_id);
    if (correlationId !== 0 && correlationId !== '') parameters['sequence_id'] = correlationId;
    if ((r.flags & 1) !== 0) parameters['sequence_start'] = true;
    if ((r.flags & 2) !== 0) parameters['sequence_end'] = true;
    if (r.timeout > 0) parameters['timeout'] = r.timeout;
    let finished = false;
    const cancel = gateway.infer(
      {
        model: m.model,
        version: m.version,
        id: r.id,
        inputs,
        requestedOutputs: r.requested_outputs.length > 0 ? r.requested_outputs : null,
        parameters,
        decoupled: m.decoupled,
      },
      (response) => {
        if (response.final) {
          finished = true;
          this.open.delete(m.id);
          for (const t of inputs) arena.free(t);
        }
        this.reply(m.id, response);
      },
    );
    if (!finished) this.open.set(m.id, cancel);
  }

  /** Outputs into h2s (the stub releases them), arena blocks freed. */
  private reply(id: number, response: InferResponse): void {
    const arena = this.services.arena;
    if (this.gone || this.stub.exited) {
      for (const o of response.outputs) arena.free(o);
      return;
    }
    const outputs: ShmTensor[] = [];
    let error = response.error;
    try {
      for (const o of response.outputs) {
        const offset = this.stub.h2s.write(arena.bytes(o.offset, o.byteSize));
        outputs.push({ name: o.name, datatype: o.datatype, shape: o.shape, offset, size: o.byteSize });
      }
    } catch (err) {
      for (const o of outputs) this.stub.h2s.release(o.offset);
      outputs.length = 0;
      error = toErrorInfo(err);
    } finally {
      for (const o of response.outputs) arena.free(o);
    }
    this.stub.send({
      t: 'bls_response',
      id,
      final: response.final,
      outputs: error === undefined ? outputs : [],
      ...(error !== undefined ? { error } : {}),
      ...(response.parameters !== undefined ? { parameters: paramsJson(response.parameters) } : {}),
    });
  }
}
