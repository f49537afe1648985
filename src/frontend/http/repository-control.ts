/**
 * The repository extension's HTTP routes on the main thread, reached through
 * the HTTP threads' control channel (http-control.ts, control-api.ts): body
 * text in, status + JSON text out, errors as Triton's bodies. The work itself
 * is repository-api.ts, shared with gRPC.
 */
import { HTTP_STATUS, ServerError, toErrorInfo } from '../../core/errors';
import { checkRepositoryName, repositoryIndex, repositoryLoad, repositoryUnload } from '../../repository/repository-api';
import type { RepositoryApiContext } from '../../repository/repository-api';
import type { ControlReply, ControlRequest } from './http-control';
import { parseIndexBody, parseLoadBody, parseUnloadBody } from './repository-body';

export function isRepositoryRoute(req: ControlRequest): boolean {
  const k = req.route.kind;
  return k === 'repository_index' || k === 'repository_load' || k === 'repository_unload';
}

export async function repositoryHttp(api: RepositoryApiContext | undefined, req: ControlRequest): Promise<ControlReply> {
  try {
    return { t: 'control_reply', id: req.id, status: 200, body: await answer(api, req) };
  } catch (err) {
    const info = toErrorInfo(err);
    return { t: 'control_reply', id: req.id, status: HTTP_STATUS[info.code], body: JSON.stringify({ error: info.message }) };
  }
}

async function answer(api: RepositoryApiContext | undefined, req: ControlRequest): Promise<string> {
  if (api === undefined) throw new ServerError('UNSUPPORTED', 'the model repository extension is not available');
  const r = req.route;
  switch (r.kind) {
    case 'repository_index': {
      // The repository name in /v2/repository/<name>/index is accepted and ignored.
      return JSON.stringify(await repositoryIndex(api, parseIndexBody(req.body).ready));
    }
    case 'repository_load':
      checkRepositoryName(r.repository);
      await repositoryLoad(api, r.model, parseLoadBody(req.body));
      return '';
    case 'repository_unload':
      checkRepositoryName(r.repository);
      await repositoryUnload(api, r.model, parseUnloadBody(req.body));
      return '';
    default:
      throw new ServerError('UNSUPPORTED', 'unknown control route');
  }
}
