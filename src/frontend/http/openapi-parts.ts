/**
 * Pieces shared by the server's OpenAPI document (openapi.ts) and a model's
 * (model-openapi.ts): operations, path parameters, the error body, and the
 * security requirement a --http-restricted-api group puts on its category.
 * Pure.
 */
import type { RestrictedGroup } from '../../cli-values';
import type { ApiCategory } from './restricted-api';

export type Json = Record<string, unknown>;

export const OPENAPI_VERSION = '3.1.0';

/** Triton's error body: every non-2xx answer of a KServe route. */
export const ERROR_SCHEMA: Json = {
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'string', description: 'What is wrong and what to do.' } },
};

export const MODEL_PARAM: Json = { name: 'model', in: 'path', required: true, schema: { type: 'string' } };
export const VERSION_PARAM: Json = { name: 'version', in: 'path', required: true, schema: { type: 'string', pattern: '^[0-9]+$' } };

/** The security scheme's name of a group: one per header key. */
function schemeName(g: RestrictedGroup): string {
  return `restricted_${g.key.toLowerCase().replace(/[^a-z0-9]+/g, '_')}`;
}

/** components.securitySchemes of the groups (apiKey in a header), or undefined when none. */
export function securitySchemes(groups: readonly RestrictedGroup[]): Json | undefined {
  if (groups.length === 0) return undefined;
  const out: Json = {};
  for (const g of groups) {
    out[schemeName(g)] = { type: 'apiKey', in: 'header', name: g.key, description: `--http-restricted-api ${g.apis.join(',')}` };
  }
  return out;
}

export interface OperationSpec {
  summary: string;
  tag: string;
  category: ApiCategory;
  /** JSON request body schema (POST). */
  body?: Json;
  bodyRequired?: boolean;
  /** 200 body: a JSON schema, 'empty' (health: the status is the answer), 'text' (Prometheus text) or 'events' (Server-Sent Events, generate_stream). */
  ok: Json | 'empty' | 'text' | 'events';
  params?: Json[];
}

/** One OpenAPI operation object. */
export function operation(o: OperationSpec, groups: readonly RestrictedGroup[]): Json {
  const ok =
    o.ok === 'empty'
      ? { description: 'Yes (any other status: no).' }
      : o.ok === 'text'
        ? { description: 'OK', content: { 'text/plain': { schema: { type: 'string' } } } }
        : o.ok === 'events'
          ? {
              description: 'One `data: {...}` event per response of the model (an error as `data: {"error": ...}`)',
              content: { 'text/event-stream': { schema: { type: 'string' } } },
            }
          : { description: 'OK', content: { 'application/json': { schema: o.ok } } };
  const op: Json = {
    summary: o.summary,
    tags: [o.tag],
    responses: {
      200: ok,
      default: { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
    },
  };
  if (o.params !== undefined && o.params.length > 0) op.parameters = o.params;
  if (o.body !== undefined) {
    op.requestBody = { required: o.bodyRequired !== false, content: { 'application/json': { schema: o.body } } };
  }
  const group = groups.find((g) => g.apis.includes(o.category));
  if (group !== undefined) op.security = [{ [schemeName(group)]: [] }];
  return op;
}
