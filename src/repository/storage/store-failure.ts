/**
 * The sentences a cloud store's failures are told in, so every provider
 * names the same things: what failed, the root as the user wrote it, the
 * credential used (its source, never its secret), what the provider said,
 * and what to do. Each provider maps its SDK's errors onto these kinds in
 * its own file; the kinds are the cases `object-store.ts` promises.
 */
import { ServerError, type ErrorCode } from '../../core/errors';

export type StoreFailureKind =
  /** The bucket or container does not exist (or the credential may not know it does). */
  | 'not-found'
  /** The object was listed but is gone when fetched. */
  | 'object-gone'
  /** The provider refused the credential (401/403). */
  | 'denied'
  /** No answer from the endpoint: refused, DNS, timeout. */
  | 'unreachable'
  /** The root URL or the credential entry is malformed. */
  | 'invalid'
  /** Anything else the provider answered. */
  | 'other';

const CODES: Record<StoreFailureKind, ErrorCode> = {
  'not-found': 'NOT_FOUND',
  'object-gone': 'NOT_FOUND',
  denied: 'INTERNAL',
  unreachable: 'UNAVAILABLE',
  invalid: 'INVALID_ARG',
  other: 'INTERNAL',
};

export interface StoreFailure {
  kind: StoreFailureKind;
  /** The root as the user wrote it. */
  url: string;
  /** What was being done: `list the objects`, `download 'simple/1/model.onnx'`. */
  doing: string;
  /** Where the credential came from (`ObjectStore.credentialSource`). */
  credentialSource: string;
  /** What the provider or the network said, one line. */
  detail: string;
  /** What the user can do about it, one sentence. */
  hint: string;
  /** Triton's own sentence for this case, where it has one: it goes first, so a Triton user finds the text they know. */
  lead?: string;
}

/** `[<lead> ]failed to list the objects of as://acct/models: <detail> (credential: <source>). <hint>` */
export function storeFailure(f: StoreFailure): ServerError {
  const detail = f.detail.replace(/\s+/g, ' ').trim();
  return new ServerError(
    CODES[f.kind],
    `${f.lead === undefined ? '' : `${f.lead} `}failed to ${f.doing} of ${f.url}: ${detail} (credential: ${f.credentialSource}). ${f.hint}`,
  );
}

/** Node's network error codes that mean the endpoint did not answer at all (every provider's one list). */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ECONNABORTED',
  'UND_ERR_CONNECT_TIMEOUT',
  'ABORT_ERR',
  'TimeoutError',
  'AbortError',
]);

/** Whether an SDK error (or its cause) is a network failure rather than an answer. */
export function isNetworkFailure(err: unknown): boolean {
  for (
    let e = err as { code?: unknown; name?: unknown; cause?: unknown; errno?: unknown } | undefined, depth = 0;
    e !== undefined && e !== null && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    if (typeof e.code === 'string' && UNREACHABLE_CODES.has(e.code)) return true;
    if (typeof e.name === 'string' && UNREACHABLE_CODES.has(e.name)) return true;
  }
  return false;
}

/** The first line of an error's message, without the provider's XML or JSON bodies. */
export function firstLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return (text.split('\n')[0] ?? '').slice(0, 300);
}
