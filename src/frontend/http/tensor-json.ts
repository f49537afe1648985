/**
 * Output tensor bytes → the JSON text of its `data` array (protocol.md
 * §1.8.4, "Output JSON data"): flat, BOOL as true/false, integers exact
 * (64-bit via BigInt arrays), FP32 widened to double and printed shortest
 * round-trip (0.1f → 0.10000000149011612), NaN/±Infinity bare, BYTES as
 * strings. Typed-array join does the number formatting natively.
 */
import type { DataType } from '../../core/datatypes';
import { ELEMENT_SIZE } from '../../core/datatypes';
import { ServerError } from '../../core/errors';
import { bytesElements, numericView } from '../../request/tensor-view';

function sizeMismatch(name: string): ServerError {
  return new ServerError('INTERNAL', `output tensor shape does not match size of output for '${name}'`);
}

/** `[...]` for `count` elements of `data`; throws Triton's errors for sizes and FP16/BF16. */
export function tensorDataJson(name: string, datatype: DataType, data: Uint8Array, count: number): string {
  if (datatype === 'FP16' || datatype === 'BF16') {
    throw new ServerError(
      'INVALID_ARG',
      `sending ${datatype} data via JSON is not supported. Please use the binary data format for output`,
    );
  }
  if (datatype === 'BYTES') return bytesJson(name, data, count);
  if (data.byteLength !== count * ELEMENT_SIZE[datatype]) throw sizeMismatch(name);
  if (datatype === 'BOOL') {
    let s = '[';
    for (let e = 0; e < count; e++) s += (e === 0 ? '' : ',') + (data[e] === 0 ? 'false' : 'true');
    return `${s}]`;
  }
  const view = numericView(datatype, data, count);
  if (view === undefined) throw sizeMismatch(name);
  return `[${view.join(',')}]`;
}

/** BYTES elements as JSON strings built from the raw bytes (decoded as UTF-8, not validated). */
function bytesJson(name: string, data: Uint8Array, count: number): string {
  const spans = bytesElements(data, count);
  if (spans === undefined) throw sizeMismatch(name);
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const strings = new Array<string>(count);
  for (let e = 0; e < count; e++) {
    const off = spans[2 * e];
    strings[e] = buf.toString('utf8', off, off + spans[2 * e + 1]);
  }
  return JSON.stringify(strings);
}
