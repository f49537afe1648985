/**
 * Instance side of the identity backend, inside an instance worker thread:
 * each request's requested outputs (all of the config's when it names none)
 * are copies of its inputs, OUTPUT<i> of INPUT<i>, in blocks of their own;
 * a requested output whose input the request lacks fails that request with
 * Triton's text. Like Triton's, each response carries the parameters
 * param0..param2, and an execution first sleeps `execute_delay_ms`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ServerError, toErrorInfo } from '../../core/errors';
import { nowNs } from '../../core/clock';
import type { InferRequest, InferResponse, TensorRef } from '../../core/request';
import type { Arena } from '../../dataplane/arena';
import type { BackendInstance, ComputeMarks, CreateBackendInstance } from '../backend';
import { identityDelay } from './identity-config';

/** The parameters Triton's identity backend attaches to every response. */
const PARAMETERS = { param0: 'an example string parameter', param1: 42, param2: false };

export const createBackendInstance: CreateBackendInstance = async (args) => {
  if (args.kind !== 'KIND_CPU') throw new ServerError('INVALID_ARG', "'identity' backend only supports CPU instances");
  const creation = identityDelay(args.config, 'creation_delay_sec');
  if (creation > 0) await sleep(creation * 1000);
  return new IdentityInstance(
    args.config.output.map((o) => o.name),
    identityDelay(args.config, 'execute_delay_ms'),
  );
};

class IdentityInstance implements BackendInstance {
  constructor(
    private readonly outputNames: readonly string[],
    private readonly delayMs: number,
  ) {}

  async execute(requests: InferRequest[], arena: Arena, marks?: ComputeMarks): Promise<InferResponse[]> {
    if (this.delayMs > 0) await sleep(this.delayMs);
    if (marks) marks.inputEndNs = nowNs();
    const responses = requests.map((r) => this.answer(r, arena));
    if (marks) marks.inferEndNs = nowNs();
    return responses;
  }

  async finalize(): Promise<void> {
    // nothing held
  }

  private answer(r: InferRequest, arena: Arena): InferResponse {
    const outputs: TensorRef[] = [];
    try {
      for (const name of r.requestedOutputs ?? this.outputNames) {
        const inputName = `INPUT${name.slice('OUTPUT'.length)}`;
        const input = r.inputs.find((t) => t.name === inputName);
        if (input === undefined) throw new ServerError('UNSUPPORTED', `failed to get input '${inputName}'`);
        const { offset, gen } = arena.alloc(input.byteSize);
        arena.bytes(offset, input.byteSize).set(arena.bytes(input.offset, input.byteSize));
        outputs.push({ name, datatype: input.datatype, shape: [...input.shape], offset, gen, byteSize: input.byteSize });
      }
    } catch (err) {
      for (const o of outputs) arena.free(o);
      return { outputs: [], error: toErrorInfo(err), final: true };
    }
    return { outputs, final: true, parameters: { ...PARAMETERS } };
  }
}
