/**
 * --http-restricted-api (protocol.md §1.1, §6.2): each route belongs to one
 * API category; a request in a restricted category must carry the group's
 * header with the exact value, else 403 `This API is restricted, expecting
 * header '<key>'`. The check runs before the method check, so the category is
 * found from the path whatever the method. Pure, so it is table-tested.
 */
import type { RestrictedGroup } from '../../cli-values';
import { matchRoute } from './routes';
import type { Route } from './routes';

export type ApiCategory = 'health' | 'metadata' | 'inference' | 'shared-memory' | 'model-config' | 'model-repository' | 'statistics' | 'trace' | 'logging';

export function categoryOf(route: Route): ApiCategory | undefined {
  switch (route.kind) {
    case 'health_live':
    case 'health_ready':
    case 'model_ready':
      return 'health';
    case 'server_metadata':
    case 'model_metadata':
    case 'openapi':
    case 'model_openapi':
      return 'metadata';
    case 'infer':
    case 'generate':
    case 'openai_completions':
    case 'openai_embeddings':
      return 'inference';
    case 'model_config':
      return 'model-config';
    case 'model_stats':
    case 'nodetron_metrics':
    case 'nodetron_status':
      return 'statistics';
    case 'model_trace':
    case 'trace':
      return 'trace';
    case 'logging':
    case 'nodetron_model_log':
      return 'logging';
    case 'repository_index':
    case 'repository_load':
    case 'repository_unload':
    // As Triton's OpenAI frontend files its model list.
    case 'openai_models':
      return 'model-repository';
    case 'shm':
      return 'shared-memory';
    default:
      return undefined;
  }
}

/** Category of a URL's path whatever the method (undefined for unknown paths). */
export function categoryOfUrl(url: string): ApiCategory | undefined {
  for (const method of ['GET', 'POST']) {
    const c = categoryOf(matchRoute(method, url));
    if (c !== undefined) return c;
  }
  return undefined;
}

/**
 * The 403 message for a request, or undefined when it may pass.
 * `header(name)` returns the value of a request header ('' when absent);
 * names are asked in lower case (HTTP header names are case-insensitive).
 */
export function restrictedError(groups: readonly RestrictedGroup[], url: string, header: (name: string) => string): string | undefined {
  if (groups.length === 0) return undefined;
  const category = categoryOfUrl(url);
  if (category === undefined) return undefined;
  const group = groups.find((g) => g.apis.includes(category));
  if (group === undefined) return undefined;
  return header(group.key.toLowerCase()) === group.value ? undefined : `This API is restricted, expecting header '${group.key}'`;
}

/**
 * --openai-restricted-api on --openai-port (Triton's OpenAI frontend's
 * categories): the completions are `inference`, `/v1/embeddings`
 * `embedding`, `/v1/models` `model-repository`, `/health/ready` `health`. The message, or undefined
 * when the request may pass.
 */
export function openaiRestricted(groups: readonly RestrictedGroup[], route: Route, health: boolean, header: (name: string) => string): string | undefined {
  if (groups.length === 0) return undefined;
  const category = health
    ? 'health'
    : route.kind === 'openai_completions'
      ? 'inference'
      : route.kind === 'openai_embeddings'
        ? 'embedding'
        : route.kind === 'openai_models'
          ? 'model-repository'
          : undefined;
  if (category === undefined) return undefined;
  const group = groups.find((g) => g.apis.includes(category));
  if (group === undefined) return undefined;
  return header(group.key.toLowerCase()) === group.value ? undefined : `This API is restricted, expecting header '${group.key}'`;
}
