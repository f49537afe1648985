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
    throw new ServerError('INVALID_ARG', `sending ${datatype} data via JSON is not supported. Please use the binary data format for output`);
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

/**
 * BYTES elements as JSON strings (decoded as UTF-8, not validated: what
 * JSON.stringify of each element's Buffer.toString would give). Each
 * chunk's JSON text is written as bytes, escapes included, into one scratch
 * buffer and decoded once, so no string is made per element: the bytes
 * that need no escape are copied as they are (a UTF-8 sequence, valid or
 * not, decodes the same inside the chunk as alone, since the closing quote
 * ends any sequence left open).
 */
function bytesJson(name: string, data: Uint8Array, count: number, budget: number): string | undefined {
  const spans = bytesElements(data, count);
  if (spans === undefined) throw sizeMismatch(name);
  return chunked(count, MIN_CHARS.string, budget, (from, to) => {
    let out = scratch;
    let p = 0;
    for (let e = from; e < to; e++) {
      const start = spans[2 * e];
      const end = start + spans[2 * e + 1];
      if (p + end - start + 3 > out.length) out = reserve(p, end - start + 3);
      if (e > from) out[p++] = 0x2c; // ,
      out[p++] = 0x22; // "
      for (let k = start; k < end; k++) {
        const b = data[k];
        if (b >= 0x20 && b !== 0x22 && b !== 0x5c) {
          out[p++] = b;
          continue;
        }
        if (p + end - k + 6 > out.length) out = reserve(p, end - k + 6);
        out[p++] = 0x5c; // \
        const short = SHORT_ESCAPES[b];
        if (short !== 0) {
          out[p++] = short;
        } else {
          out[p++] = 0x75; // u00XX, lower-case hex as JSON.stringify writes it
          out[p++] = 0x30;
          out[p++] = 0x30;
          out[p++] = HEX[b >>> 4];
          out[p++] = HEX[b & 15];
        }
      }
      out[p++] = 0x22;
    }
    const text = out.toString('utf8', 0, p);
    if (scratch.length > SCRATCH_KEEP) scratch = Buffer.alloc(0); // a huge chunk's buffer is not kept
    return text;
  });
}

/** The JSON text bytes of one chunk of BYTES elements (reused: encoding is synchronous). */
let scratch: Buffer = Buffer.alloc(0);
const SCRATCH_KEEP = 1 << 22;

/** The scratch buffer with room for `n` more bytes after the `p` written, which are kept. */
function reserve(p: number, n: number): Buffer {
  const next = Buffer.allocUnsafe(Math.max(p + n, 2 * scratch.length, 4096));
  scratch.copy(next, 0, 0, p);
  scratch = next;
  return next;
}
const HEX = Buffer.from('0123456789abcdef');
/** The letter after `\` for the bytes JSON.stringify escapes short (" \ \b \f \n \r \t); 0: use \u00XX. */
const SHORT_ESCAPES = (() => {
  const t = new Uint8Array(256);
  t[0x22] = 0x22;
  t[0x5c] = 0x5c;
  t[0x08] = 0x62; // b
  t[0x0c] = 0x66; // f
  t[0x0a] = 0x6e; // n
  t[0x0d] = 0x72; // r
  t[0x09] = 0x74; // t
  return t;
})();

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
