/**
 * Request validation against a model's compiled plan, with Triton core's
 * texts, codes and order (protocol.md §4.2; first failure wins):
 *   0. duplicate input / output names (Triton rejects these while adding them)
 *   1. requested outputs exist
 *   2. input count
 *   3. per input: known name, rank > 0 and equal batch size (batching models)
 *   4. batch size <= max_batch_size
 *   5. per input: datatype, then shape
 *   6. per input: byte size (BYTES: walk the 4-byte length prefixes)
 */
import { ELEMENT_SIZE, isDataType, wireDataTypeHint } from '../core/datatypes';
import { ServerError, requestIdPrefix } from '../core/errors';
import type { DecodedInput, DecodedRequest } from './decoded-request';
import { findPlanInput, findPlanOutput } from './validation-plan';
import type { PlanInput, ValidationPlan } from './validation-plan';

const BATCH_NOTE =
  'NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each ' +
  'input shape. If you want to specify the full shape including the batch dim in your input dims config, try ' +
  'setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.';

function invalid(message: string): ServerError {
  return new ServerError('INVALID_ARG', message);
}

/** Triton's DimsListToString: `[1,16]`, `[]`. */
export function dimsToString(dims: readonly number[]): string {
  return `[${dims.join(',')}]`;
}

/**
 * Throws the first validation error; returns the request's batch size: the
 * shared first dimension for batching models (as the client sent it, so 0 is
 * possible), 1 for models with max_batch_size 0 or when no input carries a
 * batch dimension.
 */
export function validateRequest(plan: ValidationPlan, req: DecodedRequest): { batchSize: number } {
  const rid = requestIdPrefix(req.id);
  const model = plan.modelName;
  checkDuplicates(req, rid);

  if (req.outputs !== null) {
    for (const o of req.outputs) {
      if (findPlanOutput(plan, o.name) === undefined) {
        throw invalid(`unexpected inference output '${o.name}' for model '${model}', allowed outputs are: ${plan.outputs.map((x) => x.name).join(', ')}`);
      }
    }
  }

  checkInputCount(plan, req, rid);

  // Per input in request order: the name must be known; batching models also
  // need a leading dim equal across inputs (shape tensors keep their shape).
  const batching = plan.maxBatchSize > 0;
  const configs: PlanInput[] = [];
  let batchSize = 0;
  let anyBatched = false;
  for (const input of req.inputs) {
    const cfg = findPlanInput(plan, input.name);
    if (cfg === undefined) {
      throw invalid(`unexpected inference input '${input.name}' for model '${model}', allowed inputs are: ${plan.inputs.map((x) => x.name).join(', ')}`);
    }
    configs.push(cfg);
    if (!batching || cfg.isShapeTensor) continue;
    if (input.shape.length === 0) {
      throw invalid(`${rid}input '${input.name}' has no shape but model requires batch dimension for '${model}'`);
    }
    anyBatched = true;
    // Triton takes the first non-zero leading dim as the batch size.
    if (batchSize === 0) batchSize = input.shape[0];
    else if (input.shape[0] !== batchSize) {
      throw invalid(`${rid}input '${input.name}' batch size does not match other inputs for '${model}'`);
    }
  }
  if (batching && batchSize > plan.maxBatchSize) {
    throw invalid(`${rid}inference request batch-size must be <= ${plan.maxBatchSize} for '${model}'`);
  }

  for (let k = 0; k < req.inputs.length; k++) {
    checkDatatypeAndShape(plan, req.inputs[k], configs[k], rid);
  }
  for (let k = 0; k < req.inputs.length; k++) {
    checkByteSize(plan, req.inputs[k], rid);
  }

  return { batchSize: batching && anyBatched ? batchSize : 1 };
}

function checkDuplicates(req: DecodedRequest, rid: string): void {
  const inputs = req.inputs;
  for (let a = 1; a < inputs.length; a++) {
    for (let b = 0; b < a; b++) {
      if (inputs[a].name === inputs[b].name) throw invalid(`${rid}input '${inputs[a].name}' already exists in request`);
    }
  }
  const outputs = req.outputs ?? [];
  for (let a = 1; a < outputs.length; a++) {
    for (let b = 0; b < a; b++) {
      if (outputs[a].name === outputs[b].name) throw invalid(`${rid}output '${outputs[a].name}' already exists in request`);
    }
  }
}

function checkInputCount(plan: ValidationPlan, req: DecodedRequest, rid: string): void {
  const total = plan.inputs.length;
  const required = plan.requiredInputs.length;
  const got = req.inputs.length;
  if (got <= total && got >= required) return;

  // Triton builds both lists as "['A','B'," and drops the last character, so an
  // empty missing list renders as just "]" (the quirk is part of the text).
  let missing = '[';
  for (const name of plan.requiredInputs) {
    if (!req.inputs.some((i) => i.name === name)) missing += `'${name}',`;
  }
  missing = `${missing.slice(0, -1)}]`;
  const gotList = got === 0 ? '[]' : `[${req.inputs.map((i) => `'${i.name}'`).join(',')}]`;
  const tail =
    ` inputs for model '${plan.modelName}'. Got input(s) ${gotList}, but missing required input(s) ${missing}. ` + 'Please provide all required input(s).';
  if (total === required) throw invalid(`${rid}expected ${total} inputs but got ${got}${tail}`);
  throw invalid(`${rid}expected number of inputs between ${required} and ${total} but got ${got}${tail}`);
}

function checkDatatypeAndShape(plan: ValidationPlan, input: DecodedInput, cfg: PlanInput, rid: string): void {
  const model = plan.modelName;
  if (input.datatype !== cfg.datatype || !isDataType(input.datatype)) {
    const known = isDataType(input.datatype);
    const hint = known ? '' : `. ${wireDataTypeHint(input.datatype)}`;
    throw invalid(
      `${rid}inference input '${input.name}' data-type is '${known ? input.datatype : '<invalid>'}', but model '${model}' expects '${cfg.datatype}'${hint}`,
    );
  }

  const batching = plan.maxBatchSize > 0 && !cfg.isShapeTensor;
  const shape = input.shape;
  const start = batching ? 1 : 0;
  // A negative batch dim can only come from gRPC; report it like any unspecified dim.
  if (batching && shape[0] < 0) throw unspecified(input, model, rid);
  let match = shape.length - start === cfg.dims.length;
  if (match) {
    for (let d = 0; d < cfg.dims.length; d++) {
      const got = shape[start + d];
      if (got < 0) throw unspecified(input, model, rid);
      if (cfg.dims[d] !== -1 && cfg.dims[d] !== got) {
        match = false;
        break;
      }
    }
  }
  if (!match) {
    const expected = plan.maxBatchSize > 0 ? [-1, ...cfg.dims] : cfg.dims;
    const note = plan.maxBatchSize > 0 ? BATCH_NOTE : '';
    throw invalid(
      `${rid}unexpected shape for input '${input.name}' for model '${model}'. Expected ${dimsToString(expected)}, ` + `got ${dimsToString(shape)}. ${note}`,
    );
  }
}

function unspecified(input: DecodedInput, model: string, rid: string): ServerError {
  return invalid(`${rid}All input dimensions should be specified for input '${input.name}' for model '${model}', got ${dimsToString(input.shape)}`);
}

function checkByteSize(plan: ValidationPlan, input: DecodedInput, rid: string): void {
  const model = plan.modelName;
  let count = 1;
  for (const d of input.shape) count *= d;
  const datatype = input.datatype as keyof typeof ELEMENT_SIZE; // checked by checkDatatypeAndShape
  const size = ELEMENT_SIZE[datatype];
  if (size !== 0) {
    const expected = count * size;
    if (input.data.byteLength !== expected) {
      throw invalid(`${rid}input byte size mismatch for input '${input.name}' for model '${model}'. Expected ${expected}, got ${input.data.byteLength}`);
    }
    return;
  }
  checkBytesElements(input, count, model, rid);
}

/**
 * Walk the 4-byte little-endian length prefixes of a BYTES tensor: one
 * DataView read and one add per element (the texts are built only on
 * failure).
 */
function checkBytesElements(input: DecodedInput, expected: number, model: string, rid: string): void {
  const d = input.data;
  const len = d.byteLength;
  const view = new DataView(d.buffer, d.byteOffset, len);
  const what = (): string => `for inference input '${input.name}' for model '${model}'`;
  let off = 0;
  let seen = 0;
  while (off + 4 <= len) {
    off += 4 + view.getUint32(off, true);
    if (++seen > expected) {
      throw invalid(`${rid}unexpected number of string elements ${seen} ${what()}, expecting ${expected}`);
    }
  }
  if (off < len) {
    throw invalid(
      `${rid}incomplete string length indicator ${what()}, expecting 4 bytes but only ${len - off} bytes available. ` +
        'Please make sure the string length indicator is in one buffer.',
    );
  }
  // A last element whose bytes run past the end is not counted (Triton would
  // hand the backend a truncated buffer; we refuse it with the count message).
  if (off > len) seen--;
  if (seen !== expected) throw invalid(`${rid}expected ${expected} string elements ${what()}, got ${seen}`);
}
