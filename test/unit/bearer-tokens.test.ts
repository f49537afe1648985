/** BearerTokens and token files, table-driven: what a header value checks as, and which lines are tokens. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BearerTokens, parseTokenFile, tokenRefusal, type TokenCheck } from '../../src/core/bearer-tokens';

const TOKENS = new BearerTokens(['alpha-1', 'beta.2~']);
const CHECKS: [string, string, TokenCheck][] = [
  ['the first token', 'Bearer alpha-1', 'ok'],
  ['the second token', 'Bearer beta.2~', 'ok'],
  ['the scheme in any case, spaces around', 'bearer   alpha-1  ', 'ok'],
  ['no header', '', 'missing'],
  ['only spaces', '   ', 'missing'],
  ['a wrong token', 'Bearer alpha-2', 'invalid'],
  ['a prefix of a token', 'Bearer alpha', 'invalid'],
  ['a token with more after it', 'Bearer alpha-1x', 'invalid'],
  ['two words', 'Bearer alpha-1 beta.2~', 'invalid'],
  ['the scheme alone', 'Bearer', 'invalid'],
  ['another scheme', 'Basic YWxwaGEtMQ==', 'invalid'],
  ['the token without a scheme', 'alpha-1', 'invalid'],
];
for (const [name, header, want] of CHECKS) {
  test(`bearer check: ${name}`, () => assert.equal(TOKENS.check(header), want));
}

test('no tokens at all: nothing checks ok', () => assert.equal(new BearerTokens([]).check('Bearer x'), 'invalid'));

const FILES: [string, string, string[]][] = [
  ['one per line, trimmed', ' a \nb\r\n', ['a', 'b']],
  ['blank lines and comments skipped', '# tokens\n\na\n  # not this\nb\n', ['a', 'b']],
  ['empty', '\n\n# nothing\n', []],
];
for (const [name, text, want] of FILES) {
  test(`token file: ${name}`, () => assert.deepEqual(parseTokenFile(text), want));
}

test('refusal texts name the flag and how to send a token, never a token', () => {
  assert.equal(
    tokenRefusal('missing', '--http-auth-token-file', 'header'),
    "missing bearer token: this server requires the header 'Authorization: Bearer <token>' on every request (--http-auth-token-file)",
  );
  assert.equal(
    tokenRefusal('invalid', '--grpc-auth-token-file', 'metadata'),
    "invalid bearer token: send the metadata 'authorization: Bearer <token>' with one of the tokens in the server's --grpc-auth-token-file",
  );
});
