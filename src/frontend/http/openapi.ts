/**
 * `GET /v2/openapi.json`: an OpenAPI 3.1 description of the KServe v2 and
 * Triton extension routes this server serves (routes.ts), with the
 * --http-restricted-api headers as security schemes, so a generated client
 * or a Swagger UI can call it. A model's own request and response schemas
 * are in `/v2/models/<m>/openapi.json` (model-openapi.ts). Pure: built once
 * per HTTP thread.
 */
import type { RestrictedGroup } from '../../cli-values';
import { ERROR_SCHEMA, MODEL_PARAM, OPENAPI_VERSION, VERSION_PARAM, operation, securitySchemes, type Json, type OperationSpec } from './openapi-parts';
import { INFER_REQUEST_SCHEMA, INFER_RESPONSE_SCHEMA } from './openapi-infer-schemas';

export interface ServerDescription {
  name: string;
  version: string;
  extensions: readonly string[];
  restricted: readonly RestrictedGroup[];
}

type PathSpec = [path: string, method: 'get' | 'post', spec: OperationSpec, extension?: string];

const OBJ: Json = { type: 'object' };
const REPO_PARAM: Json = { name: 'repository', in: 'path', required: true, schema: { type: 'string' } };
const REGION_PARAM: Json = { name: 'region', in: 'path', required: true, schema: { type: 'string' } };
const M = [MODEL_PARAM];
/** A generate request or response: input (output) tensors and parameters by name, scalars or flat arrays. */
const GENERATE_BODY: Json = { type: 'object', additionalProperties: true, properties: { id: { type: 'string' }, parameters: { type: 'object' } } };
const MV = [MODEL_PARAM, VERSION_PARAM];

function paths(): PathSpec[] {
  const out: PathSpec[] = [
    ['/v2/health/live', 'get', { summary: 'Server live', tag: 'health', category: 'health', ok: 'empty' }],
    ['/v2/health/ready', 'get', { summary: 'Server ready', tag: 'health', category: 'health', ok: 'empty' }],
    ['/v2', 'get', { summary: 'Server metadata', tag: 'metadata', category: 'metadata', ok: { $ref: '#/components/schemas/ServerMetadata' } }],
    [
      '/v2/models/{model}',
      'get',
      { summary: 'Model metadata', tag: 'metadata', category: 'metadata', ok: { $ref: '#/components/schemas/ModelMetadata' }, params: M },
    ],
    [
      '/v2/models/{model}/versions/{version}',
      'get',
      { summary: 'Model version metadata', tag: 'metadata', category: 'metadata', ok: { $ref: '#/components/schemas/ModelMetadata' }, params: MV },
    ],
    ['/v2/models/{model}/ready', 'get', { summary: 'Model ready', tag: 'health', category: 'health', ok: 'empty', params: M }],
    ['/v2/models/{model}/versions/{version}/ready', 'get', { summary: 'Model version ready', tag: 'health', category: 'health', ok: 'empty', params: MV }],
    [
      '/v2/models/{model}/infer',
      'post',
      {
        summary: 'Inference (the binary tensor extension is not described here)',
        tag: 'inference',
        category: 'inference',
        body: { $ref: '#/components/schemas/InferenceRequest' },
        ok: { $ref: '#/components/schemas/InferenceResponse' },
        params: M,
      },
    ],
    [
      '/v2/models/{model}/versions/{version}/infer',
      'post',
      {
        summary: 'Inference on one version',
        tag: 'inference',
        category: 'inference',
        body: { $ref: '#/components/schemas/InferenceRequest' },
        ok: { $ref: '#/components/schemas/InferenceResponse' },
        params: MV,
      },
    ],
    [
      '/v2/models/{model}/generate',
      'post',
      {
        summary: "Generate (Triton's generate extension): keys of the body name inputs, others are parameters; exactly one response",
        tag: 'inference',
        category: 'inference',
        body: GENERATE_BODY,
        ok: GENERATE_BODY,
        params: M,
      },
    ],
    [
      '/v2/models/{model}/versions/{version}/generate',
      'post',
      { summary: 'Generate on one version', tag: 'inference', category: 'inference', body: GENERATE_BODY, ok: GENERATE_BODY, params: MV },
    ],
    [
      '/v2/models/{model}/generate_stream',
      'post',
      {
        summary: 'Generate, streamed as Server-Sent Events (one per response: decoupled models)',
        tag: 'inference',
        category: 'inference',
        body: GENERATE_BODY,
        ok: 'events',
        params: M,
      },
    ],
    [
      '/v2/models/{model}/versions/{version}/generate_stream',
      'post',
      { summary: 'Generate on one version, streamed', tag: 'inference', category: 'inference', body: GENERATE_BODY, ok: 'events', params: MV },
    ],
    [
      '/v2/models/{model}/openapi.json',
      'get',
      { summary: "This model's OpenAPI document (its inputs and outputs as schemas)", tag: 'metadata', category: 'metadata', ok: OBJ, params: M },
    ],
    ['/v2/openapi.json', 'get', { summary: 'This document', tag: 'metadata', category: 'metadata', ok: OBJ }],
    [
      '/v2/models/{model}/config',
      'get',
      { summary: 'Model configuration (as Triton prints it)', tag: 'model_configuration', category: 'model-config', ok: OBJ, params: M },
      'model_configuration',
    ],
    [
      '/v2/models/{model}/versions/{version}/config',
      'get',
      { summary: 'Model version configuration', tag: 'model_configuration', category: 'model-config', ok: OBJ, params: MV },
      'model_configuration',
    ],
    ['/v2/models/stats', 'get', { summary: 'Statistics of every model', tag: 'statistics', category: 'statistics', ok: OBJ }, 'statistics'],
    ['/v2/models/{model}/stats', 'get', { summary: 'Model statistics', tag: 'statistics', category: 'statistics', ok: OBJ, params: M }, 'statistics'],
    [
      '/v2/models/{model}/versions/{version}/stats',
      'get',
      { summary: 'Model version statistics', tag: 'statistics', category: 'statistics', ok: OBJ, params: MV },
      'statistics',
    ],
    ['/v2/trace/setting', 'get', { summary: 'Global trace settings', tag: 'trace', category: 'trace', ok: OBJ }, 'trace'],
    ['/v2/trace/setting', 'post', { summary: 'Update global trace settings', tag: 'trace', category: 'trace', body: OBJ, ok: OBJ }, 'trace'],
    ['/v2/models/{model}/trace/setting', 'get', { summary: 'Model trace settings', tag: 'trace', category: 'trace', ok: OBJ, params: M }, 'trace'],
    [
      '/v2/models/{model}/trace/setting',
      'post',
      { summary: 'Update model trace settings', tag: 'trace', category: 'trace', body: OBJ, ok: OBJ, params: M },
      'trace',
    ],
    ['/v2/logging', 'get', { summary: 'Log settings', tag: 'logging', category: 'logging', ok: OBJ }, 'logging'],
    ['/v2/logging', 'post', { summary: 'Update log settings', tag: 'logging', category: 'logging', body: OBJ, ok: OBJ }, 'logging'],
    ['/v2/nodetron/status', 'get', { summary: "nodetron: uptime, options, instance health (the console's)", tag: 'nodetron', category: 'statistics', ok: OBJ }],
    [
      '/v2/nodetron/models/{model}/log',
      'get',
      {
        summary: "nodetron: the model's last 200 log lines, each with a sequence number; ?after=<seq> for the newer ones (the console's model page)",
        tag: 'nodetron',
        category: 'logging',
        ok: OBJ,
        params: M,
      },
    ],
    [
      '/v1/models',
      'get',
      {
        summary: 'OpenAI-compatible: the models that take text_input/text_output, and the embedding models',
        tag: 'openai',
        category: 'model-repository',
        ok: OBJ,
      },
    ],
    [
      '/v1/models/{model}',
      'get',
      { summary: 'OpenAI-compatible: one model (404 model_not_found when it is not served)', tag: 'openai', category: 'model-repository', ok: OBJ, params: M },
    ],
    [
      '/v1/completions',
      'post',
      {
        summary: 'OpenAI-compatible completion (stream: true answers Server-Sent Events ended by data: [DONE])',
        tag: 'openai',
        category: 'inference',
        body: OBJ,
        ok: OBJ,
      },
    ],
    [
      '/v1/embeddings',
      'post',
      {
        summary: 'OpenAI-compatible embeddings of models with text_input → FP32 embedding (encoding_format float or base64)',
        tag: 'openai',
        category: 'inference',
        body: OBJ,
        ok: OBJ,
      },
    ],
    [
      '/v1/chat/completions',
      'post',
      {
        summary: "OpenAI-compatible chat completion (the model folder's chat template; stream: true as Server-Sent Events)",
        tag: 'openai',
        category: 'inference',
        body: OBJ,
        ok: OBJ,
      },
    ],
    [
      '/v2/nodetron/metrics',
      'get',
      { summary: 'nodetron: the Prometheus text of the metrics port, on the HTTP port', tag: 'nodetron', category: 'statistics', ok: 'text' },
    ],
  ];
  for (const prefix of ['/v2/repository', '/v2/repository/{repository}']) {
    const rp = prefix.includes('{') ? [REPO_PARAM] : [];
    out.push(
      [
        `${prefix}/index`,
        'post',
        {
          summary: 'Repository index',
          tag: 'model_repository',
          category: 'model-repository',
          body: OBJ,
          bodyRequired: false,
          ok: { type: 'array', items: OBJ },
          params: rp,
        },
        'model_repository',
      ],
      [
        `${prefix}/models/{model}/load`,
        'post',
        {
          summary: 'Load or reload a model',
          tag: 'model_repository',
          category: 'model-repository',
          body: OBJ,
          bodyRequired: false,
          ok: OBJ,
          params: [...rp, MODEL_PARAM],
        },
        'model_repository',
      ],
      [
        `${prefix}/models/{model}/unload`,
        'post',
        {
          summary: 'Unload a model',
          tag: 'model_repository',
          category: 'model-repository',
          body: OBJ,
          bodyRequired: false,
          ok: OBJ,
          params: [...rp, MODEL_PARAM],
        },
        'model_repository',
      ],
    );
  }
  for (const [flavor, ext] of [
    ['systemsharedmemory', 'system_shared_memory'],
    ['cudasharedmemory', 'cuda_shared_memory'],
  ]) {
    const tag = ext;
    out.push(
      [`/v2/${flavor}/status`, 'get', { summary: 'Registered regions', tag, category: 'shared-memory', ok: { type: 'array', items: OBJ } }, ext],
      [
        `/v2/${flavor}/region/{region}/status`,
        'get',
        { summary: 'One region', tag, category: 'shared-memory', ok: { type: 'array', items: OBJ }, params: [REGION_PARAM] },
        ext,
      ],
      [
        `/v2/${flavor}/region/{region}/register`,
        'post',
        { summary: 'Register a region', tag, category: 'shared-memory', body: OBJ, ok: 'empty', params: [REGION_PARAM] },
        ext,
      ],
      [
        `/v2/${flavor}/region/{region}/unregister`,
        'post',
        { summary: 'Unregister a region', tag, category: 'shared-memory', ok: 'empty', params: [REGION_PARAM] },
        ext,
      ],
      [`/v2/${flavor}/unregister`, 'post', { summary: 'Unregister every region', tag, category: 'shared-memory', ok: 'empty' }, ext],
    );
  }
  return out;
}

/** The document, as JSON text. */
export function serverOpenApi(d: ServerDescription): string {
  const doc: Json = {};
  for (const [path, method, spec, ext] of paths()) {
    if (ext !== undefined && !d.extensions.includes(ext)) continue;
    const item = (doc[path] ??= {}) as Json;
    item[method] = operation(spec, d.restricted);
  }
  const components: Json = {
    schemas: {
      Error: ERROR_SCHEMA,
      ServerMetadata: {
        type: 'object',
        required: ['name', 'version', 'extensions'],
        properties: { name: { type: 'string' }, version: { type: 'string' }, extensions: { type: 'array', items: { type: 'string' } } },
      },
      ModelMetadata: {
        type: 'object',
        required: ['name', 'versions', 'platform', 'inputs', 'outputs'],
        properties: {
          name: { type: 'string' },
          versions: { type: 'array', items: { type: 'string' } },
          platform: { type: 'string' },
          inputs: { type: 'array', items: { $ref: '#/components/schemas/TensorMetadata' } },
          outputs: { type: 'array', items: { $ref: '#/components/schemas/TensorMetadata' } },
        },
      },
      TensorMetadata: {
        type: 'object',
        required: ['name', 'datatype', 'shape'],
        properties: { name: { type: 'string' }, datatype: { type: 'string' }, shape: { type: 'array', items: { type: 'integer' } } },
      },
      InferenceRequest: INFER_REQUEST_SCHEMA,
      InferenceResponse: INFER_RESPONSE_SCHEMA,
    },
  };
  const schemes = securitySchemes(d.restricted);
  if (schemes !== undefined) components.securitySchemes = schemes;
  return JSON.stringify({
    openapi: OPENAPI_VERSION,
    info: {
      title: `${d.name} (KServe v2 inference protocol with Triton's extensions)`,
      version: d.version,
      description: `Extensions: ${d.extensions.join(', ')}.`,
    },
    paths: doc,
    components,
  });
}
