/**
 * One response of the generate extension → its JSON object, as Triton's
 * HTTP frontend writes it: `model_name`, `model_version`, `id` when the
 * request had one, each response parameter, and each output tensor under its
 * name (a single element as a bare value, more as a flat array; BYTES as
 * strings). Also the Server-Sent Events framing of generate_stream. Pure, so
 * it is table-tested.
 */
import type { DataType } from '../../core/datatypes';
import { ServerError } from '../../core/errors';
import { paramJson, type ParamValue } from '../../core/request';
import { tensorDataJson } from './tensor-json';

export interface GenerateOutput {
  name: string;
  datatype: DataType;
  shape: readonly number[];
  data: Uint8Array;
}

export interface GenerateResponseArgs {
  id: string;
  modelName: string;
  modelVersion: string;
  parameters?: Record<string, ParamValue>;
  outputs: readonly GenerateOutput[];
  /** --http-max-json-response-size: the most characters the object may take. */
  maxJsonChars: number;
}

export function encodeGenerateResponse(a: GenerateResponseArgs): string {
  const parts: string[] = [];
  if (a.id !== '') parts.push(`"id":${JSON.stringify(a.id)}`);
  parts.push(`"model_name":${JSON.stringify(a.modelName)}`, `"model_version":${JSON.stringify(a.modelVersion)}`);
  for (const [k, v] of Object.entries(a.parameters ?? {})) parts.push(`${JSON.stringify(k)}:${paramJson(v)}`);
  let used = 0;
  for (const p of parts) used += p.length + 1;
  for (const o of a.outputs) {
    let count = 1;
    for (const d of o.shape) count *= d;
    const text = tensorDataJson(o.name, o.datatype, o.data, count, a.maxJsonChars - used);
    if (text === undefined) {
      throw new ServerError(
        'INVALID_ARG',
        `the JSON of output '${o.name}' (${count} elements) of model '${a.modelName}' would make the generate response larger than ` +
          `${a.maxJsonChars} bytes, the most an HTTP response may carry as JSON (--http-max-json-response-size)`,
      );
    }
    const value = count === 1 ? text.slice(1, -1) : text;
    const part = `${JSON.stringify(o.name)}:${value}`;
    used += part.length + 1;
    parts.push(part);
  }
  return `{${parts.join(',')}}`;
}

/** One Server-Sent Event carrying `json` (generate_stream: one per response, errors too). */
export function sseEvent(json: string): string {
  return `data: ${json}\n\n`;
}

/** The body of an error, as every endpoint sends it. */
export function errorJson(message: string): string {
  return JSON.stringify({ error: message });
}
