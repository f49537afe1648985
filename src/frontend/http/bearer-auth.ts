/**
 * The bearer-token check of an HTTP port (--http-auth-token-file, and
 * --openai-auth-token-file on --openai-port): run on every request before
 * any route, restricted-API check or body read; a request without the right
 * token gets 401 with `WWW-Authenticate: Bearer` (RFC 6750 §3) and a KServe
 * error body, and nothing else runs for it. Exempt: CORS preflights (a
 * browser never sends credentials on one; they run nothing but the CORS
 * check), the console's static files (they hold no data; the page asks for
 * the token and sends it with each call), and, with --auth-exempt-health,
 * the health routes.
 */
import { BearerTokens, tokenRefusal } from '../../core/bearer-tokens';
import type { Reply, RequestHead } from './http-reply';

export class BearerAuth {
  private readonly tokens: BearerTokens;

  constructor(
    tokens: readonly string[],
    private readonly flag: string,
    private readonly exemptHealth: boolean,
  ) {
    this.tokens = new BearerTokens(tokens);
  }

  /** Answers 401 and returns true when `head` lacks a valid token; `health`: the route is a health check. */
  refused(reply: Reply, head: RequestHead, health: boolean): boolean {
    if (health && this.exemptHealth) return false;
    const check = this.tokens.check(head.header('authorization'));
    if (check === 'ok') return false;
    const challenge = check === 'missing' ? 'Bearer realm="nodetron"' : 'Bearer realm="nodetron", error="invalid_token"';
    reply.send(401, { 'Content-Type': 'application/json', 'WWW-Authenticate': challenge }, JSON.stringify({ error: tokenRefusal(check, this.flag, 'header') }));
    return true;
  }
}
