/**
 * Converting between the server's requests/responses (tensors in the arena)
 * and the stub's wire form (tensors in the stub's shared-memory regions).
 */
import type { Arena } from '../dataplane/arena';
import { isDataType } from '../core/datatypes';
import { ServerError } from '../core/errors';
import type { ModelConfig } from '../core/model-config';
import { paramsJson, type InferRequest, type ParamValue, type TensorRef } from '../core/request';
import type { BlobBuilder } from './ipc-framing';
import { MAX_FRAME_BYTES } from './ipc-framing';
import { INLINE_FRAME_MAX_BYTES, INLINE_TENSOR_MAX_BYTES, type ShmTensor, type StubRequest } from './ipc-protocol';
import { ShmSpaceError } from './shm-space';
import type { HostRegion, StubRegion } from './shm-region';
import { toWire } from './wire-int';

/** Request parameters Triton consumes itself; the model sees the rest in parameters(). */
const RESERVED_PARAMETERS = new Set(['sequence_id', 'sequence_start', 'sequence_end', 'priority', 'timeout']);

/** `initialize(args)`: Triton's seven keys, all strings (python_backend.md §2.3). */
export function initArgs(
  configJson: string,
  kind: 'KIND_CPU' | 'KIND_GPU' | 'KIND_MODEL',
  instanceName: string,
  deviceId: number,
  modelDir: string,
  version: number,
  modelName: string,
): Record<string, string> {
  return {
    model_config: configJson,
    model_instance_kind: kind.slice('KIND_'.length),
    model_instance_name: instanceName,
    model_instance_device_id: String(deviceId),
    model_repository: modelDir,
    model_version: String(version),
    model_name: modelName,
  };
}

/**
 * Puts a request's inputs into the frame's blob (small ones, when `blob` is
 * given) or the h2s region. Returns the wire request and the h2s offsets to
 * release once the request is done.
 */
export function writeRequest(
  request: InferRequest,
  config: ModelConfig,
  arena: Arena,
  h2s: HostRegion,
  blob?: BlobBuilder,
): { wire: StubRequest; offsets: number[] } {
  const offsets: number[] = [];
  const inputs: ShmTensor[] = [];
  try {
    for (const t of request.inputs) {
      const bytes = arena.bytes(t.offset, t.byteSize);
      if (blob !== undefined && t.byteSize <= INLINE_TENSOR_MAX_BYTES && blob.size + t.byteSize <= INLINE_FRAME_MAX_BYTES) {
        inputs.push({ name: t.name, datatype: t.datatype, shape: t.shape, offset: blob.add(bytes), size: t.byteSize, inline: true });
        continue;
      }
      let offset: number;
      try {
        offset = h2s.write(bytes);
      } catch (err) {
        // /dev/shm is full: the slower path, through the pipe in the frame, where the frame has room.
        if (!(err instanceof ShmSpaceError) || blob === undefined || blob.size + t.byteSize > MAX_FRAME_BYTES - FRAME_HEADROOM) throw err;
        inputs.push({ name: t.name, datatype: t.datatype, shape: t.shape, offset: blob.add(bytes), size: t.byteSize, inline: true });
        continue;
      }
      offsets.push(offset);
      const wire: ShmTensor = { name: t.name, datatype: t.datatype, shape: t.shape, offset, size: t.byteSize };
      const starts = t.datatype === 'BYTES' && t.byteSize >= BYTES_INDEX_MIN_BYTES ? bytesElementStarts(bytes) : undefined;
      if (starts !== undefined) {
        wire.starts = h2s.write(new Uint8Array(starts.buffer, starts.byteOffset, starts.byteLength));
        wire.elements = starts.length;
        offsets.push(wire.starts);
      }
      inputs.push(wire);
    }
  } catch (err) {
    for (const o of offsets) h2s.release(o);
    throw err;
  }
  const p = request.parameters;
  let custom: Record<string, ParamValue> | undefined;
  for (const k in p) {
    if (!Object.prototype.hasOwnProperty.call(p, k) || RESERVED_PARAMETERS.has(k)) continue;
    (custom ??= {})[k] = p[k]!;
  }
  const seq = p['sequence_id'];
  const wire: StubRequest = {
    id: request.id,
    correlation_id: typeof seq === 'number' || typeof seq === 'string' || typeof seq === 'bigint' ? (toWire(seq) as StubRequest['correlation_id']) : 0,
    flags: (p['sequence_start'] === true ? 1 : 0) | (p['sequence_end'] === true ? 2 : 0),
    timeout: typeof p['timeout'] === 'number' ? p['timeout'] : 0,
    parameters: custom === undefined ? '{}' : paramsJson(custom), // 64-bit ints as exact literals: Python's json reads them so
    requested_outputs: request.requestedOutputs ?? config.output.map((o) => o.name),
    inputs,
  };
  return { wire, offsets };
}

/** BYTES inputs from this size on get an element index (ShmTensor.starts). */
const BYTES_INDEX_MIN_BYTES = 64 * 1024;
/** Room left in a frame for its JSON part when tensors go inline because /dev/shm is full. */
const FRAME_HEADROOM = 1024 * 1024;

/**
 * The byte offset of each element's 4-byte length prefix in a BYTES tensor
 * (two passes: count, then fill); undefined when the stream is malformed or
 * too large for u32 offsets, so the stub's own scan reports it.
 */
export function bytesElementStarts(bytes: Uint8Array): Uint32Array | undefined {
  const len = bytes.byteLength;
  if (len >= 2 ** 32) return undefined;
  const dv = new DataView(bytes.buffer, bytes.byteOffset, len);
  let n = 0;
  let pos = 0;
  while (pos + 4 <= len) {
    pos += 4 + dv.getUint32(pos, true);
    n++;
  }
  if (pos !== len) return undefined;
  const starts = new Uint32Array(n);
  pos = 0;
  for (let i = 0; i < n; i++) {
    starts[i] = pos;
    pos += 4 + dv.getUint32(pos, true);
  }
  return starts;
}

/**
 * Copies tensors the stub wrote into s2h (or inline into `blob`, the frame's
 * blob, or that it named in h2s, `region`, when `h2s` is given) into new
 * arena blocks (the receiver frees them).
 */
export function readTensors(tensors: ShmTensor[], arena: Arena, s2h: StubRegion, blob?: Buffer, h2s?: HostRegion): TensorRef[] {
  const out: TensorRef[] = [];
  try {
    for (const t of tensors) {
      if (!isDataType(t.datatype)) throw new ServerError('INTERNAL', `python stub returned output '${t.name}' with unknown datatype '${t.datatype}'`);
      const { offset, gen } = arena.alloc(t.size);
      out.push({ name: t.name, datatype: t.datatype, shape: t.shape, offset, gen, byteSize: t.size });
      if (t.inline === true) readInline(t, blob, arena.bytes(offset, t.size));
      else if (t.region === 'h2s' && h2s !== undefined) h2s.read(t.offset, arena.bytes(offset, t.size));
      else if (t.region === undefined) s2h.read(t.offset, arena.bytes(offset, t.size));
      else throw new ServerError('INTERNAL', `python stub named region '${String(t.region)}' for output '${t.name}', where only s2h is allowed`);
    }
  } catch (err) {
    for (const r of out) arena.free(r);
    throw err;
  }
  return out;
}

function readInline(t: ShmTensor, blob: Buffer | undefined, dst: Uint8Array): void {
  // A frame whose inline tensors are all empty has no blob.
  const length = blob?.length ?? 0;
  if (t.offset < 0 || t.offset + t.size > length) {
    throw new ServerError('INTERNAL', `python stub referenced inline bytes ${t.offset}..${t.offset + t.size} beyond its frame (${length} bytes)`);
  }
  if (t.size > 0) dst.set(blob!.subarray(t.offset, t.offset + t.size));
}
