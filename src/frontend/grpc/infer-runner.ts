/**
 * One gRPC inference through the central scheduler, on the gRPC thread,
 * shared by ModelInfer and ModelStreamInfer: resolve the model → decode (infer-codec.ts) → validate
 * (validate.ts, as HTTP) → copy inputs into the arena → route() … each
 * scheduler response → build the ModelInferResponse from arena views → hand
 * it to the caller, who encodes it synchronously → free the outputs (and the
 * inputs after the final response).
 */
import type * as grpc from '@grpc/grpc-js';
import type { ErrorInfo } from '../../core/errors';
import { GRPC_STATUS, ServerError, toErrorInfo } from '../../core/errors';
import { nowNs } from '../../core/clock';
import type { InferResponse } from '../../core/request';
import { admitRequest, releaseInputs, releaseOutputs } from '../../request/admit-request';
import { writeShmOutputs } from '../../request/shm-regions';
import { validateRequest } from '../../request/validate';
import { forwardHeaders } from '../../request/header-forward';
import type { GrpcContext } from './grpc-context';
import { SHUTTING_DOWN } from './grpc-context';
import { resolveModel } from './health-handlers';
import { buildInferResponse, decodeModelInferRequest } from './infer-codec';
import { MalformedRequest } from './malformed-request';
import type { ModelInferRequestMsg, ModelInferResponseOut } from './proto-types';

const INT32_MAX = 2147483647;

/** Text metadata entries (binary `-bin` keys are not forwarded; a repeated key's values joined with ", "). */
function* textMetadata(metadata: grpc.Metadata): Iterable<[string, string]> {
  for (const [key, value] of Object.entries(metadata.toJSON())) {
    if (key.endsWith('-bin')) continue;
    yield [key, value.map(String).join(', ')];
  }
}

export type InferResult = { ok: true; response: ModelInferResponseOut; final: boolean } | { ok: false; error: ErrorInfo; final: boolean };

export interface StartedInfer {
  /** The call was cancelled or its deadline passed: main cancels the request (it still ends with its final result). */
  cancel(): void;
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
  /** The call's metadata (a stream's, for each of its requests): what --grpc-header-forward-pattern forwards. */
  metadata?: grpc.Metadata,
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
  if (ctx.forward !== undefined && metadata !== undefined) forwardHeaders(ctx.forward, textMetadata(metadata), decoded.parameters);
  const { batchSize } = validateRequest(plan, decoded);
  const request = admitRequest(ctx.arena, decoded, { model: view.name, version, latest, batchSize, arrivalNs });
  if (client !== undefined) request.client = client;
  const info: StartedInfer = {
    cancel: () => undefined,
    decoupled: plan.decoupled,
    enableEmptyFinalResponse,
    modelName: view.name,
    modelVersion: String(version),
  };
  let done = false;

  info.cancel = ctx.route(request, (response: InferResponse) => {
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
 * --log-access: reports a request startInfer (or the restricted-API check,
 * or call-guard.ts) refused, with the gRPC status its error maps to (or
 * `status`, for a refusal that is no ServerError). A no-op while the log is off.
 */
export function reportRefused(
  ctx: GrpcContext,
  client: string | undefined,
  msg: ModelInferRequestMsg | MalformedRequest | undefined,
  err: unknown,
  status?: number,
): void {
  if (ctx.access === undefined || client === undefined) return;
  let inBytes = 0;
  let model = '';
  let version = '';
  let id = '';
  if (msg instanceof MalformedRequest) {
    ({ model, id } = msg);
    inBytes = msg.byteLength;
  } else if (msg !== undefined) {
    for (const c of msg.raw_input_contents ?? []) inBytes += c.byteLength;
    model = msg.model_name;
    version = msg.model_version ?? '';
    id = msg.id ?? '';
  }
  ctx.access({ protocol: 'GRPC', client, model, version, status: status ?? GRPC_STATUS[toErrorInfo(err).code], inBytes, id });
}
