/**
 * Bearer tokens (`Authorization: Bearer <token>`, RFC 6750) for every route
 * of every port: --http-auth-token-file, --grpc-auth-token-file and
 * --openai-auth-token-file name files of tokens, one per line. A presented
 * token is compared with every token the server has, in time that does not
 * depend on where the two differ (their SHA-256 digests, crypto's
 * timingSafeEqual, no early exit). Tokens are never logged or echoed.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

export type TokenCheck = 'ok' | 'missing' | 'invalid';

/** The tokens of a token file's text: one per line, surrounding whitespace trimmed; blank lines and `#` comments skipped. */
export function parseTokenFile(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

export class BearerTokens {
  private readonly digests: Buffer[];

  constructor(tokens: readonly string[]) {
    this.digests = tokens.map(digest);
  }

  /** `authorization`: the header's (or metadata's) value, '' when there is none. */
  check(authorization: string): TokenCheck {
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    if (m === null) return authorization.trim() === '' ? 'missing' : 'invalid';
    const presented = digest(m[1]!);
    let match = false;
    for (const d of this.digests) match = timingSafeEqual(d, presented) || match;
    return match ? 'ok' : 'invalid';
  }
}

/** What a refused request is told: which flag asks for the token, and how to send one. */
export function tokenRefusal(check: Exclude<TokenCheck, 'ok'>, flag: string, where: 'header' | 'metadata'): string {
  const how = where === 'header' ? "the header 'Authorization: Bearer <token>'" : "the metadata 'authorization: Bearer <token>'";
  return check === 'missing'
    ? `missing bearer token: this server requires ${how} on every request (${flag})`
    : `invalid bearer token: send ${how} with one of the tokens in the server's ${flag}`;
}
