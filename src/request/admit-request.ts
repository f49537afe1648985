/**
 * The step every frontend shares once a request is decoded and validated:
 * copy its tensors into the shared arena and describe them as an
 * InferRequest for the scheduler (admitAll: several together, all or
 * none); and the matching release of the request's arena blocks when its
 * final response has been handled.
 */
import type { Arena } from '../dataplane/arena';
import type { InferRequest, TensorRef } from '../core/request';
import type { DecodedRequest } from './decoded-request';

export interface AdmitTarget {
  model: string;
  version: number;
  /** No version was named (InferRequest.latest). */
  latest: boolean;
  batchSize: number;
  arrivalNs: number;
}

/** Copies each input's bytes into the arena; on failure frees what it took and rethrows. */
export function admitRequest(arena: Arena, decoded: DecodedRequest, target: AdmitTarget): InferRequest {
  const inputs: TensorRef[] = [];
  try {
    for (const input of decoded.inputs) {
      const size = input.data.byteLength;
      const { offset, gen } = arena.alloc(size);
      inputs.push({ name: input.name, datatype: input.datatype as TensorRef['datatype'], shape: input.shape, offset, gen, byteSize: size });
      arena.bytes(offset, size).set(input.data);
    }
  } catch (err) {
    for (const t of inputs) arena.free(t);
    throw err;
  }
  return {
    id: decoded.id,
    model: target.model,
    version: target.version,
    latest: target.latest,
    batchSize: target.batchSize,
    inputs,
    requestedOutputs: decoded.outputs === null ? null : decoded.outputs.map((o) => o.name),
    parameters: decoded.parameters,
    arrivalNs: target.arrivalNs,
  };
}

/**
 * Admits several validated requests of one client request (OpenAI choices,
 * embedding inputs) together: all of them, or, when the arena cannot take
 * one, none (what the earlier ones took is freed) and the error is rethrown.
 */
export function admitAll(
  arena: Arena,
  planned: readonly { decoded: DecodedRequest; batchSize: number }[],
  target: Omit<AdmitTarget, 'batchSize'>,
): InferRequest[] {
  const requests: InferRequest[] = [];
  try {
    for (const p of planned) requests.push(admitRequest(arena, p.decoded, { ...target, batchSize: p.batchSize }));
  } catch (err) {
    for (const r of requests) releaseInputs(arena, r.inputs);
    throw err;
  }
  return requests;
}

/** Frees the arena blocks of a request's inputs (after its final response). */
export function releaseInputs(arena: Arena, inputs: readonly TensorRef[]): void {
  for (const t of inputs) arena.free(t);
}

/** Frees the arena blocks of a response's outputs (after they were encoded or dropped). */
export function releaseOutputs(arena: Arena, outputs: readonly TensorRef[]): void {
  for (const o of outputs) arena.free(o);
}
