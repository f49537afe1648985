/**
 * The request a Triton LLM model takes from the OpenAI-compatible routes
 * (Triton's OpenAI frontend's contract), and the text of its BYTES output.
 * Pure, so it is table-tested.
 */
import type { DecodedInput, DecodedRequest } from '../../request/decoded-request';
import type { ValidationPlan } from '../../request/validation-plan';
import { generateShape } from './generate-request-decode';
import { jsonTensorBytes } from './json-tensor-data';
import { OpenAIError, type OpenAIRequest } from './openai-request';

/** Whether a model takes Triton's LLM contract: a BYTES `text_input` and a `text_output`. */
export function takesLlmContract(plan: ValidationPlan): boolean {
  return plan.inputs.some((i) => i.name === 'text_input' && i.datatype === 'BYTES') && plan.outputs.some((o) => o.name === 'text_output');
}

/**
 * `text_input` the prompt, `stream` when the model has it,
 * `exclude_input_in_output` true and `sampling_parameters` as JSON when it
 * declares them (vLLM-style model.py files), the sampling fields also as
 * request parameters. `choice` (0 … n-1) is which of the request's `n`
 * choices this is: with a `seed`, choice j is sampled with seed + j, so the
 * choices differ and each is reproducible.
 */
export function llmRequest(plan: ValidationPlan, prompt: string, req: OpenAIRequest, maxInputSize: number, choice = 0): DecodedRequest {
  const byName = new Map(plan.inputs.map((i) => [i.name, i]));
  if (!takesLlmContract(plan)) {
    throw new OpenAIError(
      400,
      `The model '${plan.modelName}' does not take Triton's LLM contract (a BYTES input 'text_input' and an output 'text_output'), which the /v1 routes need; use /v2/models/${plan.modelName}/infer instead.`,
      'model',
    );
  }
  const parameters = { ...req.parameters };
  if (choice > 0 && typeof parameters.seed === 'number') parameters.seed += choice;
  const inputs: DecodedInput[] = [];
  const add = (name: string, datatype: string, value: string | boolean): void => {
    const input = byName.get(name)!;
    const shape = generateShape(name, plan.maxBatchSize > 0 ? [-1, ...input.dims] : [...input.dims], 1);
    inputs.push({ name, datatype, shape, data: jsonTensorBytes(name, datatype, [value], 1, maxInputSize), parameters: {} });
  };
  add('text_input', 'BYTES', prompt);
  if (byName.get('stream')?.datatype === 'BOOL') add('stream', 'BOOL', req.stream);
  if (byName.get('exclude_input_in_output')?.datatype === 'BOOL') add('exclude_input_in_output', 'BOOL', true);
  if (byName.get('sampling_parameters')?.datatype === 'BYTES') add('sampling_parameters', 'BYTES', samplingJson(parameters, req.stop));
  return { id: '', inputs, outputs: null, parameters, binaryDataOutput: false };
}

function samplingJson(parameters: OpenAIRequest['parameters'], stop: readonly string[]): string {
  const p: Record<string, unknown> = { ...parameters };
  if (stop.length > 0) p.stop = stop;
  return JSON.stringify(p);
}

/** The elements of a BYTES tensor (4-byte little-endian length, then the bytes), joined as UTF-8 text. */
export function bytesText(b: Uint8Array): string {
  const view = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  let s = '';
  for (let at = 0; at + 4 <= view.length;) {
    const n = view.readUInt32LE(at);
    s += view.toString('utf8', at + 4, at + 4 + n);
    at += 4 + n;
  }
  return s;
}
