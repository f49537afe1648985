import assert from 'node:assert/strict';
import { test } from 'node:test';
import { categoryOfUrl, openaiRestricted, restrictedError } from '../../src/frontend/http/restricted-api';
import { matchRoute } from '../../src/frontend/http/routes';

test('every route maps to its API category (whatever the method)', () => {
  const table: [string, string | undefined][] = [
    ['/v2/health/live', 'health'],
    ['/v2/health/ready', 'health'],
    ['/v2/models/m/ready', 'health'],
    ['/v2', 'metadata'],
    ['/v2/models/m', 'metadata'],
    ['/v2/models/m/versions/2', 'metadata'],
    ['/v2/models/m/infer', 'inference'],
    ['/v2/models/m/generate_stream', 'inference'],
    ['/v1/chat/completions', 'inference'],
    ['/v1/completions', 'inference'],
    ['/v1/models', 'model-repository'],
    ['/v1/models/llm', 'model-repository'],
    ['/v2/models/m/config', 'model-config'],
    ['/v2/models/stats', 'statistics'],
    ['/v2/models/m/stats', 'statistics'],
    ['/v2/trace/setting', 'trace'],
    ['/v2/models/m/trace/setting', 'trace'],
    ['/v2/logging', 'logging'],
    ['/v2/repository/index', 'model-repository'],
    ['/v2/repository/models/m/load', 'model-repository'],
    ['/v2/repository/models/m/unload?x=1', 'model-repository'],
    ['/v2/systemsharedmemory/status', 'shared-memory'],
    ['/v2/cudasharedmemory/region/r/register', 'shared-memory'],
    ['/v2/openapi.json', 'metadata'],
    ['/v2/models/m/openapi.json', 'metadata'],
    ['/v2/nodetron/metrics', 'statistics'],
    ['/v2/nodetron/status', 'statistics'],
    ['/console/app.js', undefined],
    ['/v2/nothing', undefined],
  ];
  for (const [url, category] of table) assert.equal(categoryOfUrl(url), category, url);
});

test('restrictedError: header name case-insensitive, value exact', () => {
  const groups = [{ apis: ['model-repository', 'logging'], key: 'Admin-Key', value: 'S3cret' }];
  const headers = (h: Record<string, string>) => (name: string) => h[name] ?? '';
  const table: [string, Record<string, string>, string | undefined][] = [
    ['/v2/repository/index', {}, "This API is restricted, expecting header 'Admin-Key'"],
    ['/v2/repository/index', { 'admin-key': 's3cret' }, "This API is restricted, expecting header 'Admin-Key'"],
    ['/v2/repository/index', { 'admin-key': 'S3cret' }, undefined],
    ['/v2/logging', {}, "This API is restricted, expecting header 'Admin-Key'"],
    ['/v2/models/m/infer', {}, undefined],
    ['/v2/unknown', {}, undefined],
  ];
  for (const [url, h, expected] of table) assert.equal(restrictedError(groups, url, headers(h)), expected, url);
  assert.equal(
    restrictedError([], '/v2/repository/index', () => ''),
    undefined,
  );
});

test('--openai-restricted-api on --openai-port: Triton OpenAI frontend categories, the header named when missing', () => {
  const groups = [{ apis: ['inference', 'health'], key: 'Api-Key', value: 's3' }];
  const none = (): string => '';
  const good = (n: string): string => (n === 'api-key' ? 's3' : '');
  const cases: [string, ReturnType<typeof matchRoute>, boolean, (n: string) => string, string | undefined][] = [
    ['chat without the header', matchRoute('POST', '/v1/chat/completions'), false, none, "This API is restricted, expecting header 'Api-Key'"],
    ['completions with it', matchRoute('POST', '/v1/completions'), false, good, undefined],
    ['health without it', matchRoute('GET', '/health/ready'), true, none, "This API is restricted, expecting header 'Api-Key'"],
    ['models: not in a group', matchRoute('GET', '/v1/models'), false, none, undefined],
    ['embeddings: the embedding category, not in this group', matchRoute('POST', '/v1/embeddings'), false, none, undefined],
  ];
  for (const [name, route, health, header, want] of cases) assert.equal(openaiRestricted(groups, route, health, header), want, name);
  assert.equal(openaiRestricted([], matchRoute('POST', '/v1/completions'), false, none), undefined, 'no groups: open');
  assert.equal(
    openaiRestricted([{ apis: ['embedding'], key: 'K', value: 'v' }], matchRoute('POST', '/v1/embeddings'), false, none),
    "This API is restricted, expecting header 'K'",
    'embeddings are the embedding category',
  );
});
