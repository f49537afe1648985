/**
 * What rapidjson calls an int64 or a uint64, on the values request-json.ts
 * gives. Triton reads integer tensor elements and integer parameters with
 * IsInt64 / IsUint64, so these decide what the HTTP decode accepts.
 *
 * From the exact parse an integer literal is a number while it is a safe
 * integer and a bigint past that (within [-2^63, 2^64-1]); anything else (a
 * fraction, an exponent, a literal outside both ranges) is a double, which
 * is no integer to rapidjson.
 *
 * From JSON.parse every number is a double, exact below 2^53. An integral
 * double past 2^53 may be a rounded integer literal, so a reader of a
 * JSON.parse document throws InexactInteger there, and the decode starts
 * again on the exact parse (infer-request-decode.ts): bodies without such
 * values never pay for it.
 */

export const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
export const UINT64_MAX = 2n ** 64n - 1n;

/** The document being read came from JSON.parse and may hold rounded integers; the decode retries exactly. */
export class InexactInteger extends Error {
  constructor() {
    super('an integer past 2^53 in a JSON.parse document: decode again from the exact parse');
  }
}

/**
 * A number written with a fraction or an exponent (`1.0`, `1e2`): a double
 * to rapidjson, so no integer, however integral its value. JSON.parse gives
 * such a literal as the number it equals; where an integer tensor's data
 * may hold one, the decode parses again marking them (request-json.ts
 * `markDoubles`, infer-request-decode.ts), and isJsonInteger refuses it.
 */
export class DoubleLiteral {
  constructor(readonly value: number) {}
}

/** One instance, thrown each time: a new Error would capture a stack trace per retry. */
const INEXACT = new InexactInteger();

/** Whether the document being read is exact (set by the decode; reads are synchronous, one document at a time per thread). */
let exactDocument = true;

export function readingExact(exact: boolean): void {
  exactDocument = exact;
}

/** rapidjson IsUint64 (`unsigned`) or IsInt64 of a parsed JSON value; throws InexactInteger where it cannot tell. */
export function isJsonInteger(v: unknown, unsigned: boolean): v is number | bigint {
  if (typeof v === 'number') {
    if (Number.isSafeInteger(v)) return !unsigned || v >= 0;
    if (!exactDocument && Number.isInteger(v)) throw INEXACT;
    return false;
  }
  if (typeof v === 'bigint') return unsigned ? v >= 0n && v <= UINT64_MAX : v >= INT64_MIN && v <= INT64_MAX;
  return false;
}

/** rapidjson IsUint64. */
export function isJsonUInt(v: unknown): v is number | bigint {
  return isJsonInteger(v, true);
}

/**
 * A uint64 where only its size matters (a shape, a byte size, an offset, a
 * priority, a timeout): past 2^53 every such value is far beyond any limit,
 * so the nearest double says the same.
 */
export function uintSize(v: number | bigint): number {
  return typeof v === 'number' ? v : Number(v);
}

/** A custom parameter's number: an integral double past 2^53 from JSON.parse may be a rounded int64 (InexactInteger). */
export function checkExactNumber(v: number): void {
  if (!exactDocument && !Number.isSafeInteger(v) && Number.isInteger(v)) throw INEXACT;
}
