import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ModelConfig } from '../../src/core/model-config';
import { modelOpenApi } from '../../src/frontend/http/model-openapi';
import { serverOpenApi } from '../../src/frontend/http/openapi';
import { SERVER_EXTENSIONS } from '../../src/server-info';

type Doc = {
  paths: Record<string, Record<string, { security?: unknown[] }>>;
  components: { schemas: Record<string, any>; securitySchemes?: Record<string, unknown> };
};

test('server document: the routes of the extensions served, restricted ones with their header', () => {
  const doc = JSON.parse(
    serverOpenApi({
      name: 'triton',
      version: '2.73.0',
      extensions: SERVER_EXTENSIONS,
      restricted: [{ apis: ['model-repository'], key: 'Admin-Key', value: 's' }],
    }),
  ) as Doc & { openapi: string };
  assert.equal(doc.openapi, '3.1.0');
  for (const p of [
    '/v2/health/live',
    '/v2/models/{model}/infer',
    '/v2/repository/index',
    '/v2/logging',
    '/v2/systemsharedmemory/status',
    '/v2/models/{model}/openapi.json',
    '/v2/models/{model}/generate',
    '/v2/models/{model}/versions/{version}/generate_stream',
  ]) {
    assert.ok(doc.paths[p] !== undefined, p);
  }
  assert.deepEqual(Object.keys(doc.paths['/v2/logging']).sort(), ['get', 'post']);
  assert.deepEqual(doc.paths['/v2/repository/models/{model}/load'].post.security, [{ restricted_admin_key: [] }]);
  assert.equal(doc.paths['/v2/models/{model}/infer'].post.security, undefined);
  assert.deepEqual(doc.components.securitySchemes, {
    restricted_admin_key: { type: 'apiKey', in: 'header', name: 'Admin-Key', description: '--http-restricted-api model-repository' },
  });

  const bare = JSON.parse(serverOpenApi({ name: 't', version: 'v', extensions: ['binary_tensor_data'], restricted: [] })) as Doc;
  assert.equal(bare.paths['/v2/repository/index'], undefined, 'no model_repository extension, no repository routes');
  assert.equal(bare.paths['/v2/logging'], undefined);
  assert.ok(bare.paths['/v2/models/{model}/infer'] !== undefined);
  assert.equal(bare.components.securitySchemes, undefined);
});

const SIMPLE = {
  name: 'simple',
  backend: 'onnxruntime',
  max_batch_size: 8,
  input: [
    { name: 'INPUT0', data_type: 'TYPE_INT32', dims: [16], optional: false },
    { name: 'TEXT', data_type: 'TYPE_STRING', dims: [-1], optional: true },
  ],
  output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [16] }],
} as unknown as ModelConfig;

test('model document: tensors from the config, required inputs, an example that fits', () => {
  const doc = JSON.parse(modelOpenApi(SIMPLE, '2.73.0', [])) as Doc;
  assert.deepEqual(Object.keys(doc.paths), ['/v2/models/simple/infer', '/v2/models/simple/versions/{version}/infer', '/v2/models/simple/ready']);
  const s = doc.components.schemas;
  const in0 = s.input0_INPUT0;
  assert.deepEqual(in0.properties.name, { const: 'INPUT0' });
  assert.deepEqual(in0.properties.datatype, { const: 'INT32' });
  assert.deepEqual(in0.properties.shape.prefixItems, [{ type: 'integer', minimum: 0 }, { const: 16 }]);
  assert.deepEqual(in0.properties.data.items.anyOf[0], { type: 'integer' });
  assert.deepEqual(s.input1_TEXT.properties.data.items.anyOf[0], { type: 'string' });
  assert.deepEqual(s.output0_OUTPUT0.properties.datatype, { const: 'FP32' });
  const inputs = s.InferenceRequest.properties.inputs;
  assert.equal(inputs.minItems, 1);
  assert.equal(inputs.maxItems, 2);
  assert.deepEqual(inputs.allOf, [{ contains: { properties: { name: { const: 'INPUT0' } }, required: ['name'] } }]);
  assert.deepEqual(s.InferenceRequest.properties.outputs.items.properties.name, { enum: ['OUTPUT0'] });
  const ex = s.InferenceRequest.example.inputs;
  assert.equal(ex.length, 1);
  assert.deepEqual(ex[0].shape, [1, 16]);
  assert.equal(ex[0].data.length, 16);

  const unbatched = JSON.parse(modelOpenApi({ ...SIMPLE, max_batch_size: 0 } as ModelConfig, 'v', [{ apis: ['inference'], key: 'K', value: 'v' }])) as Doc;
  assert.deepEqual(unbatched.components.schemas.input0_INPUT0.properties.shape.prefixItems, [{ const: 16 }]);
  assert.deepEqual(unbatched.paths['/v2/models/simple/infer'].post.security, [{ restricted_k: [] }]);
});
