import assert from 'node:assert/strict';
import { test } from 'node:test';
import { corsHeaders, preflight } from '../../src/frontend/http/cors';

test('corsHeaders: off, no Origin, listed, any, not listed', () => {
  const table: [string[], string, Record<string, string> | undefined][] = [
    [[], 'http://a', undefined],
    [['http://a'], '', undefined],
    [
      ['http://a'],
      'http://a',
      { 'Access-Control-Allow-Origin': 'http://a', Vary: 'Origin', 'Access-Control-Expose-Headers': 'Inference-Header-Content-Length, Content-Encoding' },
    ],
    [['*'], 'http://b', { 'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': 'Inference-Header-Content-Length, Content-Encoding' }],
    [['http://a'], 'http://b', undefined],
  ];
  for (const [allowed, origin, want] of table) assert.deepEqual(corsHeaders(allowed, origin), want, `${allowed} ${origin}`);
});

test('preflight: answered on known routes with their methods; others go on as usual', () => {
  const h = (m: Record<string, string>) => (name: string) => m[name] ?? '';
  const ask = { origin: 'http://a', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, admin-key' };
  const ok = preflight(['http://a'], 'OPTIONS', '/v2/models/simple/infer', h(ask));
  assert.equal(ok?.status, 204);
  assert.equal(ok?.headers['Access-Control-Allow-Methods'], 'POST');
  assert.equal(ok?.headers['Access-Control-Allow-Headers'], 'content-type, admin-key');
  assert.equal(ok?.headers['Access-Control-Allow-Origin'], 'http://a');
  assert.equal(ok?.error, undefined);

  const logging = preflight(['*'], 'OPTIONS', '/v2/logging', h({ ...ask, 'access-control-request-method': 'GET' }));
  assert.equal(logging?.headers['Access-Control-Allow-Methods'], 'GET, POST');

  const wrongMethod = preflight(['http://a'], 'OPTIONS', '/v2/health/live', h(ask));
  assert.equal(wrongMethod?.status, 405);
  assert.equal(wrongMethod?.error, '/v2/health/live answers GET, not POST');

  const stranger = preflight(['http://a'], 'OPTIONS', '/v2/models/simple/infer', h({ ...ask, origin: 'http://evil' }));
  assert.equal(stranger?.status, 403);
  assert.equal(stranger?.error, "origin 'http://evil' is not allowed to call this server; allowed by --http-cors-origin: http://a");
  assert.equal(stranger?.headers['Access-Control-Allow-Origin'], undefined);

  assert.equal(preflight([], 'OPTIONS', '/v2/models/simple/infer', h(ask)), undefined, 'CORS off');
  assert.equal(preflight(['*'], 'OPTIONS', '/v2/nope', h(ask)), undefined, 'unknown path: 404 as usual');
  assert.equal(preflight(['*'], 'OPTIONS', '/v2/health/live', h({ origin: 'http://a' })), undefined, 'not a preflight: 405 as usual');
  assert.equal(preflight(['*'], 'GET', '/v2/health/live', h(ask)), undefined);
});
