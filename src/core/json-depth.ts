/**
 * JSON nesting depth: Triton's limit of 100 nested arrays in a tensor's
 * `data` (protocol.md §1.8.4), with its text, and a scanner that measures the
 * nesting of JSON text without parsing it and without recursion, so a body
 * of a million `[` costs one pass and no stack. The parsers themselves
 * (JSON.parse, request-json.ts) take any depth, as Triton's iterative
 * rapidjson does; what walks a parsed value recursively checks the depth
 * first (json-tensor-data.ts for tensor data, request-json.ts
 * parseControlJson for the control APIs' bodies, config/json-config.ts for a
 * config override).
 */
import { ServerError } from './errors';

export const MAX_JSON_DEPTH = 100;

/** Triton's text (INVALID_ARG, 400). */
export function jsonDepthError(): ServerError {
  return new ServerError('INVALID_ARG', `JSON nesting depth exceeds maximum allowed limit (${MAX_JSON_DEPTH})`);
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The deepest nesting of arrays and objects in `text` (`1` = `[1]` or
 * `{}`, 0 = a bare value), counted outside strings. Stops counting, and
 * returns, once the depth passes `stopAbove`. The text need not be valid
 * JSON: unbalanced brackets simply count as they come.
 */
export function jsonNestingDepth(text: string, stopAbove = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0, n = text.length; i < n; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH)
        i++; // the escaped character cannot end the string
      else if (c === QUOTE) inString = false;
      continue;
    }
    switch (c) {
      case QUOTE:
        inString = true;
        break;
      case 0x5b: // [
      case 0x7b: // {
        if (++depth > deepest) {
          deepest = depth;
          if (deepest > stopAbove) return deepest;
        }
        break;
      case 0x5d: // ]
      case 0x7d: // }
        if (depth > 0) depth--;
        break;
      default:
        break;
    }
  }
  return deepest;
}

/** Throws Triton's depth error when `text` nests deeper than MAX_JSON_DEPTH. */
export function checkJsonDepth(text: string): void {
  if (jsonNestingDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) throw jsonDepthError();
}
