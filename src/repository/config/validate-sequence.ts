/**
 * Sequence-batching checks with Triton's texts: control inputs (START, END,
 * READY as boolean controls, CORRID as a typed control), the oldest
 * strategy's preferred sizes and the direct strategy's slot utilisation.
 */
import { ServerError } from '../../core/errors';
import type { ModelConfig } from '../../core/model-config';

interface Control {
  kind: string;
  int32_false_true: number[];
  fp32_false_true: number[];
  bool_false_true: boolean[];
  data_type: string;
}

interface ControlInput {
  name: string;
  control: Control[];
}

const invalid = (msg: string): ServerError => new ServerError('INVALID_ARG', msg);
const CORRID_TYPES = new Set(['TYPE_UINT64', 'TYPE_INT64', 'TYPE_UINT32', 'TYPE_INT32', 'TYPE_STRING']);

export function validateSequenceBatching(config: ModelConfig): void {
  const m = config.name;
  const sb = config.sequence_batching as Record<string, unknown>;
  if (config.response_cache?.enable) {
    throw invalid(`Response Cache does not currently support model ${m} with sequence batching scheduler. ` + 'Please disable the response cache.');
  }
  const inputs = ((sb.control_input ?? []) as ControlInput[]).map((ci) => ({
    name: ci.name ?? '',
    control: (ci.control ?? []).map(completeControl),
  }));

  for (const kind of ['CONTROL_SEQUENCE_START', 'CONTROL_SEQUENCE_END', 'CONTROL_SEQUENCE_READY']) {
    checkControls(inputs, m, kind, true);
  }
  const corrid = checkControls(inputs, m, 'CONTROL_SEQUENCE_CORRID', false);
  if (corrid !== undefined && !CORRID_TYPES.has(corrid.data_type)) {
    throw invalid(
      `unexpected data type for control CONTROL_SEQUENCE_CORRID for ${m}. ` +
        'Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING',
    );
  }

  const oldest = sb.oldest as { preferred_batch_size?: number[] } | undefined;
  if (oldest !== undefined && oldest !== null) {
    for (const size of oldest.preferred_batch_size ?? []) {
      if (size <= 0) throw invalid(`sequence batching preferred batch size must be positive for ${m}`);
      if (size > config.max_batch_size) {
        throw invalid(`sequence batching preferred batch size must be <= max batch size for ${m}`);
      }
    }
  }
  const direct = sb.direct as { minimum_slot_utilization?: number } | undefined;
  if (direct !== undefined && direct !== null) {
    const u = direct.minimum_slot_utilization ?? 0;
    if (u < 0 || u > 1) {
      throw invalid(`sequence batching minimum slot utilization must be in range (0.0, 1.0] for ${m}`);
    }
  }
}

function completeControl(c: Partial<Control>): Control {
  return {
    kind: c.kind ?? 'CONTROL_SEQUENCE_START',
    int32_false_true: c.int32_false_true ?? [],
    fp32_false_true: c.fp32_false_true ?? [],
    bool_false_true: c.bool_false_true ?? [],
    data_type: c.data_type ?? 'TYPE_INVALID',
  };
}

/**
 * Checks the control inputs for one control kind, returning the control of
 * that kind when there is one. Boolean controls carry exactly one of the
 * `*_false_true` pairs; typed controls (CORRID) carry none.
 */
function checkControls(inputs: ControlInput[], m: string, kind: string, boolean: boolean): Control | undefined {
  const seenTensors = new Set<string>();
  let found: Control | undefined;
  for (const input of inputs) {
    if (input.name === '') throw invalid(`sequence batching control tensor must have a name for ${m}`);
    if (seenTensors.has(input.name)) {
      throw invalid(`sequence batching control tensor '${input.name}' is specified for multiple control kinds for ${m}`);
    }
    seenTensors.add(input.name);
    for (const c of input.control) {
      if (c.kind !== kind) continue;
      if (found !== undefined) throw invalid(`sequence batching specifies multiple ${kind} tensors for ${m}`);
      found = c;
      const counts = [c.int32_false_true.length, c.fp32_false_true.length, c.bool_false_true.length];
      const given = counts.filter((n) => n !== 0).length;
      if (!boolean) {
        if (given > 0) {
          throw invalid("sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or " + `'bool_false_true' for ${kind} for ${m}`);
        }
        continue;
      }
      if (given === 0) {
        throw invalid("sequence batching must specify either 'int32_false_true', 'fp32_false_true' or " + `'bool_false_true' for ${kind} for ${m}`);
      }
      if (given > 1) {
        throw invalid("sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and " + `'bool_false_true' for ${kind} for ${m}`);
      }
      const listName = ['int32_false_true', 'fp32_false_true', 'bool_false_true'][counts.findIndex((n) => n !== 0)];
      if (counts.find((n) => n !== 0) !== 2) {
        throw invalid(`sequence batching control '${listName}' must have exactly 2 entries for ${kind} for ${m}`);
      }
    }
  }
  return found;
}
