/**
 * Output tensor bytes → the JSON text of its `data` array (protocol.md
 * §1.8.4, "Output JSON data"): flat, BOOL as true/false, integers exact
 * (64-bit via BigInt arrays), FP32 widened to double and printed shortest
 * round-trip (0.1f → 0.10000000149011612), NaN/±Infinity bare, BYTES as
 * strings. Typed-array join does the number formatting natively.
 *
 * The text is built in chunks of CHUNK elements against a budget of
 * characters: a tensor whose text would pass it is given up as soon as it
 * does (or before any chunk, when even the shortest text of that many
 * elements would), so an output can never make the encoder hold more than
 * the budget; the caller says what the budget is and what to tell the
 * client (infer-response-encode.ts).
 */
import type { DataType } from '../../core/datatypes';
import { ELEMENT_SIZE } from '../../core/datatypes';
import { ServerError } from '../../core/errors';
import { bytesElements, numericView } from '../../request/tensor-view';

/** Elements formatted per chunk: small enough to stop early, large enough that joining chunks costs nothing. */
const CHUNK = 65536;

/** The fewest characters one element takes, separator included: `1,`, `true,`, `"",`. */
const MIN_CHARS = { number: 2, bool: 5, string: 3 } as const;

function sizeMismatch(name: string): ServerError {
  return new ServerError('INTERNAL', `output tensor shape does not match size of output for '${name}'`);
}

/**
 * `[...]` for `count` elements of `data`, or undefined when that text would
 * take more than `budget` characters. Throws Triton's errors for sizes and
 * FP16/BF16.
 */
export function tensorDataJson(name: string, datatype: DataType, data: Uint8Array, count: number, budget = Number.POSITIVE_INFINITY): string | undefined {
  if (datatype === 'FP16' || datatype === 'BF16') {
    throw new ServerError(
      'INVALID_ARG',
      `sending ${datatype} data via JSON is not supported. Please use the binary data format for output`,
    );
  }
  if (datatype === 'BYTES') return bytesJson(name, data, count, budget);
  if (data.byteLength !== count * ELEMENT_SIZE[datatype]) throw sizeMismatch(name);
  if (datatype === 'BOOL') {
    return chunked(count, MIN_CHARS.bool, budget, (from, to) => {
      const words = new Array<string>(to - from);
      for (let e = from; e < to; e++) words[e - from] = data[e] === 0 ? 'false' : 'true';
      return words.join(',');
    });
  }
  const view = numericView(datatype, data, count);
  if (view === undefined) throw sizeMismatch(name);
  return chunked(count, MIN_CHARS.number, budget, (from, to) => view.subarray(from, to).join(','));
}

/** BYTES elements as JSON strings built from the raw bytes (decoded as UTF-8, not validated). */
function bytesJson(name: string, data: Uint8Array, count: number, budget: number): string | undefined {
  const spans = bytesElements(data, count);
  if (spans === undefined) throw sizeMismatch(name);
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return chunked(count, MIN_CHARS.string, budget, (from, to) => {
    const strings = new Array<string>(to - from);
    for (let e = from; e < to; e++) {
      const off = spans[2 * e];
      strings[e - from] = buf.toString('utf8', off, off + spans[2 * e + 1]);
    }
    const text = JSON.stringify(strings);
    return text.slice(1, -1);
  });
}

/**
 * `[` + the chunks' texts joined by `,` + `]`, or undefined once the text
 * passes `budget` characters. `minChars`: the fewest characters an element
 * takes with its separator, for the check before any formatting.
 */
function chunked(count: number, minChars: number, budget: number, format: (from: number, to: number) => string): string | undefined {
  if (count * minChars + 1 > budget) return undefined; // `[` + elements + `]`, less the last separator
  if (count <= CHUNK) {
    const text = `[${format(0, count)}]`;
    return text.length > budget ? undefined : text;
  }
  const parts: string[] = [];
  let length = 1;
  for (let from = 0; from < count; from += CHUNK) {
    const part = format(from, Math.min(count, from + CHUNK));
    length += part.length + 1; // its separator, or the closing `]`
    if (length > budget) return undefined;
    parts.push(part);
  }
  return `[${parts.join(',')}]`;
}
