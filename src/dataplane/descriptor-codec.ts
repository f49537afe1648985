/**
 * Fixed-layout binary descriptors for the four ring messages every request
 * makes (protocol.ts): `infer`, `execute`, `executed`, `response`, and for
 * `cancel`, which a request makes when its client goes away. They
 * replace JSON text for those (DESIGN.md "Hand-offs": no JSON pass per hop);
 * the rare messages (ready, stop, peers, errors of a whole batch) stay JSON.
 * A record's first byte tells them apart: a tag below 0x20 here, `{` for JSON.
 *
 * Layout (little-endian; counts are u32; str = u32 byte length + UTF-8;
 * num = f64, which carries any JS number exactly as JSON would):
 *   infer     tag, key num, request
 *   execute   tag, batchId num, u8 flags (1: stream given, 2: its value),
 *             count, request × count,
 *             replyTo count (0xFFFFFFFF: none) × (u8 present, port num, key num)
 *   executed  tag, batchId num, count, response × count, 4 × num timings
 *   response  tag, key num, version num, response
 *   cancel    tag, key num
 *   request   id str, model str, version num, u8 latest, batchSize num,
 *             count × tensor (inputs), count (0xFFFFFFFF: null) × str
 *             (requested outputs), params, arrivalNs num,
 *             u8 client given, [client str]
 *   response  u8 flags (1 final, 2 delivered, 4 error, 8 parameters, 16 rescheduled, 32 skipped),
 *             count × tensor (outputs), [error: code str, message str], [params]
 *   tensor    name str, u8 datatype (index in DATATYPES; 255: str follows),
 *             count × num (shape), offset num, gen u32, byteSize num
 *   params    count × (key str, u8 kind: 0 str, 1 num, 2 true, 3 false,
 *             4 bigint (its decimal str), [value])
 * Only the fields core/request.ts declares travel: a field added there must
 * be added here (the round-trip tests in test/unit/descriptor-codec.test.ts
 * compare against JSON for every field).
 */
import { DATATYPES, type DataType } from '../core/datatypes';
import type { ErrorCode } from '../core/errors';
import type { ExecuteTimings, InferRequest, InferResponse, ParamValue, ReplyAddress, TensorRef } from '../core/request';
import { DescriptorReader, DescriptorWriter } from './descriptor-cursor';
import type { CancelMessage, ExecuteMessage, ExecutedMessage, InferMessage, ResponseMessage } from './protocol';

const TAG_INFER = 1;
const TAG_EXECUTE = 2;
const TAG_EXECUTED = 3;
const TAG_RESPONSE = 4;
const TAG_CANCEL = 5;
/** Record first bytes below this are descriptors; JSON text starts with `{` (0x7b). */
const TAG_LIMIT = 0x20;
const NONE = 0xffffffff;
const DTYPE_STR = 255;

/** execute's flags byte: `stream` is present, and its value. */
const X_STREAM_SET = 1;
const X_STREAM = 2;

const F_FINAL = 1;
const F_DELIVERED = 2;
const F_ERROR = 4;
const F_PARAMS = 8;
const F_RESCHEDULED = 16;
const F_SKIPPED = 32;

const DTYPE_CODE = new Map<string, number>(DATATYPES.map((d, i) => [d, i]));

export type DescribedMessage = InferMessage | ExecuteMessage | ExecutedMessage | ResponseMessage | CancelMessage;

/** One scratch buffer per thread: a descriptor is copied into the ring right after it is written. */
const w = new DescriptorWriter();

/**
 * The message as a descriptor (a view of this thread's scratch buffer, valid
 * until the next call), or undefined for a message that travels as JSON.
 */
export function encodeDescriptor(msg: { t: string }): Buffer | undefined {
  w.reset();
  switch (msg.t) {
    case 'infer': {
      const m = msg as InferMessage;
      w.u8(TAG_INFER);
      w.f64(m.key);
      writeRequest(m.request);
      break;
    }
    case 'execute': {
      const m = msg as ExecuteMessage;
      w.u8(TAG_EXECUTE);
      w.f64(m.batchId);
      w.u8(m.stream === undefined ? 0 : m.stream ? X_STREAM_SET | X_STREAM : X_STREAM_SET);
      w.u32(m.requests.length);
      for (const r of m.requests) writeRequest(r);
      writeReplyTo(m.replyTo);
      break;
    }
    case 'executed': {
      const m = msg as ExecutedMessage;
      w.u8(TAG_EXECUTED);
      w.f64(m.batchId);
      w.u32(m.responses.length);
      for (const r of m.responses) writeResponse(r);
      const t = m.timings;
      w.f64(t.computeStartNs);
      w.f64(t.computeInputEndNs);
      w.f64(t.computeInferEndNs);
      w.f64(t.computeEndNs);
      break;
    }
    case 'response': {
      const m = msg as ResponseMessage;
      w.u8(TAG_RESPONSE);
      w.f64(m.key);
      w.f64(m.version);
      writeResponse(m.response);
      break;
    }
    case 'cancel': {
      w.u8(TAG_CANCEL);
      w.f64((msg as CancelMessage).key);
      w.u8((msg as CancelMessage).answered === true ? 1 : 0);
      break;
    }
    default:
      return undefined;
  }
  return w.bytes();
}

/** True when the record at `start` is a descriptor (else it is JSON text). */
export function isDescriptor(buf: Buffer, start: number, end: number): boolean {
  return end > start && buf[start]! < TAG_LIMIT;
}

/** Decodes the descriptor in buf[start, end); throws RangeError on a malformed one. */
export function decodeDescriptor(buf: Buffer, start: number, end: number): DescribedMessage {
  const r = new DescriptorReader(buf, start, end);
  const tag = r.u8();
  let msg: DescribedMessage;
  switch (tag) {
    case TAG_INFER:
      msg = { t: 'infer', key: r.f64(), request: readRequest(r) };
      break;
    case TAG_EXECUTE: {
      const batchId = r.f64();
      const x = r.u8();
      const requests = new Array<InferRequest>(r.u32());
      for (let i = 0; i < requests.length; i++) requests[i] = readRequest(r);
      const replyTo = readReplyTo(r);
      const m: ExecuteMessage = { t: 'execute', batchId, requests };
      if (replyTo !== undefined) m.replyTo = replyTo;
      if ((x & X_STREAM_SET) !== 0) m.stream = (x & X_STREAM) !== 0;
      msg = m;
      break;
    }
    case TAG_EXECUTED: {
      const batchId = r.f64();
      const responses = new Array<InferResponse>(r.u32());
      for (let i = 0; i < responses.length; i++) responses[i] = readResponse(r);
      const timings: ExecuteTimings = { computeStartNs: r.f64(), computeInputEndNs: r.f64(), computeInferEndNs: r.f64(), computeEndNs: r.f64() };
      msg = { t: 'executed', batchId, responses, timings };
      break;
    }
    case TAG_RESPONSE: {
      const key = r.f64();
      const version = r.f64();
      msg = { t: 'response', key, version, response: readResponse(r) };
      break;
    }
    case TAG_CANCEL: {
      const key = r.f64();
      msg = r.u8() === 1 ? { t: 'cancel', key, answered: true } : { t: 'cancel', key };
      break;
    }
    default:
      throw new RangeError(`unknown ring descriptor tag ${tag}`);
  }
  r.done(msg.t);
  return msg;
}

// ---- writing ----

function writeRequest(q: InferRequest): void {
  w.str(q.id);
  w.str(q.model);
  w.f64(q.version);
  w.u8(q.latest ? 1 : 0);
  w.f64(q.batchSize);
  w.u32(q.inputs.length);
  for (const t of q.inputs) writeTensor(t);
  if (q.requestedOutputs === null) {
    w.u32(NONE);
  } else {
    w.u32(q.requestedOutputs.length);
    for (const n of q.requestedOutputs) w.str(n);
  }
  writeParams(q.parameters);
  w.f64(q.arrivalNs);
  if (q.client === undefined) {
    w.u8(0);
  } else {
    w.u8(1);
    w.str(q.client);
  }
}

function writeResponse(r: InferResponse): void {
  let flags = r.final ? F_FINAL : 0;
  if (r.delivered === true) flags |= F_DELIVERED;
  if (r.error !== undefined) flags |= F_ERROR;
  if (r.parameters !== undefined) flags |= F_PARAMS;
  if (r.rescheduled === true) flags |= F_RESCHEDULED;
  if (r.skipped === true) flags |= F_SKIPPED;
  w.u8(flags);
  w.u32(r.outputs.length);
  for (const t of r.outputs) writeTensor(t);
  if (r.error !== undefined) {
    w.str(r.error.code);
    w.str(r.error.message);
  }
  if (r.parameters !== undefined) writeParams(r.parameters);
}

function writeTensor(t: TensorRef): void {
  w.str(t.name);
  const code = DTYPE_CODE.get(t.datatype);
  if (code === undefined) {
    w.u8(DTYPE_STR);
    w.str(t.datatype);
  } else {
    w.u8(code);
  }
  w.u32(t.shape.length);
  for (const d of t.shape) w.f64(d);
  w.f64(t.offset);
  w.u32(t.gen);
  w.f64(t.byteSize);
}

function writeParams(p: Record<string, ParamValue>): void {
  const keys = Object.keys(p);
  w.u32(keys.length);
  for (const k of keys) {
    w.str(k);
    const v = p[k];
    if (typeof v === 'string') {
      w.u8(0);
      w.str(v);
    } else if (typeof v === 'number') {
      w.u8(1);
      w.f64(v);
    } else if (typeof v === 'bigint') {
      w.u8(4);
      w.str(v.toString());
    } else {
      w.u8(v ? 2 : 3);
    }
  }
}

function writeReplyTo(replyTo: (ReplyAddress | null)[] | undefined): void {
  if (replyTo === undefined) {
    w.u32(NONE);
    return;
  }
  w.u32(replyTo.length);
  for (const a of replyTo) {
    if (a === null || a === undefined) {
      w.u8(0);
      continue;
    }
    w.u8(1);
    w.f64(a.port);
    w.f64(a.key);
  }
}

// ---- reading ----

function readRequest(r: DescriptorReader): InferRequest {
  const id = r.str();
  const model = r.str();
  const version = r.f64();
  const latest = r.u8() === 1;
  const batchSize = r.f64();
  const inputs = new Array<TensorRef>(r.u32());
  for (let i = 0; i < inputs.length; i++) inputs[i] = readTensor(r);
  const n = r.u32();
  let requestedOutputs: string[] | null = null;
  if (n !== NONE) {
    requestedOutputs = new Array<string>(n);
    for (let i = 0; i < n; i++) requestedOutputs[i] = r.str();
  }
  const parameters = readParams(r);
  const q: InferRequest = { id, model, version, latest, batchSize, inputs, requestedOutputs, parameters, arrivalNs: r.f64() };
  if (r.u8() === 1) q.client = r.str();
  return q;
}

function readResponse(r: DescriptorReader): InferResponse {
  const flags = r.u8();
  const outputs = new Array<TensorRef>(r.u32());
  for (let i = 0; i < outputs.length; i++) outputs[i] = readTensor(r);
  const res: InferResponse = { outputs, final: (flags & F_FINAL) !== 0 };
  if ((flags & F_DELIVERED) !== 0) res.delivered = true;
  if ((flags & F_RESCHEDULED) !== 0) res.rescheduled = true;
  if ((flags & F_ERROR) !== 0) res.error = { code: r.str() as ErrorCode, message: r.str() };
  if ((flags & F_PARAMS) !== 0) res.parameters = readParams(r);
  if ((flags & F_SKIPPED) !== 0) res.skipped = true;
  return res;
}

function readTensor(r: DescriptorReader): TensorRef {
  const name = r.str();
  const code = r.u8();
  const datatype = (code === DTYPE_STR ? r.str() : DATATYPES[code]) as DataType | undefined;
  if (datatype === undefined) throw new RangeError(`ring descriptor: unknown datatype code ${code}`);
  const shape = new Array<number>(r.u32());
  for (let i = 0; i < shape.length; i++) shape[i] = r.f64();
  return { name, datatype, shape, offset: r.f64(), gen: r.u32(), byteSize: r.f64() };
}

function readParams(r: DescriptorReader): Record<string, ParamValue> {
  const p: Record<string, ParamValue> = {};
  const n = r.u32();
  for (let i = 0; i < n; i++) {
    const k = r.str();
    const kind = r.u8();
    const v = kind === 0 ? r.str() : kind === 1 ? r.f64() : kind === 4 ? BigInt(r.str()) : kind === 2;
    // An own property, as JSON.parse makes it, even for a client's `__proto__` key.
    if (k === '__proto__') Object.defineProperty(p, k, { value: v, enumerable: true, writable: true, configurable: true });
    else p[k] = v;
  }
  return p;
}

function readReplyTo(r: DescriptorReader): (ReplyAddress | null)[] | undefined {
  const n = r.u32();
  if (n === NONE) return undefined;
  const out = new Array<ReplyAddress | null>(n);
  for (let i = 0; i < n; i++) out[i] = r.u8() === 0 ? null : { port: r.f64(), key: r.f64() };
  return out;
}
