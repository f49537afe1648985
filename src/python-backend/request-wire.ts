/**
 * Converting between the server's requests/responses (tensors in the arena)
 * and the stub's wire form (tensors in the stub's shared-memory regions).
 */
import type { Arena } from '../instances/arena';
import { isDataType } from '../datatypes';
import { ServerError } from '../errors';
import type { ModelConfig } from '../repository/config/model-config';
import type { InferRequest, ParamValue, TensorRef } from '../scheduler/request';
import type { ShmTensor, StubRequest } from './ipc-protocol';
import type { HostRegion, StubRegion } from './shm-region';

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
 * Copies a request's inputs into the h2s region. Returns the wire request
 * and the h2s offsets to release once the request is done.
 */
export function writeRequest(request: InferRequest, config: ModelConfig, arena: Arena, h2s: HostRegion): { wire: StubRequest; offsets: number[] } {
  const offsets: number[] = [];
  const inputs: ShmTensor[] = [];
  try {
    for (const t of request.inputs) {
      const offset = h2s.write(arena.bytes(t.offset, t.byteSize));
      offsets.push(offset);
      inputs.push({ name: t.name, datatype: t.datatype, shape: t.shape, offset, size: t.byteSize });
    }
  } catch (err) {
    for (const o of offsets) h2s.release(o);
    throw err;
  }
  const p = request.parameters;
  const custom: Record<string, ParamValue> = {};
  for (const [k, v] of Object.entries(p)) if (!RESERVED_PARAMETERS.has(k)) custom[k] = v;
  const seq = p['sequence_id'];
  const wire: StubRequest = {
    id: request.id,
    correlation_id: typeof seq === 'number' || typeof seq === 'string' ? seq : 0,
    flags: (p['sequence_start'] === true ? 1 : 0) | (p['sequence_end'] === true ? 2 : 0),
    timeout: typeof p['timeout'] === 'number' ? p['timeout'] : 0,
    parameters: JSON.stringify(custom),
    requested_outputs: request.requestedOutputs ?? config.output.map((o) => o.name),
    inputs,
  };
  return { wire, offsets };
}

/** Copies tensors the stub wrote into s2h into new arena blocks (the receiver frees them). */
export function readTensors(tensors: ShmTensor[], arena: Arena, s2h: StubRegion): TensorRef[] {
  const out: TensorRef[] = [];
  try {
    for (const t of tensors) {
      if (!isDataType(t.datatype)) throw new ServerError('INTERNAL', `python stub returned output '${t.name}' with unknown datatype '${t.datatype}'`);
      const offset = arena.alloc(t.size);
      out.push({ name: t.name, datatype: t.datatype, shape: t.shape, offset, byteSize: t.size });
      s2h.read(t.offset, arena.bytes(offset, t.size));
    }
  } catch (err) {
    for (const r of out) arena.free(r.offset);
    throw err;
  }
  return out;
}
