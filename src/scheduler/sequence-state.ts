/**
 * Implicit state of a sequence_batching model (protocol.md §3.7 State): per
 * sequence, one arena tensor per `state` entry. Each request of the sequence
 * gets it as input `input_name` (the initial state at START: zero_data or
 * `<model>/initial_state/<data_file>`), and the model's output `output_name`
 * becomes the state of the next request; that output reaches the client only
 * when the config also lists it as an output and the client asked for it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { configTypeToDataType, fixedByteSize, type DataType } from '../core/datatypes';
import { ServerError } from '../core/errors';
import type { Arena } from '../dataplane/arena';
import type { ModelConfig } from '../core/model-config';
import type { InferRequest, InferResponse, TensorRef } from '../core/request';

export interface StateSpec {
  inputName: string;
  outputName: string;
  datatype: DataType;
  /** Shape of the initial state as the model sees it (batch dim 1 included for batching models). */
  initialShape: number[];
  initialBytes: Uint8Array;
}

interface RawState {
  input_name?: string;
  output_name?: string;
  data_type?: string;
  dims?: (number | string)[];
  initial_state?: { data_type?: string; dims?: (number | string)[]; zero_data?: boolean; data_file?: string; name?: string }[];
}

/** The config's states, initial data read once at load. */
export function compileStates(config: ModelConfig, modelDir?: string): StateSpec[] {
  const sb = (config.sequence_batching ?? {}) as { state?: RawState[] };
  return (sb.state ?? []).map((s) => {
    const where = `state '${s.input_name ?? ''}' of model '${config.name}'`;
    if (!s.input_name || !s.output_name) throw new ServerError('INVALID_ARG', `${where} must specify both input_name and output_name`);
    const datatype = configTypeToDataType(s.data_type ?? '');
    if (datatype === '<invalid>' || datatype === 'BYTES') throw new ServerError('INVALID_ARG', `${where} has unsupported data type ${s.data_type ?? ''}`);
    const init = s.initial_state?.[0];
    const dims = (init?.dims ?? s.dims ?? []).map(Number);
    if (dims.some((d) => d < 0)) throw new ServerError('INVALID_ARG', `${where}: the initial state needs fixed dims, got [${dims.join(',')}]`);
    const shape = config.max_batch_size > 0 ? [1, ...dims] : dims;
    const size = fixedByteSize(datatype, shape);
    let initialBytes = new Uint8Array(size);
    if (init?.data_file) {
      if (modelDir === undefined) throw new ServerError('INVALID_ARG', `${where}: initial_state data_file needs the model directory`);
      const file = path.join(modelDir, 'initial_state', init.data_file);
      if (!fs.existsSync(file)) throw new ServerError('INVALID_ARG', `${where}: initial_state data_file ${file} does not exist`);
      initialBytes = new Uint8Array(fs.readFileSync(file));
      if (initialBytes.byteLength !== size) {
        throw new ServerError('INVALID_ARG', `${where}: initial_state data_file ${file} holds ${initialBytes.byteLength} bytes, expected ${size}`);
      }
    }
    return { inputName: s.input_name, outputName: s.output_name, datatype, initialShape: shape, initialBytes };
  });
}

/** The state tensors of every live sequence, owned here (arena blocks). */
export class SequenceStates {
  private readonly bySequence = new Map<string, TensorRef[]>();

  constructor(readonly specs: readonly StateSpec[], private readonly arena: Arena) {}

  /**
   * The request as the model sees it: plus the state inputs (reset at
   * START) and the state outputs among its requested outputs.
   */
  inject(request: InferRequest, key: string, start: boolean, configOutputs: readonly string[]): InferRequest {
    let state = this.bySequence.get(key);
    if (start || state === undefined) {
      if (state !== undefined) this.freeAll(state);
      state = this.specs.map((s) => this.write(s.inputName, s.datatype, s.initialShape, s.initialBytes));
      this.bySequence.set(key, state);
    }
    const requested = request.requestedOutputs ?? configOutputs;
    const extraOutputs = this.specs.map((s) => s.outputName).filter((n) => !requested.includes(n));
    return {
      ...request,
      inputs: [...request.inputs, ...state],
      requestedOutputs: extraOutputs.length === 0 ? request.requestedOutputs : [...requested, ...extraOutputs],
    };
  }

  /**
   * Takes each state output of `response` as the sequence's next state and
   * drops it from the response unless `original` asked for it; frees the
   * previous state. At END (or on an error) the state goes away.
   */
  update(response: InferResponse, original: InferRequest, key: string, end: boolean, configOutputs: readonly string[]): void {
    const previous = this.bySequence.get(key);
    if (previous === undefined) return;
    const next: TensorRef[] = [];
    const kept: TensorRef[] = [];
    for (const out of response.outputs) {
      const spec = this.specs.find((s) => s.outputName === out.name);
      if (spec === undefined) {
        kept.push(out);
        continue;
      }
      // Returned only when the config also lists it as an output and the client asked for it (or for all).
      const wanted = (original.requestedOutputs ?? configOutputs).includes(out.name) && configOutputs.includes(out.name);
      if (wanted) {
        kept.push(out);
        next.push(this.write(spec.inputName, out.datatype, out.shape, this.arena.bytes(out.offset, out.byteSize).slice()));
      } else {
        next.push({ ...out, name: spec.inputName });
      }
    }
    response.outputs = kept;
    this.freeAll(previous);
    if (end || response.error !== undefined || next.length !== this.specs.length) {
      this.freeAll(next);
      this.bySequence.delete(key);
      if (!end && response.error === undefined) {
        response.error = { code: 'INTERNAL', message: `model '${original.model}' did not return every state output (${this.specs.map((s) => s.outputName).join(', ')})` };
      }
      return;
    }
    this.bySequence.set(key, next);
  }

  /** A sequence ended without its END (idle expiry). */
  drop(key: string): void {
    const state = this.bySequence.get(key);
    if (state === undefined) return;
    this.freeAll(state);
    this.bySequence.delete(key);
  }

  dropAll(): void {
    for (const key of [...this.bySequence.keys()]) this.drop(key);
  }

  private write(name: string, datatype: DataType, shape: number[], bytes: Uint8Array): TensorRef {
    const { offset, gen } = this.arena.alloc(bytes.byteLength);
    this.arena.bytes(offset, bytes.byteLength).set(bytes);
    return { name, datatype, shape: [...shape], offset, gen, byteSize: bytes.byteLength };
  }

  private freeAll(tensors: readonly TensorRef[]): void {
    for (const t of tensors) this.arena.free(t);
  }
}
