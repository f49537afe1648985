/**
 * Implicit state of a sequence_batching model (protocol.md §3.7 State): per
 * sequence, one arena tensor per `state` entry. Each request of the sequence
 * gets it as input `input_name` (the initial state at START: zero_data or
 * `<model>/initial_state/<data_file>`), and the model's output `output_name`
 * becomes the state of the next request; that output reaches the client only
 * when the config also lists it as an output and the client asked for it.
 * Any datatype, TYPE_STRING included: the state is the output's bytes, in
 * the arena's length-prefixed form for BYTES.
 */
import fs from 'node:fs';
import path from 'node:path';
import { configTypeToDataType, elementCount, fixedByteSize, type DataType } from '../core/datatypes';
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
  use_same_buffer_for_input_output?: boolean;
  use_growable_memory?: boolean;
}

/**
 * The config's states, initial data read once at load, with Triton's load
 * errors (SequenceBatchScheduler::GenerateInitialStateData). Without an
 * initial state a state starts as zeros, a variable dim as 1; a TYPE_STRING
 * state starts as empty strings (zero_data too), or as the elements of its
 * data_file (each a 4-byte little-endian length, then the bytes).
 */
export function compileStates(config: ModelConfig, modelDir?: string): StateSpec[] {
  const sb = (config.sequence_batching ?? {}) as { state?: RawState[] };
  const seen = new Set<string>();
  return (sb.state ?? []).map((s) => {
    const name = s.input_name ?? '';
    const where = `state '${name}' of model '${config.name}'`;
    if (!s.input_name || !s.output_name) throw new ServerError('INVALID_ARG', `${where} must specify both input_name and output_name`);
    const datatype = configTypeToDataType(s.data_type ?? '');
    if (datatype === '<invalid>') throw new ServerError('INVALID_ARG', `${where} has unsupported data type ${s.data_type ?? ''}`);
    if (s.use_growable_memory === true) {
      // Triton checks these when a sequence starts; a load error says it once, with the model.
      throw invalid(
        s.use_same_buffer_for_input_output !== true
          ? `In order to 'use_growable_memory', you must also enable 'use_single_buffer' for state input name '${name}'.`
          : `'use_growable_memory' can only work with KIND_GPU model instances right now. Please either change the instance type to KIND_GPU or set 'use_growable_memory' to false for state input '${name}'.`,
      );
    }
    const stateDims = (s.dims ?? []).map(Number);
    const inits = s.initial_state ?? [];
    if (inits.length > 1) {
      throw invalid(`initial_state field for state input '${name}' must contain exactly one or zero element. Found '${inits.length}' elements.`);
    }
    const init = inits[0];
    if (init === undefined) {
      // Triton makes a variable dim 1 for the first request.
      const shape = batched(
        config,
        stateDims.map((d) => (d < 0 ? 1 : d)),
      );
      return { inputName: name, outputName: s.output_name, datatype, initialShape: shape, initialBytes: zeros(datatype, shape) };
    }
    if ((init.data_type ?? 'TYPE_INVALID') !== s.data_type) {
      throw invalid(`The data type used for 'initial_state' field of state '${name}' does not match the state data type.`);
    }
    if (!init.name) throw invalid(`Field 'name' must be set when using initial_state for state input '${name}'.`);
    if (seen.has(name)) throw invalid(`State input name '${name}' specified more than once.`);
    seen.add(name);
    const dims = (init.dims ?? []).map(Number);
    if (dims.length !== stateDims.length) {
      throw invalid(
        `Number of dimensions in 'initial_state' doesn't match the size of 'state' dimensions for state input '${name}'. ${dims.length} != ${stateDims.length}`,
      );
    }
    dims.forEach((d, i) => {
      if (d < 0) throw invalid(`'initial_state' field for state input name '${name}' contains variable dimensions.`);
      if (stateDims[i]! >= 0 && d !== stateDims[i]) {
        throw invalid(`'initial_state' dim for input name '${name}' doesn't match 'state' dim description. ${d} != ${stateDims[i]}`);
      }
    });
    const shape = batched(config, dims);
    let initialBytes: Uint8Array;
    if (init.zero_data === true) {
      initialBytes = zeros(datatype, shape);
    } else if (init.data_file) {
      initialBytes = readInitialFile(where, datatype, shape, init.data_file, modelDir);
    } else {
      throw invalid(`initial_state setting expects state'${name}' to have state_data set`);
    }
    return { inputName: name, outputName: s.output_name, datatype, initialShape: shape, initialBytes };
  });
}

function invalid(message: string): ServerError {
  return new ServerError('INVALID_ARG', message);
}

/** The shape the model sees: batch dim 1 in front for batching models. */
function batched(config: ModelConfig, dims: number[]): number[] {
  return config.max_batch_size > 0 ? [1, ...dims] : dims;
}

/** Zeros of a fixed-size type; for BYTES, an empty string per element. */
function zeros(datatype: DataType, shape: readonly number[]): Uint8Array {
  return new Uint8Array(datatype === 'BYTES' ? 4 * elementCount(shape) : fixedByteSize(datatype, shape));
}

function readInitialFile(where: string, datatype: DataType, shape: readonly number[], dataFile: string, modelDir: string | undefined): Uint8Array {
  if (modelDir === undefined) throw invalid(`${where}: initial_state data_file needs the model directory`);
  const file = path.join(modelDir, 'initial_state', dataFile);
  if (!fs.existsSync(file)) throw invalid(`${where}: initial_state data_file ${file} does not exist`);
  const bytes = new Uint8Array(fs.readFileSync(file));
  if (datatype === 'BYTES') {
    const count = stringElements(bytes);
    const want = elementCount(shape);
    if (count !== want) {
      throw invalid(
        `${where}: initial_state data_file ${file} holds ${count < 0 ? 'no whole' : count} TYPE_STRING element${count === 1 ? '' : 's'} ` +
          `(each a 4-byte little-endian length, then its bytes), expected ${want} for dims [${shape.join(',')}]`,
      );
    }
    return bytes;
  }
  const size = fixedByteSize(datatype, shape);
  if (bytes.byteLength < size) {
    // Triton's text, its missing space included.
    throw invalid(`initial_state setting expects ${size} bytes, but the data provided from ${dataFile}only has ${bytes.byteLength} bytes.`);
  }
  return bytes.subarray(0, size);
}

/** How many length-prefixed elements the bytes hold exactly; -1 when they do not split into whole elements. */
function stringElements(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  let n = 0;
  while (at < bytes.byteLength) {
    if (at + 4 > bytes.byteLength) return -1;
    at += 4 + view.getUint32(at, true);
    if (at > bytes.byteLength) return -1;
    n++;
  }
  return n;
}

/** The state tensors of every live sequence, owned here (arena blocks). */
export class SequenceStates {
  private readonly bySequence = new Map<string, TensorRef[]>();

  constructor(
    readonly specs: readonly StateSpec[],
    private readonly arena: Arena,
  ) {}

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
        response.error = {
          code: 'INTERNAL',
          message: `model '${original.model}' did not return every state output (${this.specs.map((s) => s.outputName).join(', ')})`,
        };
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
