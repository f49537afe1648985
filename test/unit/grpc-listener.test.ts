/**
 * The pure parts of frontend/grpc/grpc-listener.ts, table-driven: the
 * grpc-message of a refused call as gRPC's HTTP/2 protocol spells it, and
 * the host a bracketed IPv6 --grpc-address listens on.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { grpcMessage, listenHost, tooManyConnectionsText } from '../../src/frontend/grpc/grpc-listener';

test('grpcMessage: printable ASCII but % passes as it is; the rest is percent-encoded UTF-8', () => {
  const cases: [string, string][] = [
    ['plain text (a; b=c): d, e', 'plain text (a; b=c): d, e'],
    ['100%', '100%25'],
    ['tab\there', 'tab%09here'],
    ['line\nbreak', 'line%0Abreak'],
    ['café', 'caf%C3%A9'],
    ['~ and space', '~ and space'],
    ['', ''],
  ];
  for (const [text, wire] of cases) assert.equal(grpcMessage(text), wire, JSON.stringify(text));
});

test('the refusal text names the count and the flag, and crosses the wire unchanged', () => {
  const text = tooManyConnectionsText(5, 5);
  assert.equal(
    text,
    'the server has too many open gRPC connections (5; --grpc-max-connections=5): try again later, or send more calls over an open connection',
  );
  assert.equal(grpcMessage(text), text);
});

test('listenHost: bracketed IPv6 literals lose their brackets; other hosts are left alone', () => {
  const cases: [string, string][] = [
    ['0.0.0.0', '0.0.0.0'],
    ['[::]', '::'],
    ['[::1]', '::1'],
    ['::1', '::1'],
    ['localhost', 'localhost'],
  ];
  for (const [address, host] of cases) assert.equal(listenHost(address), host, address);
});
