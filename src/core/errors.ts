/**
 * The one error type of nodetron, and the one table that maps its codes to
 * HTTP and gRPC status at the edge. Codes are Triton's TRITONSERVER_ERROR_*
 * names (protocol.md §1.2, §2.2), plus nodetron's RESOURCE_EXHAUSTED: the
 * server holds as many requests as --max-queued-requests allows (429 /
 * gRPC RESOURCE_EXHAUSTED, with a retry hint, RETRY_AFTER_SECONDS).
 */
export type ErrorCode =
  'UNKNOWN' | 'INTERNAL' | 'NOT_FOUND' | 'INVALID_ARG' | 'UNAVAILABLE' | 'UNSUPPORTED' | 'ALREADY_EXISTS' | 'CANCELLED' | 'RESOURCE_EXHAUSTED';

export const ERROR_CODES: readonly ErrorCode[] = [
  'UNKNOWN',
  'INTERNAL',
  'NOT_FOUND',
  'INVALID_ARG',
  'UNAVAILABLE',
  'UNSUPPORTED',
  'ALREADY_EXISTS',
  'CANCELLED',
  'RESOURCE_EXHAUSTED',
];

/**
 * The retry hint of a RESOURCE_EXHAUSTED answer, in seconds: HTTP's
 * `Retry-After` header, gRPC's `retry-after` trailing metadata entry. A
 * full server has drained a queue's worth of requests by then for any model
 * that answers within a few milliseconds; clients that back off further on
 * repeated refusals need no more precise number.
 */
export const RETRY_AFTER_SECONDS = 1;

export class ServerError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.code = code;
    this.name = 'ServerError';
  }
}

/** Plain form of an error, for crossing thread and process boundaries. */
export interface ErrorInfo {
  code: ErrorCode;
  message: string;
}

export function toErrorInfo(err: unknown): ErrorInfo {
  if (err instanceof ServerError) return { code: err.code, message: err.message };
  if (err instanceof Error) return { code: 'INTERNAL', message: err.message };
  return { code: 'INTERNAL', message: String(err) };
}

export function fromErrorInfo(info: ErrorInfo): ServerError {
  return new ServerError(info.code, info.message);
}

/** HTTP status per code (Triton ≥ 2.42). */
export const HTTP_STATUS: Record<ErrorCode, number> = {
  UNKNOWN: 400,
  INTERNAL: 500,
  NOT_FOUND: 404,
  INVALID_ARG: 400,
  UNAVAILABLE: 503,
  UNSUPPORTED: 501,
  ALREADY_EXISTS: 400,
  CANCELLED: 400,
  RESOURCE_EXHAUSTED: 429,
};

/** gRPC status numbers per code (protocol.md §2.2). */
export const GRPC_STATUS: Record<ErrorCode, number> = {
  UNKNOWN: 2, // UNKNOWN
  INTERNAL: 13, // INTERNAL
  NOT_FOUND: 5, // NOT_FOUND
  INVALID_ARG: 3, // INVALID_ARGUMENT
  UNAVAILABLE: 14, // UNAVAILABLE
  UNSUPPORTED: 12, // UNIMPLEMENTED
  ALREADY_EXISTS: 6, // ALREADY_EXISTS
  CANCELLED: 1, // CANCELLED
  RESOURCE_EXHAUSTED: 8, // RESOURCE_EXHAUSTED
};

/** The words Triton prints for a code in load reasons ("Internal: ..."). */
export const CODE_WORDS: Record<ErrorCode, string> = {
  UNKNOWN: 'Unknown',
  INTERNAL: 'Internal',
  NOT_FOUND: 'Not found',
  INVALID_ARG: 'Invalid argument',
  UNAVAILABLE: 'Unavailable',
  UNSUPPORTED: 'Unsupported',
  ALREADY_EXISTS: 'Already exists',
  CANCELLED: 'Cancelled',
  RESOURCE_EXHAUSTED: 'Resource exhausted',
};

/** `[request id: <id>] ` as Triton's core puts it before validation errors. */
export function requestIdPrefix(id: string): string {
  return `[request id: ${id === '' ? '<id_unknown>' : id}] `;
}

/** Triton's text for a port another process holds (its HTTP, gRPC and metrics servers say it alike), trailing space included. */
export function socketInUseText(hostPort: string): string {
  return `Socket '${hostPort}' already in use `;
}
