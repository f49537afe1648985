/**
 * The KServe v2 inference request and response bodies (protocol.md §1.4) as
 * JSON schemas, whatever the model: the server document's (openapi.ts).
 * model-openapi.ts narrows them to one model's tensors.
 */
import type { Json } from './openapi-parts';

export const PARAMETERS_SCHEMA: Json = {
  type: 'object',
  additionalProperties: { type: ['string', 'number', 'integer', 'boolean'] },
};

/** Tensor data: flat (row-major) or nested arrays of numbers, booleans or strings (BYTES). */
export const DATA_SCHEMA: Json = {
  type: 'array',
  items: { anyOf: [{ type: ['number', 'boolean', 'string'] }, { type: 'array' }] },
};

export const INFER_REQUEST_SCHEMA: Json = {
  type: 'object',
  required: ['inputs'],
  properties: {
    id: { type: 'string' },
    parameters: PARAMETERS_SCHEMA,
    inputs: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'shape', 'datatype'],
        properties: {
          name: { type: 'string' },
          shape: { type: 'array', items: { type: 'integer', minimum: 0 } },
          datatype: { type: 'string' },
          parameters: PARAMETERS_SCHEMA,
          data: DATA_SCHEMA,
        },
      },
    },
    outputs: {
      type: 'array',
      items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, parameters: PARAMETERS_SCHEMA } },
    },
  },
};

export const INFER_RESPONSE_SCHEMA: Json = {
  type: 'object',
  required: ['model_name', 'outputs'],
  properties: {
    model_name: { type: 'string' },
    model_version: { type: 'string' },
    id: { type: 'string' },
    parameters: PARAMETERS_SCHEMA,
    outputs: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'shape', 'datatype'],
        properties: {
          name: { type: 'string' },
          shape: { type: 'array', items: { type: 'integer' } },
          datatype: { type: 'string' },
          parameters: PARAMETERS_SCHEMA,
          data: DATA_SCHEMA,
        },
      },
    },
  },
};
