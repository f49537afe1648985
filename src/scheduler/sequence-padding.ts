/**
 * The not-ready rows of a direct sequence batch. Triton's direct strategy
 * keeps every sequence at its own slot's row, so an execution holds a row for
 * each slot up to the highest one with a request; an idle slot below it (or
 * one whose head cannot share the batch) gets a row that is not a request of
 * any client (InferenceRequest::CopyAsNull): the same inputs as the batch's
 * lowest real row, with data the model must not read (zeros here; BYTES
 * elements empty), the control tensors of an idle slot (START, END, READY
 * false; CORRID 0 or ""), a dummy of each implicit state input, no
 * correlation id, flags or parameters, and no requested outputs. What the
 * model answers for such a row is dropped.
 *
 * The rows of one execution share one zeroed arena block and one set of
 * control tensors, freed when the last of them has had its final response.
 */
import { elementCount } from '../core/datatypes';
import type { Arena } from '../dataplane/arena';
import type { InferRequest, Respond, TensorRef } from '../core/request';
import { writeControls, type ControlPlan } from './sequence-controls';

export interface PaddingRow {
  request: InferRequest;
  /** Frees what the model answered for the row. */
  respond: Respond;
}

export class SlotPadding {
  private readonly controlNames: ReadonlySet<string>;

  constructor(
    private readonly plan: ControlPlan,
    private readonly arena: Arena,
  ) {
    this.controlNames = new Set(plan.controls.map((c) => c.name));
  }

  /**
   * `count` not-ready rows shaped like `like` (a real row of the same
   * execution, as the instance gets it: controls and state inputs included).
   * Throws (nothing left allocated) when the arena cannot hold them.
   */
  rows(like: InferRequest, count: number, nowNs: number): PaddingRow[] {
    if (count === 0) return [];
    const data = like.inputs.filter((t) => !this.controlNames.has(t.name));
    const size = Math.max(0, ...data.map(nullByteSize));
    const zero = this.arena.alloc(size);
    let controls: TensorRef[];
    try {
      controls = writeControls(this.plan, this.arena, '', false, false, false);
    } catch (err) {
      this.arena.free(zero);
      throw err;
    }
    this.arena.bytes(zero.offset, size).fill(0);
    const byName = new Map(controls.map((t) => [t.name, t]));
    const inputs = like.inputs.map((t) => {
      const control = byName.get(t.name);
      if (control !== undefined) return control;
      return { name: t.name, datatype: t.datatype, shape: [...t.shape], offset: zero.offset, gen: zero.gen, byteSize: nullByteSize(t) };
    });
    let finals = 0;
    const release = (): void => {
      if (++finals !== count) return;
      this.arena.free(zero);
      for (const t of controls) this.arena.free(t);
    };
    const out: PaddingRow[] = [];
    for (let k = 0; k < count; k++) {
      const request: InferRequest = {
        id: '',
        model: like.model,
        version: like.version,
        latest: false,
        batchSize: 1,
        inputs,
        requestedOutputs: [],
        parameters: {},
        arrivalNs: nowNs,
      };
      const respond: Respond = (r) => {
        for (const t of r.outputs) this.arena.free(t);
        if (r.final) release();
      };
      out.push({ request, respond });
    }
    return out;
  }
}

/** Bytes of an input's copy in a not-ready row: the same for fixed-size types, an empty string per element for BYTES. */
function nullByteSize(t: TensorRef): number {
  return t.datatype === 'BYTES' ? 4 * elementCount(t.shape) : t.byteSize;
}
