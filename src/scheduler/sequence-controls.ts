/**
 * The control tensors of a sequence_batching config (protocol.md §3.7),
 * compiled once at load: which extra inputs each request of a sequence model
 * carries (START, END, READY in their int32/fp32/bool false/true forms, and
 * CORRID in its datatype), the checks on the correlation id with Triton's
 * texts, and writing one request's (or an idle slot's) control values as
 * tensors in the arena.
 */
import { configTypeToDataType, type DataType } from '../core/datatypes';
import { ServerError, requestIdPrefix } from '../core/errors';
import type { Arena } from '../dataplane/arena';
import type { ModelConfig } from '../core/model-config';
import type { CorrelationId, InferRequest, ParamValue, TensorRef } from '../core/request';

type Kind = 'CONTROL_SEQUENCE_START' | 'CONTROL_SEQUENCE_END' | 'CONTROL_SEQUENCE_READY' | 'CONTROL_SEQUENCE_CORRID';

export interface ControlTensor {
  name: string;
  kind: Kind;
  datatype: DataType;
  /** Encoded false and true values (flag controls); empty for CORRID. */
  falseBytes: Uint8Array;
  trueBytes: Uint8Array;
}

export interface ControlPlan {
  model: string;
  controls: ControlTensor[];
  /** CORRID's datatype when the config has a CORRID control. */
  corridType: DataType | null;
  /** [1, 1] for batching models, [1] otherwise. */
  shape: number[];
}

interface RawControl {
  kind?: string;
  int32_false_true?: number[];
  fp32_false_true?: number[];
  bool_false_true?: boolean[];
  data_type?: string;
}

export function compileControls(config: ModelConfig): ControlPlan {
  const sb = (config.sequence_batching ?? {}) as { control_input?: { name: string; control?: RawControl[] }[] };
  const controls: ControlTensor[] = [];
  let corridType: DataType | null = null;
  for (const input of sb.control_input ?? []) {
    for (const c of input.control ?? []) {
      const kind = (c.kind ?? 'CONTROL_SEQUENCE_START') as Kind;
      if (kind === 'CONTROL_SEQUENCE_CORRID') {
        const t = configTypeToDataType(c.data_type ?? '');
        if (t === '<invalid>') throw new ServerError('INVALID_ARG', `unexpected data type for control ${kind} for ${config.name}`);
        corridType = t;
        controls.push({ name: input.name, kind, datatype: t, falseBytes: new Uint8Array(0), trueBytes: new Uint8Array(0) });
        continue;
      }
      controls.push({ name: input.name, kind, ...flagEncoding(c) });
    }
  }
  return { model: config.name, controls, corridType, shape: config.max_batch_size > 0 ? [1, 1] : [1] };
}

function flagEncoding(c: RawControl): { datatype: DataType; falseBytes: Uint8Array; trueBytes: Uint8Array } {
  if ((c.int32_false_true ?? []).length === 2) {
    const v = new Int32Array(c.int32_false_true!);
    return { datatype: 'INT32', falseBytes: bytesOf(v.subarray(0, 1)), trueBytes: bytesOf(v.subarray(1, 2)) };
  }
  if ((c.fp32_false_true ?? []).length === 2) {
    const v = new Float32Array(c.fp32_false_true!);
    return { datatype: 'FP32', falseBytes: bytesOf(v.subarray(0, 1)), trueBytes: bytesOf(v.subarray(1, 2)) };
  }
  const b = c.bool_false_true ?? [false, true];
  return { datatype: 'BOOL', falseBytes: Uint8Array.of(b[0] ? 1 : 0), trueBytes: Uint8Array.of(b[1] ? 1 : 0) };
}

function bytesOf(v: Int32Array | Float32Array): Uint8Array {
  return new Uint8Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
}

/** The request's correlation id: a non-zero number or a non-empty string, with Triton's texts otherwise. */
export function correlationIdOf(plan: ControlPlan, req: InferRequest): CorrelationId {
  const id = req.parameters['sequence_id'];
  if (!isCorrelationId(id)) {
    throw new ServerError('INVALID_ARG', `inference request to model '${plan.model}' must specify a non-zero or non-empty correlation ID`);
  }
  checkCorridType(plan, req);
  return id;
}

/** A non-zero number or bigint, or a non-empty string: a sequence's id (0 and "" mean none). */
function isCorrelationId(id: ParamValue | undefined): id is CorrelationId {
  return (typeof id === 'number' || typeof id === 'bigint' || typeof id === 'string') && id !== 0 && id !== '';
}

/**
 * A correlation id the request carries must be of the kind the CORRID
 * control holds (string or number); Triton checks this first, when it
 * validates the request, before the sequence batcher's own checks.
 */
export function checkCorridType(plan: ControlPlan, req: InferRequest): void {
  const id = req.parameters['sequence_id'];
  if (!isCorrelationId(id)) return;
  if (plan.corridType !== null) {
    const numericControl = plan.corridType !== 'BYTES';
    if ((typeof id === 'string') === numericControl) {
      const corrid = plan.controls.find((c) => c.kind === 'CONTROL_SEQUENCE_CORRID')!;
      throw new ServerError(
        'INVALID_ARG',
        `${requestIdPrefix(req.id)}sequence batching control '${corrid.name}' data-type is '${typeof id === 'string' ? 'BYTES' : 'UINT64'}', ` +
          `but model '${plan.model}' expects '${plan.corridType}'`,
      );
    }
  }
}

/**
 * Allocates and fills the request's control tensors in the arena; the caller
 * frees them after the final response. An idle slot's row (ready false) gets
 * what Triton sends there: START, END and READY false, CORRID 0 (or "").
 */
export function writeControls(plan: ControlPlan, arena: Arena, id: CorrelationId, start: boolean, end: boolean, ready = true): TensorRef[] {
  const out: TensorRef[] = [];
  if (!ready) {
    id = '';
    start = false;
    end = false;
  }
  try {
    for (const c of plan.controls) {
      const data =
        c.kind === 'CONTROL_SEQUENCE_CORRID'
          ? corridBytes(c.datatype, id)
          : (c.kind === 'CONTROL_SEQUENCE_START' ? start : c.kind === 'CONTROL_SEQUENCE_END' ? end : ready)
            ? c.trueBytes
            : c.falseBytes;
      const { offset, gen } = arena.alloc(data.byteLength);
      out.push({ name: c.name, datatype: c.datatype, shape: [...plan.shape], offset, gen, byteSize: data.byteLength });
      arena.bytes(offset, data.byteLength).set(data);
    }
  } catch (err) {
    for (const t of out) arena.free(t);
    throw err;
  }
  return out;
}

/** CORRID's value: a uint64 control holds the id as sent; INT64 its two's complement bits; 32-bit ones its low 32 bits. */
function corridBytes(datatype: DataType, id: CorrelationId): Uint8Array {
  if (datatype === 'BYTES') {
    const s = Buffer.from(String(id), 'utf8');
    const b = Buffer.alloc(4 + s.length);
    b.writeUInt32LE(s.length, 0);
    s.copy(b, 4);
    return b;
  }
  const n = typeof id === 'string' ? 0n : BigInt(id);
  const b = Buffer.alloc(datatype === 'UINT64' || datatype === 'INT64' ? 8 : 4);
  if (datatype === 'UINT64') b.writeBigUInt64LE(BigInt.asUintN(64, n));
  else if (datatype === 'INT64') b.writeBigInt64LE(BigInt.asIntN(64, n));
  else if (datatype === 'UINT32') b.writeUInt32LE(Number(BigInt.asUintN(32, n)));
  else b.writeInt32LE(Number(BigInt.asIntN(32, n)));
  return b;
}
