/**
 * `GET /v2/models/<m>[/versions/<v>]/openapi.json`: one model's inference
 * as OpenAPI 3.1, derived from its config: the request's inputs (name,
 * datatype, rank and fixed dimensions, required unless `optional`), the
 * outputs it can ask for, the response's outputs, and an example request
 * (zeros, or "" for BYTES; -1 dimensions and the batch as 1). Pure.
 */
import type { RestrictedGroup } from '../../cli-values';
import { configTypeToDataType } from '../../core/datatypes';
import type { ModelConfig } from '../../core/model-config';
import { ERROR_SCHEMA, OPENAPI_VERSION, VERSION_PARAM, operation, securitySchemes, type Json } from './openapi-parts';
import { PARAMETERS_SCHEMA } from './openapi-infer-schemas';

interface Tensor {
  name: string;
  data_type: string;
  dims: number[];
  optional?: boolean;
}

/** The JSON type of one element of a datatype in the JSON tensor format. */
function elementSchema(datatype: string): Json {
  if (datatype === 'BYTES') return { type: 'string' };
  if (datatype === 'BOOL') return { type: 'boolean' };
  if (datatype.startsWith('FP') || datatype === 'BF16') return { type: 'number' };
  return { type: 'integer' };
}

/** The shape as the wire carries it: the batch dimension first for a batching model. */
function wireShape(t: Tensor, batched: boolean): number[] {
  return batched ? [-1, ...(t.dims ?? [])] : [...(t.dims ?? [])];
}

function shapeSchema(shape: number[]): Json {
  return {
    type: 'array',
    minItems: shape.length,
    maxItems: shape.length,
    prefixItems: shape.map((d) => (d < 0 ? { type: 'integer', minimum: 0 } : { const: d })),
    description: `[${shape.join(', ')}] (-1: any size)`,
  };
}

function tensorSchema(t: Tensor, batched: boolean): Json {
  const datatype = configTypeToDataType(t.data_type);
  return {
    type: 'object',
    required: ['name', 'datatype', 'shape', 'data'],
    properties: {
      name: { const: t.name },
      datatype: { const: datatype },
      shape: shapeSchema(wireShape(t, batched)),
      parameters: PARAMETERS_SCHEMA,
      data: { type: 'array', items: { anyOf: [elementSchema(datatype), { type: 'array' }] }, description: 'Row-major, flat or nested.' },
    },
  };
}

function example(t: Tensor, batched: boolean): Json {
  const shape = wireShape(t, batched).map((d) => (d < 0 ? 1 : d));
  const datatype = configTypeToDataType(t.data_type);
  const count = shape.reduce((a, b) => a * b, 1);
  const zero = datatype === 'BYTES' ? '' : datatype === 'BOOL' ? false : 0;
  return { name: t.name, datatype, shape, data: new Array<unknown>(count).fill(zero) };
}

/** The document, as JSON text. `name` is the model's name as served. */
export function modelOpenApi(config: ModelConfig, serverVersion: string, restricted: readonly RestrictedGroup[]): string {
  const batched = (config.max_batch_size ?? 0) > 0;
  const inputs = (config.input ?? []) as Tensor[];
  const outputs = (config.output ?? []) as Tensor[];
  const request: Json = {
    type: 'object',
    required: ['inputs'],
    properties: {
      id: { type: 'string' },
      parameters: PARAMETERS_SCHEMA,
      inputs: {
        type: 'array',
        minItems: inputs.filter((t) => t.optional !== true).length,
        maxItems: inputs.length,
        items: { oneOf: inputs.map((t, i) => ({ $ref: `#/components/schemas/${key('input', i, t)}` })) },
        // Every input that is not optional must be there.
        allOf: inputs.filter((t) => t.optional !== true).map((t) => ({ contains: { properties: { name: { const: t.name } }, required: ['name'] } })),
      },
      outputs: {
        type: 'array',
        items: {
          type: 'object',
          required: ['name'],
          properties: { name: { enum: outputs.map((t) => t.name) }, parameters: PARAMETERS_SCHEMA },
        },
      },
    },
    example: { inputs: inputs.filter((t) => t.optional !== true).map((t) => example(t, batched)) },
  };
  const response: Json = {
    type: 'object',
    required: ['model_name', 'outputs'],
    properties: {
      model_name: { const: config.name },
      model_version: { type: 'string' },
      id: { type: 'string' },
      parameters: PARAMETERS_SCHEMA,
      outputs: { type: 'array', items: { oneOf: outputs.map((t, i) => ({ $ref: `#/components/schemas/${key('output', i, t)}` })) } },
    },
  };
  const schemas: Json = { Error: ERROR_SCHEMA, InferenceRequest: request, InferenceResponse: response };
  inputs.forEach((t, i) => {
    schemas[key('input', i, t)] = tensorSchema(t, batched);
  });
  outputs.forEach((t, i) => {
    schemas[key('output', i, t)] = tensorSchema(t, batched);
  });
  const base = `/v2/models/${encodeURIComponent(config.name)}`;
  const infer = (params: Json[]): Json =>
    operation(
      {
        summary: `Inference on ${config.name}`,
        tag: config.name,
        category: 'inference',
        body: { $ref: '#/components/schemas/InferenceRequest' },
        ok: { $ref: '#/components/schemas/InferenceResponse' },
        params,
      },
      restricted,
    );
  const components: Json = { schemas };
  const schemes = securitySchemes(restricted);
  if (schemes !== undefined) components.securitySchemes = schemes;
  return JSON.stringify({
    openapi: OPENAPI_VERSION,
    info: {
      title: `${config.name}: inference`,
      version: serverVersion,
      description: `Backend ${config.backend ?? config.platform ?? ''}; max_batch_size ${config.max_batch_size ?? 0}. From the model's config.`,
    },
    paths: {
      [`${base}/infer`]: { post: infer([]) },
      [`${base}/versions/{version}/infer`]: { post: infer([VERSION_PARAM]) },
      [`${base}/ready`]: { get: operation({ summary: 'Ready', tag: config.name, category: 'health', ok: 'empty' }, restricted) },
    },
    components,
  });
}

/** A tensor's component key: its place (unique) and its name in the characters a key allows. */
function key(side: 'input' | 'output', index: number, t: Tensor): string {
  return `${side}${index}_${t.name.replace(/[^A-Za-z0-9._-]/g, '_')}`;
}
