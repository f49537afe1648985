/**
 * 64-bit integers in the stub's JSON frames. The host reads frames with
 * JSON.parse, which rounds an integer past 2^53, so such an integer (a
 * correlation id, a response parameter) travels as `{"int":"<decimal>"}`
 * both ways; the stub's side is `_nt_ipc.py` wire_int / from_wire_int.
 * Smaller integers, strings and booleans travel as themselves. A BLS
 * request's parameters (JSON text inside the frame) are tagged the same
 * way; the parameters the host sends the stub as JSON text (a request's
 * parameters(), a BLS response's) are exact literals instead, which
 * Python's json reads exactly (core/request.ts paramsJson).
 */
import type { ParamValue } from '../core/request';

export interface WireBigInt {
  int: string;
}

export type WireValue = string | number | boolean | WireBigInt;

/** A value as the frame carries it: a bigint as its tagged decimal. */
export function toWire(v: ParamValue): WireValue {
  return typeof v === 'bigint' ? { int: v.toString() } : v;
}

/** A value from a frame: the tagged decimal back as a bigint (a number while safe). */
export function fromWire(v: WireValue): ParamValue {
  if (typeof v !== 'object' || v === null) return v;
  const n = BigInt(v.int);
  return n >= -BigInt(Number.MAX_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
}

/** Every value of a frame's parameters through fromWire. */
export function paramsFromWire(params: Record<string, WireValue>): Record<string, ParamValue> {
  const out: Record<string, ParamValue> = {};
  for (const k of Object.keys(params)) {
    const v = fromWire(params[k]!);
    if (k === '__proto__') Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    else out[k] = v;
  }
  return out;
}
