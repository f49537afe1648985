import { test } from 'node:test';
import assert from 'node:assert/strict';
import { matchRoute, routeMethods, urlPath } from '../../src/frontend/http/routes';

const CASES: [string, string, unknown][] = [
  ['GET', '/v2', { kind: 'server_metadata' }],
  ['GET', '/v2/', { kind: 'not_found' }],
  ['GET', '/v2/health/live', { kind: 'health_live' }],
  ['GET', '/v2/health/ready?x=1', { kind: 'health_ready' }],
  ['POST', '/v2/health/ready', { kind: 'method_not_allowed' }],
  ['GET', '/v2/models/simple', { kind: 'model_metadata', model: 'simple', version: undefined }],
  ['GET', '/v2/models/simple/versions/3', { kind: 'model_metadata', model: 'simple', version: '3' }],
  ['GET', '/v2/models/simple/versions/x', { kind: 'not_found' }],
  ['GET', '/v2/models/simple/ready', { kind: 'model_ready', model: 'simple', version: undefined }],
  ['GET', '/v2/models/simple/versions/1/config', { kind: 'model_config', model: 'simple', version: '1' }],
  ['POST', '/v2/models/simple/infer', { kind: 'infer', model: 'simple', version: undefined }],
  ['GET', '/v2/models/simple/infer', { kind: 'method_not_allowed' }],
  ['POST', '/v2/models/my%20model/versions/2/infer', { kind: 'infer', model: 'my model', version: '2' }],
  ['POST', '/v2/models/simple/infer/', { kind: 'not_found' }],
  ['POST', '/v2/models/llm/generate', { kind: 'generate', model: 'llm', version: undefined, stream: false }],
  ['POST', '/v2/models/llm/versions/2/generate_stream?x=1', { kind: 'generate', model: 'llm', version: '2', stream: true }],
  ['GET', '/v2/models/llm/generate_stream', { kind: 'method_not_allowed' }],
  ['POST', '/v2/models/llm/generate_stream/', { kind: 'not_found' }],
  ['GET', '/v1/models', { kind: 'openai_models' }],
  ['GET', '/v1/models/my%20llm', { kind: 'openai_models', model: 'my llm' }],
  ['GET', '/v1/models/a/b', { kind: 'not_found' }],
  ['GET', '/v1/models/', { kind: 'not_found' }],
  ['POST', '/v1/completions', { kind: 'openai_completions', chat: false }],
  ['POST', '/v1/chat/completions?x=1', { kind: 'openai_completions', chat: true }],
  ['GET', '/v1/chat/completions', { kind: 'method_not_allowed' }],
  ['POST', '/v1/embeddings', { kind: 'openai_embeddings' }],
  ['GET', '/v1/embeddings', { kind: 'method_not_allowed' }],
  ['GET', '/v2/models/stats', { kind: 'model_stats' }],
  ['GET', '/v2/models/simple/stats', { kind: 'model_stats', model: 'simple', version: undefined }],
  ['GET', '/v2/models/simple/trace/setting', { kind: 'model_trace', model: 'simple' }],
  ['GET', '/v2/models/simple/versions/1/trace/setting', { kind: 'not_found' }],
  ['POST', '/v2/repository/index', { kind: 'repository_index', repository: undefined }],
  ['POST', '/v2/repository/models/simple/load', { kind: 'repository_load', repository: undefined, model: 'simple' }],
  ['POST', '/v2/repository/models/simple/unload', { kind: 'repository_unload', repository: undefined, model: 'simple' }],
  ['GET', '/v2/systemsharedmemory/status', { kind: 'shm', flavor: 'system', region: undefined, action: 'status' }],
  ['POST', '/v2/cudasharedmemory/region/r0/register', { kind: 'shm', flavor: 'cuda', region: 'r0', action: 'register' }],
  ['POST', '/v2/logging', { kind: 'logging' }],
  ['DELETE', '/v2/logging', { kind: 'method_not_allowed' }],
  ['GET', '/metrics', { kind: 'not_found' }],
  ['GET', '/v2/openapi.json', { kind: 'openapi' }],
  ['POST', '/v2/openapi.json', { kind: 'method_not_allowed' }],
  ['GET', '/v2/models/simple/openapi.json', { kind: 'model_openapi', model: 'simple', version: undefined }],
  ['GET', '/v2/models/simple/versions/2/openapi.json', { kind: 'model_openapi', model: 'simple', version: '2' }],
  ['GET', '/v2/models/openapi.json', { kind: 'model_metadata', model: 'openapi.json', version: undefined }],
  ['GET', '/v2/nodetron/metrics', { kind: 'nodetron_metrics' }],
  ['GET', '/v2/nodetron/status?x', { kind: 'nodetron_status' }],
  ['POST', '/v2/nodetron/status', { kind: 'method_not_allowed' }],
];

for (const [method, url, want] of CASES) {
  test(`${method} ${url}`, () => {
    assert.deepEqual(matchRoute(method, url), want);
  });
}

const METHODS: [string, readonly string[] | undefined][] = [
  ['/v2/models/simple/infer', ['POST']],
  ['/v2/models/llm/versions/1/generate_stream', ['POST']],
  ['/v2/logging?x=1', ['GET', 'POST']],
  ['/v2/models/simple/versions/1', ['GET']],
  ['/v2/systemsharedmemory/region/a/register', ['POST']],
  ['/v2/nope', undefined],
  ['/console', undefined],
];

for (const [url, want] of METHODS) {
  test(`routeMethods ${url}`, () => {
    assert.deepEqual(routeMethods(url), want);
  });
}

// The one path cut every route check uses (routes, CORS, the console, the OpenAI port's health).
const PATHS: [string, string][] = [
  ['/v2/health/ready', '/v2/health/ready'],
  ['/v2/health/ready?x=1', '/v2/health/ready'],
  ['/v2/logging?a=1?b=2', '/v2/logging'],
  ['/console/?', '/console/'],
  ['?x', ''],
  ['', ''],
];

for (const [url, want] of PATHS) {
  test(`urlPath ${JSON.stringify(url)}`, () => {
    assert.equal(urlPath(url), want);
  });
}
