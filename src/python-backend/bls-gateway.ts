/**
 * Where requests made inside the server (BLS from Python models) enter it:
 * the same model lookup and validation a frontend does (Triton's texts),
 * then `route` into the target's scheduler. Runs on the main thread.
 */
import type { CancelInfer, GatewayRequest, InferGateway } from '../backends/backend';
import { ServerError, toErrorInfo } from '../core/errors';
import type { DecodedRequest } from '../request/decoded-request';
import { lookupModel } from '../request/model-lookup';
import type { ServerSnapshot } from '../request/server-snapshot';
import { validateRequest } from '../request/validate';
import type { Arena } from '../dataplane/arena';
import { nowNs } from '../core/clock';
import type { InferRequest, Respond } from '../core/request';

export class BlsGateway implements InferGateway {
  private cached: ServerSnapshot['models'] | undefined;

  constructor(
    private readonly arena: Arena,
    private readonly models: () => ServerSnapshot['models'],
    private readonly route: (request: InferRequest, respond: Respond) => void,
    /** Where a routed request is cancelled (server.ts: the repository's cancel). */
    private readonly cancel: (request: InferRequest) => void,
  ) {}

  /** Model states changed: look them up again on the next request. */
  invalidate(): void {
    this.cached = undefined;
  }

  infer(req: GatewayRequest, respond: Respond): CancelInfer {
    let request: InferRequest;
    try {
      request = this.admit(req);
    } catch (err) {
      respond({ outputs: [], error: toErrorInfo(err), final: true });
      return () => undefined;
    }
    let finished = false;
    this.route(request, (response) => {
      if (response.final) finished = true;
      respond(response);
    });
    return () => {
      if (!finished) this.cancel(request);
    };
  }

  private admit(req: GatewayRequest): InferRequest {
    this.cached ??= this.models();
    let resolved;
    try {
      resolved = lookupModel(
        { live: true, ready: true, exiting: false, models: this.cached },
        req.model,
        req.version > 0 ? String(req.version) : undefined,
        'loaded',
      );
    } catch (err) {
      const e = toErrorInfo(err);
      throw new ServerError(e.code, `Model ${req.model} - Error when running inference: ${e.message}`);
    }
    const plan = resolved.view.plan;
    if (plan === undefined) throw new ServerError('UNAVAILABLE', `Failed for execute the inference request. Model '${req.model}' is not ready.`);
    if (plan.decoupled && !req.decoupled) {
      throw new ServerError(
        'INVALID_ARG',
        `Model ${req.model} is using the decoupled. The current BLS request call doesn't support models using the ` +
          "decoupled transaction policy. Please use 'decoupled=True' argument to the 'exec' or 'async_exec' calls for " +
          'decoupled models.',
      );
    }
    const decoded: DecodedRequest = {
      id: req.id,
      inputs: req.inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape, data: this.arena.bytes(t.offset, t.byteSize), parameters: {} })),
      outputs: req.requestedOutputs === null ? null : req.requestedOutputs.map((name) => ({ name, binary: true, classification: 0, parameters: {} })),
      parameters: req.parameters,
      binaryDataOutput: true,
    };
    const { batchSize } = validateRequest(plan, decoded);
    return {
      id: req.id,
      model: req.model,
      version: resolved.version,
      latest: resolved.latest,
      batchSize: plan.maxBatchSize > 0 ? batchSize : 1,
      inputs: req.inputs,
      requestedOutputs: req.requestedOutputs,
      parameters: req.parameters,
      arrivalNs: nowNs(),
    };
  }
}
