/**
 * One gRPC inference through the central scheduler, on the gRPC thread,
 * shared by ModelInfer and ModelStreamInfer: resolve the model → decode (infer-codec.ts) → validate
 * (validate.ts, as HTTP) → copy inputs into the arena → route() … each
 * scheduler response → build the ModelInferResponse from arena views → hand
 * it to the caller, who encodes it synchronously → free the outputs (and the
 * inputs after the final response).
 */
import type { ErrorInfo } from '../../core/errors';
import { GRPC_STATUS, ServerError, toErrorInfo } from '../../core/errors';
import { nowNs } from '../../core/clock';
import type { InferResponse } from '../../core/request';
import { admitRequest, releaseInputs, releaseOutputs } from '../../request/admit-request';
import { writeShmOutputs } from '../../request/shm-regions';
import { validateRequest } from '../../request/validate';
import type { GrpcContext } from './grpc-context';
import { SHUTTING_DOWN } from './grpc-context';
import { resolveModel } from './health-handlers';
import { buildInferResponse, decodeModelInferRequest } from './infer-codec';
import type { ModelInferRequestMsg, ModelInferResponseOut } from './proto-types';

const INT32_MAX = 2147483647;

export type InferResult =
  | { ok: true; response: ModelInferResponseOut; final: boolean }
  | { ok: false; error: ErrorInfo; final: boolean };

export interface StartedInfer {
  decoupled: boolean;
  enableEmptyFinalResponse: boolean;
  modelName: string;
  modelVersion: string;
}

/**
 * Admits the request or throws its error (lookup, decode, validation,
 * arena). `onResult` runs once per scheduler response and must finish with
 * the response's bytes before it returns: they are freed right after. It
 * may run before startInfer returns (a request refused by the scheduler).
 */
export function startInfer(
  ctx: GrpcContext,
  msg: ModelInferRequestMsg,
  allowDecoupled: boolean,
  onResult: (result: InferResult, info: StartedInfer) => void,
  client?: string,
): StartedInfer {
  const arrivalNs = nowNs();
  if (ctx.stopping()) throw new ServerError('UNAVAILABLE', SHUTTING_DOWN);
  // While the server stops, inferences are served until its grace period ends
  // and the thread's stop begins (server-stop.ts): ctx.stopping() above.
  const snapshot = ctx.snapshot();
  const { view, version, latest } = resolveModel(snapshot, msg.model_name, msg.model_version);
  const plan = view.plan;
  if (!plan) throw new ServerError('UNAVAILABLE', `Request for unknown model: '${view.name}' version ${version} is not at ready state`);
  if (plan.decoupled && !allowDecoupled) {
    throw new ServerError('UNSUPPORTED', "ModelInfer RPC doesn't support models with decoupled transaction policy");
  }
  const { decoded, enableEmptyFinalResponse } = decodeModelInferRequest(msg, view.name, snapshot.shmRegions);
  const { batchSize } = validateRequest(plan, decoded);
  const request = admitRequest(ctx.arena, decoded, { model: view.name, version, latest, batchSize, arrivalNs });
  if (client !== undefined) request.client = client;
  const info: StartedInfer = { decoupled: plan.decoupled, enableEmptyFinalResponse, modelName: view.name, modelVersion: String(version) };
  let done = false;

  ctx.route(request, (response: InferResponse) => {
    if (done) {
      releaseOutputs(ctx.arena, response.outputs);
      return;
    }
    if (response.final) done = true;
    // The route wrote the version it chose at enqueue (a `latest` request may run on a newer one).
    info.modelVersion = String(request.version);
    try {
      onResult(toResult(response), info);
    } finally {
      releaseOutputs(ctx.arena, response.outputs);
      if (response.final) releaseInputs(ctx.arena, request.inputs);
    }
  });

  function toResult(response: InferResponse): InferResult {
    if (response.error) return { ok: false, error: response.error, final: response.final };
    try {
      let total = 0;
      for (const o of response.outputs) total += o.byteSize;
      if (total > INT32_MAX) {
        throw new ServerError('INVALID_ARG', `Response has byte size ${total} which exceeds gRPC's byte size limit ${INT32_MAX}.`);
      }
      const outputs = response.outputs.map((o) => ({ name: o.name, datatype: o.datatype, shape: o.shape, data: ctx.arena.bytes(o.offset, o.byteSize) }));
      writeShmOutputs(outputs, decoded.outputs);
      const built = buildInferResponse({
        id: decoded.id,
        modelName: view.name,
        modelVersion: info.modelVersion,
        parameters: response.parameters,
        outputs,
        requested: decoded.outputs,
        batched: plan!.maxBatchSize > 0,
        labels: (name) => view.labels[name],
      });
      return { ok: true, response: built, final: response.final };
    } catch (err) {
      return { ok: false, error: toErrorInfo(err), final: response.final };
    }
  }
  return info;
}

/**
 * --log-access: reports a request startInfer (or the restricted-API check)
 * refused, with the gRPC status its error maps to. A no-op while the log is off.
 */
export function reportRefused(ctx: GrpcContext, client: string | undefined, msg: ModelInferRequestMsg, err: unknown): void {
  if (ctx.access === undefined || client === undefined) return;
  let inBytes = 0;
  for (const c of msg.raw_input_contents ?? []) inBytes += c.byteLength;
  ctx.access({
    protocol: 'GRPC', client, model: msg.model_name, version: msg.model_version ?? '',
    status: GRPC_STATUS[toErrorInfo(err).code], inBytes, id: msg.id ?? '',
  });
}
