/**
 * `--http-header-forward-pattern` / `--grpc-header-forward-pattern`: request
 * headers (gRPC metadata) whose name matches the pattern become string
 * request parameters of the same name, which a model reads as any other
 * parameter (a Python model's `request.parameters()`). The pattern
 * (core/forward-pattern.ts) matches anywhere in the name unless anchored. A forwarded name that is one of the
 * reserved parameters is refused: a header cannot set what the server owns.
 */
import { ServerError } from '../core/errors';
import type { ParamValue } from '../core/request';

/** Parameter names the server owns (Triton's parameters extension), and its `triton_` prefix. */
const RESERVED = new Set(['sequence_id', 'sequence_start', 'sequence_end', 'priority', 'timeout', 'headers', 'binary_data_output']);

function isReservedParameter(name: string): boolean {
  return RESERVED.has(name) || name.startsWith('triton_');
}

/** Adds the headers that match `rule` to `parameters` (as strings); INVALID_ARG for a reserved name. */
export function forwardHeaders(rule: RegExp, headers: Iterable<[string, string]>, parameters: Record<string, ParamValue>): void {
  for (const [name, value] of headers) {
    if (!rule.test(name)) continue;
    if (isReservedParameter(name)) {
      throw new ServerError(
        'INVALID_ARG',
        `header '${name}' matches the header forward pattern, but '${name}' is a parameter name reserved for Triton usage; rename the header or narrow the pattern`,
      );
    }
    parameters[name] = value;
  }
}
